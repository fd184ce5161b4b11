"""Turn every rank's timings of one op at one size into a table row (pure functions).

Time of one op on a rank = (its timed window) / iterations, as nccl-tests computes it; across
ranks the time is averaged by default (nccl-tests' `-a 1`), or the fastest / slowest rank's.
Per-iteration times (from a timestamp between every two iterations) give p50, p99 and the CV.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from torchscale.contracts.collective_facts import OPS, ROOT_RANK, sweep_facts
from torchscale.contracts.schema.comm_result import (
    AcrossRanks,
    CommPair,
    CommRow,
    Placement,
    RankTime,
)
from torchscale.offline.analysis.nccl_bandwidth import algbw_gbps, busbw_factor


@dataclass(frozen=True)
class RankTiming:
    """What one rank measured for one op at one size."""

    rank: int
    host: str
    window_s: float  # first timestamp to last: `iters` operations back to back
    iteration_s: list[float]
    wrong: int | None  # None: not checked


def _identity(op: str, size_bytes: int, count: int, dtype: str) -> dict[str, Any]:
    """The columns nccl-tests prints before the figures: the message, and those that follow
    from the op alone."""
    facts = OPS[op]
    return {
        "op": op,
        "size_bytes": size_bytes,
        "count": count,
        "dtype": dtype,
        "redop": "sum" if facts.reduces else None,
        "root": ROOT_RANK if facts.rooted else None,
        "placement": placement(op),
    }


def placement(op: str) -> Placement:
    """How torchscale calls `op` (the torch API decides: all_reduce is in-place)."""
    return "out-of-place" if sweep_facts(op).out_of_place else "in-place"


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), q in [0, 100]."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def measured_row(
    op: str,
    size_bytes: int,
    count: int,
    dtype: str,
    timings: Sequence[RankTiming],
    iters: int,
    world_size: int,
    across: AcrossRanks = "avg",
) -> CommRow:
    """The row of a finished measurement, all ranks' timings given."""
    per_rank = sorted(timings, key=lambda t: t.rank)
    times_us = [t.window_s / iters * 1e6 for t in per_rank]
    time_us = {"min": min, "max": max}.get(across, statistics.fmean)(times_us)  # else "avg"
    algbw = algbw_gbps(size_bytes, time_us / 1e6)
    pooled = [s * 1e6 for t in per_rank for s in t.iteration_s]
    mean = statistics.fmean(pooled) if pooled else math.nan
    checked = [t.wrong for t in per_rank if t.wrong is not None]
    return CommRow(
        **_identity(op, size_bytes, count, dtype),
        time_us=time_us,
        time_us_min=min(times_us),
        time_us_max=max(times_us),
        algbw_gbps=algbw,
        busbw_gbps=algbw * busbw_factor(op, world_size),
        wrong=sum(checked) if len(checked) == len(per_rank) else None,
        iter_p50_us=percentile(pooled, 50) if pooled else None,
        iter_p99_us=percentile(pooled, 99) if pooled else None,
        iter_cv=statistics.stdev(pooled) / mean if len(pooled) > 1 and mean > 0 else None,
        ranks=[
            RankTime(rank=t.rank, host=t.host, time_us=us)
            for t, us in zip(per_rank, times_us, strict=True)
        ],
    )


def unmeasured_row(
    op: str, size_bytes: int, count: int, dtype: str, status: str, reason: str
) -> CommRow:
    """A row that could not be measured: unsupported by the backend, failed or hung."""
    return CommRow(
        **_identity(op, size_bytes, count, dtype),
        status="unsupported" if status == "unsupported" else "failed",
        reason=reason,
    )


def pair_result(
    a: int, b: int, hosts: dict[int, str], size_bytes: int, windows_s: Sequence[float], iters: int
) -> CommPair:
    """One pair's exchange: the slower of the two ranks' times per exchange."""
    time_us = max(windows_s) / iters * 1e6
    return CommPair(
        a=a,
        b=b,
        host_a=hosts.get(a),
        host_b=hosts.get(b),
        size_bytes=size_bytes,
        time_us=time_us,
        bandwidth_gbps=algbw_gbps(size_bytes, time_us / 1e6),
    )
