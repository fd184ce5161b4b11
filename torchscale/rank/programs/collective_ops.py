"""Each collective as buffers, one call, and the result it must produce (for `--check`).

Every op is run through the public torch.distributed call a training job would use, looked up
on `torch.distributed` at call time (all_gather_into_tensor and reduce_scatter_tensor where
torch predates the `_single` forms). The check's input pattern and tolerance are in
docs/comm.md: small integers every dtype holds exactly, different between ranks at the same
index, so a chunk from the wrong rank or offset counts as wrong, not just a wrong sum.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from torchscale.contracts.collective_facts import ROOT_RANK

PATTERN_PERIOD = 31
PATTERN_RANK_STRIDE = 13
# relative tolerance per dtype: the reductions sum in the input dtype, in an order the backend
# picks; integers this small are exact in float32/float16, and in bfloat16 up to 256
TOLERANCE = {torch.float32: 1e-6, torch.float16: 2e-3, torch.bfloat16: 2e-2}


def pattern(
    rank: int, start: int, count: int, dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    """Elements start..start+count of rank `rank`'s check input."""
    index = torch.arange(start, start + count, device=device, dtype=torch.int64)
    values = (index + PATTERN_RANK_STRIDE * rank) % PATTERN_PERIOD + 1
    return values.to(dtype)


def count_wrong(got: torch.Tensor, expected: torch.Tensor) -> int:
    """Elements of `got` not within the dtype's tolerance of `expected` (NaN and inf count)."""
    tolerance = TOLERANCE.get(got.dtype, 0.0)
    want = expected.to(torch.float64)
    error = (got.to(torch.float64) - want).abs()
    # "not within" rather than "beyond": a NaN or inf compares false either way, and is wrong
    return int((~(error <= tolerance * want.abs().clamp(min=1.0))).sum().item())


@dataclass
class Prepared:
    """One op ready to run: `run()` calls it once; `verify()` counts this rank's wrong
    elements after a run on check inputs (0 where this rank's output is not defined)."""

    run: Callable[[], None]
    verify: Callable[[], int]


