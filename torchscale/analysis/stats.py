"""Step-time statistics. Pure functions over lists of seconds, no torch, no I/O."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class StepStats:
    """Distribution of step times (seconds). cv = std / mean, the variance flag's input."""

    count: int
    mean: float
    p50: float
    p95: float
    p99: float
    min: float
    max: float
    std: float
    cv: float

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default 'linear' method), q in [0, 100]."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be in [0, 100], got {q}")
    position = (len(sorted_values) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    fraction = position - low
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * fraction


def step_stats(times: Sequence[float]) -> StepStats:
    """Summarise step times; std is the sample standard deviation (0 for one step)."""
    if not times:
        raise ValueError("no step times to summarise")
    ordered = sorted(times)
    mean = statistics.fmean(ordered)
    std = statistics.stdev(ordered) if len(ordered) > 1 else 0.0
    return StepStats(
        count=len(ordered),
        mean=mean,
        p50=percentile(ordered, 50),
        p95=percentile(ordered, 95),
        p99=percentile(ordered, 99),
        min=ordered[0],
        max=ordered[-1],
        std=std,
        cv=std / mean if mean > 0 else 0.0,
    )


def median_and_spread(values: Sequence[float]) -> tuple[float, float]:
    """Median of repeats and their spread as (max - min) / median: robust to one bad repeat."""
    if not values:
        raise ValueError("no values")
    med = statistics.median(values)
    spread = (max(values) - min(values)) / med if med else 0.0
    return med, spread


def scaling_efficiency(
    throughput: float, world_size: int, base_throughput: float, base_world_size: int
) -> float:
    """eff(N) = thr(N) / (N * thr(N_min) / N_min): 1.0 is perfect linear scaling."""
    if base_throughput <= 0 or world_size <= 0 or base_world_size <= 0:
        raise ValueError("throughputs and world sizes must be positive")
    return throughput / (world_size * base_throughput / base_world_size)
