"""Intervals and significance: every headline figure with its 95 % interval, and the rule that
turns a figure inside its own noise into "not measurable". Pure functions over numbers (numpy,
scipy.stats), no torch, no I/O. Definitions: docs/methodology.md, "Uncertainty".

Why these methods:
- Steps are the units where a run has many of them (attribution, latency percentiles), but
  neighbouring steps share machine state (a noisy neighbour slows several in a row), so steps
  are resampled in blocks (moving-block bootstrap, block length n^(1/3)): an i.i.d. bootstrap
  over autocorrelated steps gives intervals that are too narrow.
- Repeats (barrier-bounded windows) are the units of throughput: each is one wall-time figure.
  With 2-5 repeats the percentile bootstrap of their median is about their range; with one
  repeat there is no spread to speak of ("spread unknown"), never a made-up one.
- Every resampling is seeded: the same measurements always give the same interval, so a
  report re-rendered tomorrow says what it said today.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from torchscale.schema.cell_result import Estimate

LEVEL = 0.95
RESAMPLES = 2000
SEED = 20261123  # fixed: intervals are reproducible, not random from run to run
ONE_UNIT = "one {unit}: spread unknown"
NOISE = "not measurable above noise: its 95 % interval reaches {edge}"


def block_length(n: int) -> int:
    """Moving-block length for n autocorrelated steps: n^(1/3), at least 1."""
    return max(1, round(n ** (1 / 3))) if n > 0 else 1


def block_indices(
    n: int, resamples: int = RESAMPLES, block: int | None = None, seed: int = SEED
) -> np.ndarray:
    """(resamples, n) row indices of a moving-block bootstrap: blocks of consecutive rows
    starting anywhere, concatenated and cut to n. block 1 is the ordinary bootstrap."""
    if n <= 0:
        raise ValueError("nothing to resample")
    size = block if block is not None else block_length(n)
    size = min(size, n)
    rng = np.random.default_rng(seed)
    blocks = math.ceil(n / size)
    starts = rng.integers(0, n - size + 1, size=(resamples, blocks))
    rows = (starts[:, :, None] + np.arange(size)[None, None, :]).reshape(resamples, -1)
    return rows[:, :n]


def percentile_interval(distribution: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The central `level` percentile interval of a bootstrap distribution (axis 0)."""
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(distribution, [tail, 100 - tail], axis=0)
    return float(low), float(high)


def judged(
    value: float,
    low: float | None,
    high: float | None,
    *,
    n: int,
    method: str,
    lower: float | None = 0.0,
    upper: float | None = None,
    reason: str | None = None,
) -> Estimate:
    """An Estimate, measurable unless its interval reaches the domain's edge: a quantity that
    exists only above `lower` (a time, a share of the step) is not measurable when its
    interval includes `lower`, and a share is not measurable when it reaches above `upper`.
    The interval kept is clamped to the domain: it says how large the figure could be."""
    if low is None or high is None:
        return Estimate(
            value=value, low=None, high=None, n=n, method=method, measurable=True, reason=reason
        )
    edge = None
    if lower is not None and low <= lower:
        edge = f"{lower:g}"
    elif upper is not None and high > upper:
        edge = f"above {upper:g}"
    if lower is not None:
        low, high = max(low, lower), max(high, lower)
    if upper is not None:
        low, high = min(low, upper), min(high, upper)
    if edge is None and lower is not None and value <= lower:
        edge = f"{lower:g}"  # a point at or below the domain's edge is noise whatever the spread
    if edge is not None:
        return Estimate(
            value=None,
            low=low,
            high=high,
            n=n,
            method=method,
            measurable=False,
            reason=NOISE.format(edge=edge),
        )
    return Estimate(value=value, low=low, high=high, n=n, method=method, measurable=True)