def _sum_of_patterns(
    ranks: int, start: int, count: int, dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    total = torch.zeros(count, dtype=torch.float64, device=device)
    for rank in range(ranks):
        total += pattern(rank, start, count, torch.float64, device)
    return total.to(dtype)


def prepare(
    op: str,
    count: int,
    dtype: torch.dtype,
    device: torch.device,
    *,
    rank: int,
    ranks: int,
    check: bool,
) -> Prepared:
    """Buffers for `op` with `count` elements per rank (nccl-tests' count). With `check`, the
    inputs hold the check pattern; else zeros (timing only: repeated in-place sums of zeros
    never overflow)."""
    if op not in BUILDERS:
        raise ValueError(f"unknown collective {op!r}")
    return BUILDERS[op](count, dtype, device, rank, ranks, check)


def _newest(name: str, older: str) -> Callable[..., Any]:
    """torch's current name for a call, else the older one (recent torch deprecates the old)."""
    call: Callable[..., Any] = getattr(dist, name, None) or getattr(dist, older)
    return call


def _input(
    check: bool, rank: int, start: int, count: int, dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    if check:
        return pattern(rank, start, count, dtype, device)
    return torch.zeros(count, dtype=dtype, device=device)


def _all_reduce(
    count: int, dtype: torch.dtype, device: torch.device, rank: int, ranks: int, check: bool
) -> Prepared:
    buffer = _input(check, rank, 0, count, dtype, device)
    return Prepared(
        lambda: dist.all_reduce(buffer),
        lambda: count_wrong(buffer, _sum_of_patterns(ranks, 0, count, dtype, device)),
    )


def _reduce(
    count: int, dtype: torch.dtype, device: torch.device, rank: int, ranks: int, check: bool
) -> Prepared:
    buffer = _input(check, rank, 0, count, dtype, device)

    def verify() -> int:
        if rank != ROOT_RANK:
            return 0  # only the root's buffer is defined after a reduce
        return count_wrong(buffer, _sum_of_patterns(ranks, 0, count, dtype, device))

    return Prepared(lambda: dist.reduce(buffer, ROOT_RANK), verify)


def _broadcast(
    count: int, dtype: torch.dtype, device: torch.device, rank: int, ranks: int, check: bool
) -> Prepared:
    if check and rank != ROOT_RANK:  # a value the root's never is: a missed copy is counted
        buffer = torch.full((count,), -1.0, dtype=dtype, device=device)
    else:
        buffer = _input(check, ROOT_RANK, 0, count, dtype, device)
    return Prepared(
        lambda: dist.broadcast(buffer, ROOT_RANK),
        lambda: count_wrong(buffer, pattern(ROOT_RANK, 0, count, dtype, device)),
    )


def _all_gather(
    count: int, dtype: torch.dtype, device: torch.device, rank: int, ranks: int, check: bool
) -> Prepared:
    source = _input(check, rank, 0, count, dtype, device)
    output = torch.full((count * ranks,), -1.0, dtype=dtype, device=device)

    def verify() -> int:
        expected = torch.cat([pattern(q, 0, count, dtype, device) for q in range(ranks)])
        return count_wrong(output, expected)

    gather = _newest("all_gather_single", "all_gather_into_tensor")
    return Prepared(lambda: gather(output, source), verify)


def _reduce_scatter(
    count: int, dtype: torch.dtype, device: torch.device, rank: int, ranks: int, check: bool
) -> Prepared:
    source = _input(check, rank, 0, count * ranks, dtype, device)
    output = torch.full((count,), -1.0, dtype=dtype, device=device)
    scatter = _newest("reduce_scatter_single", "reduce_scatter_tensor")
    return Prepared(
        lambda: scatter(output, source),
        lambda: count_wrong(output, _sum_of_patterns(ranks, rank * count, count, dtype, device)),
    )


def _all_to_all(
    count: int, dtype: torch.dtype, device: torch.device, rank: int, ranks: int, check: bool
) -> Prepared:
    source = _input(check, rank, 0, count * ranks, dtype, device)
    output = torch.full((count * ranks,), -1.0, dtype=dtype, device=device)

    def verify() -> int:
        # chunk q of my output is chunk `rank` of rank q's input
        expected = torch.cat([pattern(q, rank * count, count, dtype, device) for q in range(ranks)])
        return count_wrong(output, expected)

    return Prepared(lambda: dist.all_to_all_single(output, source), verify)


def _send_recv(
    count: int, dtype: torch.dtype, device: torch.device, rank: int, ranks: int, check: bool
) -> Prepared:
    if ranks < 2:
        raise Unsupported("needs at least 2 ranks (a ring of one rank would send to itself)")
    source = _input(check, rank, 0, count, dtype, device)
    output = torch.full((count,), -1.0, dtype=dtype, device=device)
    after, before = (rank + 1) % ranks, (rank - 1) % ranks

    def run() -> None:
        ops = [dist.P2POp(dist.isend, source, after), dist.P2POp(dist.irecv, output, before)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()

    return Prepared(run, lambda: count_wrong(output, pattern(before, 0, count, dtype, device)))


# every op of catalog.COLLECTIVES, by the torch call it makes
BUILDERS: dict[str, Callable[..., Prepared]] = {
    "all_reduce": _all_reduce,
    "reduce": _reduce,
    "broadcast": _broadcast,
    "all_gather": _all_gather,
    "reduce_scatter": _reduce_scatter,
    "all_to_all": _all_to_all,
    "send_recv": _send_recv,
}


def exchange(peer: int, count: int, dtype: torch.dtype, device: torch.device) -> Callable[[], None]:
    """One simultaneous send and receive of `count` elements with `peer` (`--pairs`)."""
    source = torch.zeros(count, dtype=dtype, device=device)
    output = torch.empty(count, dtype=dtype, device=device)

    def run() -> None:
        ops = [dist.P2POp(dist.isend, source, peer), dist.P2POp(dist.irecv, output, peer)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()

    return run


class Unsupported(Exception):
    """This op cannot run here (the backend lacks it, or the rank count rules it out)."""
