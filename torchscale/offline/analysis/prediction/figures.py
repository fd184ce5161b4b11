"""Figures with a lower and an upper half-width, and the two ways forecasts combine them:
a linear combination of independent inputs (half-widths added in quadrature, each side on its
own) and widening by a relative model error. Converted to the results' `Estimate` at the end."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from torchscale.contracts.schema.diagnosis import Estimate


@dataclass(frozen=True)
class Figure:
    """`value` with its interval [value - below, value + above] (95 %, as the inputs')."""

    value: float
    below: float = 0.0
    above: float = 0.0

    @property
    def low(self) -> float:
        return self.value - self.below

    @property
    def high(self) -> float:
        return self.value + self.above

    def scaled(self, factor: float) -> Figure:
        if factor >= 0:
            return Figure(self.value * factor, self.below * factor, self.above * factor)
        return Figure(self.value * factor, self.above * -factor, self.below * -factor)


def of_estimate(estimate: Estimate | None) -> Figure | None:
    """A measured Estimate as a Figure. Not measurable above noise (value null): 0 with the
    interval up to its high end, which is what the data allow."""
    if estimate is None:
        return None
    if estimate.value is None:
        high = estimate.high if estimate.high is not None else 0.0
        return Figure(0.0, 0.0, max(high, 0.0))
    low = estimate.low if estimate.low is not None else estimate.value
    high = estimate.high if estimate.high is not None else estimate.value
    return Figure(estimate.value, max(estimate.value - low, 0.0), max(high - estimate.value, 0.0))


def combine(weights: Sequence[float], figures: Sequence[Figure]) -> Figure:
    """sum(w_i x f_i), independent inputs: each side's half-width is the root sum of squares
    of the weighted half-widths (a negative weight swaps a figure's sides)."""
    parts = [f.scaled(w) for w, f in zip(weights, figures, strict=True)]
    return Figure(
        sum(p.value for p in parts),
        math.sqrt(sum(p.below**2 for p in parts)),
        math.sqrt(sum(p.above**2 for p in parts)),
    )


def total(figures: Sequence[Figure]) -> Figure:
    return combine([1.0] * len(figures), figures)


def widened(figure: Figure, relative_error: float) -> Figure:
    """The interval widened by a model error of `relative_error` x value on each side, in
    quadrature with the measurement's own half-widths."""
    extra = abs(relative_error * figure.value)
    return Figure(figure.value, math.hypot(figure.below, extra), math.hypot(figure.above, extra))


def floor_at_zero(figure: Figure) -> Figure:
    """A time cannot be negative: the value and the low end clamped at 0."""
    value = max(figure.value, 0.0)
    return Figure(value, min(figure.below, value), max(figure.high - value, 0.0))


def to_estimate(figure: Figure, n: int, method: str) -> Estimate:
    # a time's interval stops at 0; a difference (contention) may be negative as measured
    low = figure.low if figure.value < 0 else max(figure.low, 0.0)
    return Estimate(value=figure.value, low=low, high=figure.high, n=n, measurable=True)


def least_squares_weights(xs: Sequence[float], at: float) -> list[float]:
    """Weights w with sum(w_i y_i) = the straight line fitted to (x_i, y_i) by least squares,
    evaluated at `at` (one distinct x: the mean of the y, a flat line). Linear in the y, so
    the inputs' intervals carry through `combine`."""
    n = len(xs)
    mean_x = sum(xs) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    if sxx == 0:
        return [1.0 / n] * n
    return [1.0 / n + (at - mean_x) * (x - mean_x) / sxx for x in xs]