def median_of_repeats(values: Sequence[float], *, lower: float | None = 0.0) -> Estimate:
    """The median of per-repeat figures (throughput) with the percentile bootstrap interval
    of that median over the repeats; one repeat: the value with "spread unknown"."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("no repeats")
    median = float(np.median(data))
    if data.size == 1:
        return judged(
            median, None, None, n=1, method="one repeat", reason=ONE_UNIT.format(unit="repeat")
        )
    rows = block_indices(data.size, block=1)
    low, high = percentile_interval(np.median(data[rows], axis=1))
    method = f"bootstrap of the median over {data.size} repeats"
    return judged(median, low, high, n=int(data.size), method=method, lower=lower)


def step_statistic(
    values: Sequence[float], statistic: Callable[[np.ndarray], np.ndarray], name: str
) -> Estimate:
    """A statistic of autocorrelated per-step values (axis 1 of the resample matrix) with its
    moving-block bootstrap interval; at least 2 steps for an interval."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("no steps")
    point = float(statistic(data[None, :])[0])
    if data.size == 1:
        return judged(
            point, None, None, n=1, method="one step", reason=ONE_UNIT.format(unit="step")
        )
    rows = block_indices(data.size)
    low, high = percentile_interval(statistic(data[rows]))
    method = f"moving-block bootstrap of the {name} over {data.size} steps"
    return judged(point, low, high, n=int(data.size), method=method)


def percentile_of_steps(values: Sequence[float], q: float) -> Estimate:
    """Step-time percentile q (0-100) with its block-bootstrap interval."""
    return step_statistic(
        values, lambda m: np.percentile(m, q, axis=1), f"p{q:g}" if q != 50 else "median"
    )


def mean_columns(matrix: np.ndarray, *, seed: int = SEED) -> tuple[np.ndarray, np.ndarray | None]:
    """Column means of a (steps, k) matrix and their block-bootstrap distribution
    (RESAMPLES, k) (None with one step). Rows stay whole, so parts that add up per step add
    up in every resample too."""
    data = np.asarray(matrix, dtype=float)
    if data.ndim != 2 or data.shape[0] == 0:
        raise ValueError("need a (steps, parts) matrix with at least one step")
    means = data.mean(axis=0)
    if data.shape[0] == 1:
        return means, None
    rows = block_indices(data.shape[0], seed=seed)
    return means, data[rows].mean(axis=1)


def ratio_of_medians(
    numerator: Sequence[float], denominator: Sequence[float]
) -> tuple[float, float | None, float | None]:
    """median(numerator) / median(denominator) and the percentile bootstrap interval of that
    ratio, each side resampled on its own (independent runs); no interval when either side
    has one value."""
    top, bottom = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    if top.size == 0 or bottom.size == 0:
        raise ValueError("empty side")
    ratio = float(np.median(top) / np.median(bottom))
    if top.size < 2 or bottom.size < 2:
        return ratio, None, None
    a = np.median(top[block_indices(top.size, block=1, seed=SEED)], axis=1)
    b = np.median(bottom[block_indices(bottom.size, block=1, seed=SEED + 1)], axis=1)
    low, high = percentile_interval(a / b)
    return ratio, low, high


@dataclass(frozen=True)
class GapTest:
    """A paired test of per-step differences (rank minus the others, same step)."""

    mean_s: float
    low_s: float | None
    high_s: float | None
    p_value: float | None
    min_effect_s: float
    significant: bool
    steps: int


def paired_gap_test(
    differences: Sequence[float], *, min_effect_s: float, alpha: float = 0.01
) -> GapTest:
    """Is one rank slower than the others, step by step? Significant when the one-sided
    Wilcoxon signed-rank test of the per-step differences gives p < alpha AND the lower end of
    the block-bootstrap 95 % interval of their mean is at least `min_effect_s` (a difference
    too small to act on is not a straggler however certain it is)."""
    data = np.asarray(differences, dtype=float)
    data = data[np.isfinite(data)]
    if data.size < 2:
        mean = float(data.mean()) if data.size else 0.0
        return GapTest(mean, None, None, None, min_effect_s, False, int(data.size))
    mean = float(data.mean())
    rows = block_indices(data.size)
    low, high = percentile_interval(data[rows].mean(axis=1))
    if np.all(data == 0):
        p_value = 1.0
    else:
        p_value = float(scipy_stats.wilcoxon(data, alternative="greater").pvalue)
    significant = p_value < alpha and low >= min_effect_s
    return GapTest(mean, low, high, p_value, min_effect_s, significant, int(data.size))
