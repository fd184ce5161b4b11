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


def spread_from_median(figures: Sequence[float]) -> float | None:
    """The run-to-run spread: how far the farthest figure lies from their median, relative
    (0.047 for 100 and 109.9); None below 2 figures or without a positive median.

    The one definition every surface shows (stored `throughput.spread`, the cells table's
    `throughput_spread`, the report's Spread, a forecast's error) and the one the reliability
    rule reads: "noisy" is a repeat more than ±10 % from the median, a distance either side of
    the figure reported, like the interval's ± it stands beside. The range (max - min) / median
    is twice that for two repeats, so it read 9.5 % where the rule saw ±4.7 %."""
    if len(figures) < 2:
        return None
    middle = statistics.median(figures)
    return max(abs(v / middle - 1.0) for v in figures) if middle > 0 else None


def median_and_spread(values: Sequence[float]) -> tuple[float, float]:
    """Median of repeats and their spread (`spread_from_median`; 0 for one repeat)."""
    if not values:
        raise ValueError("no values")
    return statistics.median(values), spread_from_median(values) or 0.0
