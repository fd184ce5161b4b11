"""Runs inside every rank of the `validate` smoke test (started by torchrun, through the harness
of rank/worker/harness.py).

Each rank fills a tensor with rank + 1 and all-reduces it; every element of the result must be
1 + 2 + ... + world_size, which float32 represents exactly. An all_gather of the ranks checks
that every rank joined once. Rank 0 writes the verdict as JSON (atomically) for the parent.
torchrun starts one rank per GPU on the NCCL path (every GPU the node offers) and 2 CPU ranks
with gloo.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from datetime import timedelta

import torch
import torch.distributed as dist

from torchscale.rank.worker.harness import Group, Join, Program
from torchscale.rank.worker.timing import settle, synchronize

INIT_TIMEOUT = timedelta(seconds=60)  # a smoke test that cannot rendezvous fails fast


def expected_sum(world_size: int) -> float:
    """What every element holds after all-reducing rank + 1 over `world_size` ranks."""
    return world_size * (world_size + 1) / 2


def count_wrong(result: torch.Tensor, world_size: int) -> int:
    """Elements of an all-reduce result that differ from the expected sum."""
    return int((result != expected_sum(world_size)).sum().item())


def bus_bandwidth(algbw: float, world_size: int) -> float | None:
    """all_reduce bus bandwidth in nccl-tests terms, algbw x 2(n-1)/n; None for one rank,
    where no byte crosses a link (0.0 would read as a dead interconnect)."""
    return algbw * 2 * (world_size - 1) / world_size if world_size >= 2 else None


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=("gloo", "nccl"), required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--elements", type=int, default=1 << 20)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--out", required=True, help="JSON verdict written by rank 0")
    return parser.parse_args(argv)


def body(args: argparse.Namespace, group: Group) -> None:
    """The smoke test on this rank; rank 0 writes the verdict."""
    device, rank, world = group.device, group.rank, group.size
    tensor = torch.empty(args.elements, dtype=torch.float32, device=device)

    tensor.fill_(rank + 1)  # warm-up: first collective builds the communicators
    dist.all_reduce(tensor)
    wrong = torch.zeros((), dtype=torch.int64, device=device)
    wrong += (tensor != expected_sum(world)).sum()

    elapsed = 0.0
    for _ in range(args.iters):
        tensor.fill_(rank + 1)
        settle(device)
        start = time.perf_counter()
        dist.all_reduce(tensor)
        synchronize(device)
        elapsed += time.perf_counter() - start
        wrong += (tensor != expected_sum(world)).sum()

    ranks = [torch.zeros(1, dtype=torch.int64, device=device) for _ in range(world)]
    dist.all_gather(ranks, torch.tensor([rank], dtype=torch.int64, device=device))
    gathered = [int(t.item()) for t in ranks]

    # totals across ranks: wrong elements summed, time as the slowest rank saw it
    totals = torch.tensor([float(wrong.item()), elapsed], dtype=torch.float64, device=device)
    slowest = totals.clone()
    dist.all_reduce(totals, op=dist.ReduceOp.SUM)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    if rank == 0:
        seconds = float(slowest[1].item()) / args.iters
        size = args.elements * 4
        algbw = size / seconds / 1e9 if seconds > 0 else 0.0
        verdict = {
            "backend": args.backend,
            "device": args.device,
            "world_size": world,
            "elements": args.elements,
            "bytes": size,
            "iters": args.iters,
            "expected_value": expected_sum(world),
            "wrong_elements": int(totals[0].item()),
            "all_gather_ranks": gathered,
            "all_gather_ok": gathered == list(range(world)),
            "seconds_per_all_reduce": seconds,
            "algbw_gbps": algbw,
            "busbw_gbps": bus_bandwidth(algbw, world),
            "torch_version": torch.__version__,
        }
        group.write(args.out, json.dumps(verdict, indent=2))


def _join(args: argparse.Namespace) -> Join:
    return Join(args.backend, args.device, INIT_TIMEOUT)


# no last barrier: the reductions above already wait for every rank
PROGRAM = Program(__doc__ or "", _parse, _join, body, last_barrier=False)
