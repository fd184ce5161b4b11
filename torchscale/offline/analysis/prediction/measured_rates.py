"""The measured cells' throughput and scaling efficiency as a forecast states them: from the
median step (N x batch / T(N), efficiency T(w0) / T(N) against the smallest measured size
w0), so that a forecast drawn beside its measured points compares one statistic with itself.
The cells' own throughput is wall-clock, a mean over the run that stalls move."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class StepPoint:
    """One measured cell: its world size, batch and median step with the step's 95 % ends."""

    world_size: int
    batch_size: int
    step_s: float
    step_low_s: float | None
    step_high_s: float | None


@dataclass(frozen=True)
class Rated:
    """A figure with its 95 % ends; an end is None where the step's interval does not give it."""

    value: float
    low: float | None
    high: float | None


def median_step_rate(point: StepPoint) -> Rated:
    """N x batch / T(N), the step's interval turned over (no upper end for a step of 0)."""
    samples = point.world_size * point.batch_size
    low = samples / point.step_high_s if point.step_high_s else None
    high = samples / point.step_low_s if point.step_low_s else None
    return Rated(samples / point.step_s, low, high)


def median_step_efficiency(points: Sequence[StepPoint]) -> list[Rated]:
    """thr(N) / (N x thr(w0) / w0) = T(w0) / T(N) for each point, w0 the first (smallest),
    with the two rates' relative intervals in quadrature, as a forecast's efficiency carries
    them. The reference itself is 1 with no interval (it is the definition)."""
    if not points:
        return []
    base = median_step_rate(points[0])
    out = [Rated(1.0, None, None)]
    for point in points[1:]:
        rate = median_step_rate(point)
        value = (rate.value / point.world_size) / (base.value / points[0].world_size)
        below = _quadrature(_below(rate), _above(base))
        above = _quadrature(_above(rate), _below(base))
        low = None if below is None else value * (1 - below)
        high = None if above is None else value * (1 + above)
        out.append(Rated(value, low, high))
    return out


def _below(rated: Rated) -> float | None:
    return None if rated.low is None else (rated.value - rated.low) / rated.value


def _above(rated: Rated) -> float | None:
    return None if rated.high is None else (rated.high - rated.value) / rated.value


def _quadrature(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else math.hypot(a, b)
