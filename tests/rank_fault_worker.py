"""Test-only torchrun worker for a rank's error path (torchscale/rank/worker/harness.py) and its
identity record (torchscale/rank/worker/diagnostics.py).

Run under torchrun as `python -m tests.rank_fault_worker --raise-on R|all [--outstanding]
[--torn-error-file-on T] [--exit-grace-s S] [--marker M]` (the tests put the repo root on
PYTHONPATH; M, unused, lets a test find its ranks). Like the benchmark worker it dies with
torchrun, installs its diagnostics (pid, stack dumps, identity) and joins a gloo group through
`harness.process_group` under `record_errors`. Then the raising rank(s) raise
torch.OutOfMemoryError naming their global rank, while every other rank sits in all_reduce
waiting for them. `--outstanding`: the raising rank first starts a receive from rank 0 that
never completes, as the async collectives of DDP buckets, FSDP prefetches or pipeline sends
leave outstanding work behind an exception. `--torn-error-file-on T`: rank T leaves its error
file empty, as a process stopped between opening the file and writing it does (torchelastic's
own writer truncates first), before it joins the group, then sleeps until torchrun stops it:
torchrun then finds that file on a rank it stopped and cannot parse it, every time.
"""

from __future__ import annotations

if (
    __name__ == "__main__"
):  # as torchscale/rank/worker/main.py: die with torchrun before torch loads
    from torchscale.rank.worker.diagnostics import die_with_torchrun

    die_with_torchrun()

import argparse
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from torchscale.rank.worker.diagnostics import install
from torchscale.rank.worker.error_file import record_errors
from torchscale.rank.worker.harness import ERROR_EXIT_GRACE, process_group


def fail(rank: int, outstanding: bool) -> None:
    if outstanding:  # the peers never join it: they wait in the side group's all_reduce
        dist.all_reduce(torch.ones(4), async_op=True)
    raise torch.OutOfMemoryError(
        f"CUDA out of memory. Tried to allocate 20.00 GiB (injected on rank {rank})"
    )


@record_errors
def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--raise-on", required=True, help="a global rank, or 'all'")
    parser.add_argument("--outstanding", action="store_true")
    parser.add_argument("--torn-error-file-on", type=int, default=None)
    parser.add_argument("--exit-grace-s", type=float, default=ERROR_EXIT_GRACE.total_seconds())
    parser.add_argument("--marker", default="")
    args = parser.parse_args()
    install()
    grace = timedelta(seconds=args.exit_grace_s)
    torn = args.torn_error_file_on == int(os.environ["RANK"])
    if torn:  # before the group: no rank can raise before this file exists
        open(os.environ["TORCHELASTIC_ERROR_FILE"], "w").close()
    with process_group("gloo", torch.device("cpu"), exit_grace=grace):
        rank = dist.get_rank()
        if torn:
            time.sleep(3600)  # never records an error of its own: torchrun stops it
        side = dist.new_group(backend="gloo") if args.outstanding else None
        if args.raise_on in ("all", str(rank)):
            fail(rank, args.outstanding)
        print(f"rank {rank} ready", flush=True)
        dist.all_reduce(torch.ones(4), group=side)


if __name__ == "__main__":
    main()
