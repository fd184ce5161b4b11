"""The bare all_reduce loop and torchscale comm's own row, taking turns in one process group.

Run under torchrun (benchmarks/comm_overhead.py starts it). Why: at 1 MiB on a shared 2-core
machine a whole torchrun's window scatters by 2x from one launch to the next, for the bare loop
alike, so process-to-process comparisons cannot settle a few per cent. Here both measurements run
on the same ranks, buffers warm, in rounds that alternate which goes first (A B, B A, ...), and
each round's ratio pairs two windows taken a fraction of a second apart. A 1 MiB window there
still scatters 0.7-1.3x between neighbours (IQR of the ratio), so it takes hundreds of rounds:
they go on for `--seconds`, in pairs, so each order runs equally often (whichever runs second in
a round measured about 3 % faster on that machine).

- bare: warm-up, barrier, ITERS `dist.all_reduce` calls, window / ITERS averaged over the ranks
  (benchmarks/bare_collective_loop.py's `time_per_op`).
- torchscale: `torchscale.rank.programs.comm._row`, the function `torchscale comm` runs
per size: its
  buffers, warm-up, settle, window, the gather of every rank's timing, and the row's algbw
  computed by torchscale's formulas.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import time
from pathlib import Path

import torch
import torch.distributed as dist

# torchrun puts this script's directory first on sys.path
from bare_collective_loop import init, time_per_op

from torchscale.contracts.comm_spec import CommSpec
from torchscale.rank.programs.comm import _row
from torchscale.rank.worker.harness import Group


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bytes", type=int, required=True)
    parser.add_argument("--warmup", type=int, required=True)
    parser.add_argument("--iters", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True, help="rounds go on this long")
    parser.add_argument("--max-rounds", type=int, default=2000)
    parser.add_argument("--out", required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    device = init(args.device)
    spec = CommSpec(
        run_id="interleaved",
        ops=["all_reduce"],
        sizes=[args.bytes],
        dtype="float32",
        warmup_iters=args.warmup,
        iters=args.iters,
        check=False,
        device=args.device,
        backend="nccl" if args.device == "cuda" else "gloo",
        result_path=os.devnull,
        progress_path=os.devnull,
    )
    host = socket.gethostname()
    rounds: list[dict[str, float]] = []
    started = time.perf_counter()
    go_on = torch.ones(1, dtype=torch.int32, device=device)
    for i in range(args.max_rounds):
        if i % 2 == 0 and i > 0:
            # rank 0's clock decides, after every pair (each order equally often)
            go_on.fill_(int(time.perf_counter() - started < args.seconds))
            dist.broadcast(go_on, 0)
            if not go_on.item():
                break
        order = ("bare", "torchscale") if i % 2 == 0 else ("torchscale", "bare")
        got: dict[str, float] = {}
        for which in order:
            if which == "bare":
                time_s = time_per_op(args.bytes, args.warmup, args.iters, device)
                got[which] = args.bytes / time_s / 1e9
            else:
                row = _row("all_reduce", args.bytes, spec, Group(device), host, {})
                got[which] = float(row.algbw_gbps) if row is not None else float("nan")
        rounds.append(got)
    if dist.get_rank() == 0:
        Path(args.out).write_text(json.dumps({"rounds": rounds}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
