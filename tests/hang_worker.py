"""Test-only torchrun worker that misbehaves on purpose, for the process-level fault tests.

Run under torchrun as `python -m tests.hang_worker --fault F [--rank R] [--collective C]
[--marker M]` (the tests put the repo root on PYTHONPATH; M, unused, lets a test find its
ranks). It installs the benchmark worker's diagnostics (pid file, stack dump on SIGUSR1,
parent-death signal), joins a gloo group, then rank R does F while every other rank enters
collective C:

  hang      rank R sleeps in `compute` (the others wait for it in C)
  signal:N  rank R sends itself signal N (SIGKILL, SIGSEGV, ...)
"""

from __future__ import annotations

if (
    __name__ == "__main__"
):  # as torchscale/rank/worker/main.py: die with torchrun before torch loads
    from torchscale.rank.worker.diagnostics import die_with_torchrun

    die_with_torchrun()

import argparse
import signal
import sys
import threading
import time

import torch
import torch.distributed as dist

from torchscale.rank.worker.diagnostics import install


def compute(seconds: float) -> None:
    time.sleep(seconds)  # the line a stack dump of the stuck rank points at


def collective(name: str) -> None:
    if name == "all_reduce":
        dist.all_reduce(torch.ones(4))
    elif name == "barrier":
        dist.barrier()
    elif name == "all_gather_object":
        gathered: list[object] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, dist.get_rank())
    else:
        raise ValueError(f"unknown collective {name!r}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", required=True)
    parser.add_argument("--rank", type=int, default=1)
    parser.add_argument("--collective", default="all_reduce")
    parser.add_argument("--marker", default="")
    args = parser.parse_args()
    install()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    # "ready" is printed on the line before each blocking call: a test that saw it can ask for
    # stacks (a dump can still land in the few bytecodes before the call: ask again then)
    if rank == args.rank and args.fault == "hang":
        print(f"rank {rank} ready", flush=True)
        compute(3600)
    elif rank == args.rank and args.fault.startswith("signal:"):
        # to this thread, not the process: a process-directed signal may land on one of
        # gloo's threads while this one runs on, and the dump then names the next line
        signal.pthread_kill(threading.get_ident(), int(args.fault.split(":", 1)[1]))
        time.sleep(10)  # a signal that does not kill (ignored): fall through
    print(f"rank {rank} ready", flush=True)
    collective(args.collective)
    dist.destroy_process_group()
    sys.exit(0)


if __name__ == "__main__":
    main()
