"""Step-time statistics. Pure functions over lists of seconds, no torch, no I/O."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np

from torchscale.contracts.schema.cell_result import StepTimeStats


def step_stats(times: Sequence[float]) -> StepTimeStats:
    """Summarise step times; percentiles are numpy's default (linear interpolation), std the
    sample standard deviation (0 for one step), cv = std / mean."""
    if not times:
        raise ValueError("no step times to summarise")
    values = np.asarray(times, dtype=float)
    p50, p95, p99 = (float(q) for q in np.percentile(values, [50, 95, 99]))
    mean = statistics.fmean(times)
    std = statistics.stdev(times) if len(times) > 1 else 0.0
    return StepTimeStats(
        count=len(times),
        mean=mean,
        p50=p50,
        p95=p95,
        p99=p99,
        min=float(values.min()),
        max=float(values.max()),
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
