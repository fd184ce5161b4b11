"""Intervals and significance: every headline figure with its 95 % interval, and the rule that
turns a figure inside its own noise into "not measurable". Pure functions over numbers, no
torch, no I/O. The methods and why each: docs/methodology.md, "Uncertainty"; every resampling
is seeded so that a report re-rendered tomorrow says what it said today.

scipy.stats is imported where a test or a quantile needs it, not with this module: every rank
that imports this module for its types would otherwise load it at start-up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult, Intervals
from torchscale.contracts.schema.diagnosis import Estimate
from torchscale.contracts.wording.spell import as_set

LEVEL = 0.95
SMALL = 4  # fewer units than this: no bootstrap interval (a bootstrap of 2-3 is their range)
RESAMPLES = 2000
SEED = 20261123  # fixed: intervals are reproducible, not random from run to run
# The sd of log throughput between identical runs of one cell, which one run's repeats cannot
# see: a measured floor, not a law (docs/regressions.md, docs/methodology.md "Uncertainty");
# benchmarks/interval_coverage.py measures it on your machine.
BETWEEN_RUN_SD = 0.04
# what a report says of the throughput's interval: one text, so every surface says the same
THROUGHPUT_INTERVAL = (
    "Student t on log throughput over the repeats (n - 1 degrees of freedom), centred on their "
    "median and widened in quadrature by the drift between runs that one run's repeats cannot "
    f"see (sd {as_set(BETWEEN_RUN_SD)} of log throughput, measured); one repeat: spread unknown"
)
# the rate's interval this many times the median step's, relative: two figures of one cell that
# read as disagreeing, so where both are shown the reader is told why (`two_scopes`)
SCOPES_APART = 2.0


def block_length(n: int) -> int:
    """Moving-block length for n autocorrelated steps: n^(1/3), at least 1."""
    return max(1, round(n ** (1 / 3))) if n > 0 else 1


def block_indices(n: int, block: int | None = None, seed: int = SEED) -> np.ndarray:
    """(RESAMPLES, n) row indices of a moving-block bootstrap: blocks of consecutive rows
    starting anywhere, concatenated and cut to n. block 1 is the ordinary bootstrap."""
    if n <= 0:
        raise ValueError("nothing to resample")
    size = min(block if block is not None else block_length(n), n)
    rng = np.random.default_rng(seed)
    blocks = math.ceil(n / size)
    starts = rng.integers(0, n - size + 1, size=(RESAMPLES, blocks))
    rows = (starts[:, :, None] + np.arange(size)[None, None, :]).reshape(RESAMPLES, -1)
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
    lower: float | None = 0.0,
    upper: float | None = None,
    reason: Finding | None = None,
) -> Estimate:
    """An Estimate, measurable unless its interval reaches the domain's edge: a quantity that
    exists only above `lower` (a time, a share of the step) is not measurable when its
    interval includes `lower`, and a share is not measurable when it reaches above `upper`.
    The interval kept is clamped to the domain: it says how large the figure could be."""
    if low is None or high is None:
        return Estimate(value=value, low=None, high=None, n=n, measurable=True, reason=reason)
    edge: dict[str, float] | None = None
    if lower is not None and low <= lower:
        edge = {"edge": lower}
    elif upper is not None and high > upper:
        edge = {"above": upper}
    if lower is not None:
        low, high = max(low, lower), max(high, lower)
    if upper is not None:
        low, high = min(low, upper), min(high, upper)
    if edge is None and lower is not None and value <= lower:
        edge = {"edge": lower}  # a point at or below the domain's edge is noise whatever the spread
    if edge is not None:
        reason = Finding(code="estimate.inside_noise", figures=edge)
        return Estimate(value=None, low=low, high=high, n=n, measurable=False, reason=reason)
    return Estimate(value=value, low=low, high=high, n=n, measurable=True)


def one_unit(value: float, unit: str = "step") -> Estimate:
    """A figure of a single step, repeat or run: no interval, its spread unknown."""
    why = Finding(code="estimate.one_unit", figures={"unit": unit})
    return judged(value, None, None, n=1, reason=why)


def t_interval(
    values: Sequence[float] | np.ndarray, *, log: bool, level: float = LEVEL
) -> tuple[float, float]:
    """Student t interval (n - 1 degrees of freedom) of the mean of `values`; `log`: of the
    mean of their logs, exponentiated (the geometric mean's interval: strictly positive, wider
    above than below). Needs 2+ values, all positive when `log`."""
    data = np.asarray(values, dtype=float)
    if data.size < 2:
        raise ValueError("a t interval needs 2 values or more")
    if log and not np.all(data > 0):
        raise ValueError("a log-scale t interval needs positive values")
    from scipy import stats as scipy_stats

    x = np.log(data) if log else data
    centre = float(x.mean())
    se = float(x.std(ddof=1) / math.sqrt(x.size))
    half = float(scipy_stats.t.ppf(0.5 + level / 2, x.size - 1)) * se
    low, high = centre - half, centre + half
    return (math.exp(low), math.exp(high)) if log else (low, high)


def log_interval(
    values: Sequence[float] | np.ndarray, *, drift_sd: float = 0.0, level: float = LEVEL
) -> tuple[float, float]:
    """Student t interval on the log of positive figures (n - 1 degrees of freedom), centred
    on the log of their median (the figure shown, so the interval always holds it),
    exponentiated, with `drift_sd`, a measured between-run drift the figures cannot see, added
    in quadrature as a normal half-width (the formula, and why not Welch-Satterthwaite:
    docs/methodology.md, "Across runs"). Needs 2+ values."""
    data = np.asarray(values, dtype=float)
    if data.size < 2 or not np.all(data > 0):
        raise ValueError("a log interval needs 2 positive values or more")
    from scipy import stats as scipy_stats

    logs = np.log(data)
    tail = 0.5 + level / 2
    se = float(logs.std(ddof=1) / math.sqrt(logs.size))
    spread = float(scipy_stats.t.ppf(tail, logs.size - 1)) * se
    drift = float(scipy_stats.norm.ppf(tail)) * drift_sd
    half = math.hypot(spread, drift)
    centre = math.log(float(np.median(data)))
    return math.exp(centre - half), math.exp(centre + half)


def median_of_repeats(values: Sequence[float], *, lower: float | None = 0.0) -> Estimate:
    """The median of one run's per-repeat figures (throughput) with a 95 % interval
    that a rerun of the cell lands in: Student t on the log of the figures, widened by the
    between-run drift its repeats cannot see (`log_interval`, drift_sd BETWEEN_RUN_SD); not
    the percentile bootstrap of the median, which over 4 repeats is only their range. Figures
    not all positive: Student t on the figures, no drift term (a relative drift has no meaning
    for a signed figure). One repeat: the value with "spread unknown"."""
    return _median_of(values, "repeat", BETWEEN_RUN_SD, lower)


def in_proportion(throughput: Estimate, value: float | None, base: float) -> Estimate | None:
    """`value`, a figure in proportion to the throughput `base` (MFU: samples/s x FLOPs per
    sample / peak), as the same estimate: the throughput's interval scaled by value / base, the
    same share of it, measurable only where the throughput is. One estimator, never a second
    interval for the same windows. None without a value or a base."""
    if value is None or not base:
        return None
    scale = value / base
    return throughput.model_copy(
        update={
            "value": value if throughput.measurable else None,
            "low": throughput.low * scale if throughput.low is not None else None,
            "high": throughput.high * scale if throughput.high is not None else None,
        }
    )


def relative_half_width(estimate: Estimate | None) -> float | None:
    """Half the 95 % interval over the figure; None without a figure or an interval."""
    if estimate is None or not estimate.value or estimate.low is None or estimate.high is None:
        return None
    return (estimate.high - estimate.low) / 2 / abs(estimate.value)


def mfu_estimate(result: CellResult, *, measured: bool = False) -> Estimate | None:
    """The cell's MFU (against the spec-sheet peak, or with `measured` the measured one) with
    its interval: the throughput's, scaled (`in_proportion`); None without either."""
    compute, thr, intervals = result.compute, result.throughput, result.intervals
    if compute is None or thr is None or intervals is None:
        return None
    value = compute.mfu_measured if measured else compute.mfu
    return in_proportion(intervals.samples_per_s, value, thr.samples_per_s)


def two_scopes(intervals: Intervals | None, *, mfu: bool = False) -> Finding | None:
    """'intervals.two_scopes' where a cell's rate interval is SCOPES_APART times its median
    step's or more (relative): they are two estimators kept on purpose (docs/methodology.md,
    "One estimator per question"), the rate's where a rerun lands, the step's how closely
    this run's steps pin it; None where both agree or one has no interval."""
    if intervals is None:
        return None
    rate = relative_half_width(intervals.samples_per_s)
    step = relative_half_width(intervals.step_p50_s)
    if rate is None or step is None or rate < SCOPES_APART * step:
        return None
    figures = {
        "repeats": intervals.samples_per_s.n,
        "steps": intervals.step_p50_s.n,
        "rate_half_width": rate,
        "step_half_width": step,
        "mfu": mfu,
    }
    return Finding(code="intervals.two_scopes", figures=figures)


def median_of_runs(values: Sequence[float], *, lower: float | None = 0.0) -> Estimate:
    """The median of several runs' figures of one cell (each its own launch) with a 95 %
    interval: Student t on the log of the figures, n - 1 degrees of freedom, with no drift
    term: runs differ by the drift between them, so their spread already holds it (adding
    BETWEEN_RUN_SD would count it twice and never narrow with more runs). Figures not all
    positive: t on the figures. One run: "spread unknown"."""
    return _median_of(values, "run", 0.0, lower)


def _median_of(
    values: Sequence[float], unit: str, drift_sd: float, lower: float | None
) -> Estimate:
    """The median of one figure per `unit` (repeat, run) with its 95 % interval: Student t on
    the logs widened by `drift_sd` (`log_interval`), or on the figures where not all are
    positive; one figure: "spread unknown"."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError(f"no {unit}s")
    median = float(np.median(data))
    n = int(data.size)
    if n == 1:
        return one_unit(median, unit)
    log = bool(np.all(data > 0))
    low, high = log_interval(data, drift_sd=drift_sd) if log else t_interval(data, log=False)
    return judged(median, low, high, n=n, lower=lower)


def percentile_of_steps(values: Sequence[float], q: float) -> Estimate:
    """Step-time percentile q (0-100) of autocorrelated per-step values with its moving-block
    bootstrap interval from SMALL (4) steps on; with 2-3 steps no interval ("range of 3 steps,
    no interval": a percentile of 3 steps has no t interval, and their bootstrap would only be
    their range)."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("no steps")
    point = float(np.percentile(data[None, :], q, axis=1)[0])
    if data.size == 1:
        return one_unit(point)
    if data.size < SMALL:
        n = int(data.size)
        reason = Finding(code="estimate.range_only", figures={"n": n, "unit": "step"})
        return judged(point, None, None, n=n, reason=reason)
    rows = block_indices(data.size)
    low, high = percentile_interval(np.percentile(data[rows], q, axis=1))
    return judged(point, low, high, n=int(data.size))


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
    """median(numerator) / median(denominator) and the 95 % interval of that ratio
    (`ratio_method` says which): each side resampled on its own (independent runs) by the
    percentile bootstrap when both sides hold SMALL (4) values or more; else Welch's t on the
    log ratio (`log_ratio_t_interval`). No interval when either side has one value, or a side
    below SMALL holds a value that is not positive."""
    top, bottom = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    if top.size == 0 or bottom.size == 0:
        raise ValueError("empty side")
    ratio = float(np.median(top) / np.median(bottom))
    if top.size < 2 or bottom.size < 2:
        return ratio, None, None
    if min(top.size, bottom.size) < SMALL:
        if not (np.all(top > 0) and np.all(bottom > 0) and ratio > 0):
            return ratio, None, None
        low, high = log_ratio_t_interval(top, bottom, centre=ratio)
        return ratio, low, high
    a = np.median(top[block_indices(top.size, block=1, seed=SEED)], axis=1)
    b = np.median(bottom[block_indices(bottom.size, block=1, seed=SEED + 1)], axis=1)
    low, high = percentile_interval(a / b)
    return ratio, low, high


def log_ratio_t_interval(
    top: np.ndarray, bottom: np.ndarray, *, centre: float, level: float = LEVEL
) -> tuple[float, float]:
    """Welch's t interval of a ratio of two independent positive samples, on the log scale:
    exp(log(centre) -/+ t(df) x se), se^2 = var(log top) / n_top + var(log bottom) / n_bottom,
    df by Welch-Satterthwaite. Centred on the ratio shown (`centre`, the ratio of medians;
    with 2 a side the same as the ratio of geometric means), so the interval holds it. No
    spread on either side: the point."""
    x, y = np.log(top), np.log(bottom)
    vx, vy = float(x.var(ddof=1)) / x.size, float(y.var(ddof=1)) / y.size
    se2 = vx + vy
    if se2 <= 0:
        return centre, centre
    from scipy import stats as scipy_stats

    df = se2**2 / (vx**2 / (x.size - 1) + vy**2 / (y.size - 1))
    half = float(scipy_stats.t.ppf(0.5 + level / 2, df)) * math.sqrt(se2)
    return centre * math.exp(-half), centre * math.exp(half)


def ratio_method(n_top: int, n_bottom: int) -> str:
    """How `ratio_of_medians` takes its interval for these side sizes, in words."""
    if min(n_top, n_bottom) < 2:
        return "no interval: one value on a side"
    if min(n_top, n_bottom) < SMALL:
        return f"Welch's t on the log ratio ({n_top} vs {n_bottom})"
    return f"percentile bootstrap of the ratio of medians ({n_top} vs {n_bottom})"


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


def finite_steps(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Per-step values as floats, the steps a rank did not measure (NaN) left out."""
    data = np.asarray(values, dtype=np.float64)
    return data[np.isfinite(data)]


def untested_gap(data: np.ndarray, min_effect_s: float) -> GapTest:
    """A gap over fewer than two steps: its mean (0 with none), no interval, not significant."""
    mean = float(data.mean()) if data.size else 0.0
    return GapTest(mean, None, None, None, min_effect_s, False, int(data.size))


def paired_gap_test(
    differences: Sequence[float], *, min_effect_s: float, alpha: float = 0.01
) -> GapTest:
    """Is one rank slower than the others, step by step? Significant when the one-sided
    Wilcoxon signed-rank test of the per-step differences gives p < alpha AND the lower end of
    the 95 % interval of their mean is at least `min_effect_s` (a difference too small to act
    on is not a straggler however certain it is). The interval: a block bootstrap from SMALL
    (4) steps on, Student t on the differences with 2-3 (where the test cannot reach alpha
    anyway: its smallest p with 3 steps is 1/8)."""
    data = finite_steps(differences)
    if data.size < 2:
        return untested_gap(data, min_effect_s)
    mean = float(data.mean())
    if data.size < SMALL:
        low, high = t_interval(data, log=False)
    else:
        rows = block_indices(data.size)
        low, high = percentile_interval(data[rows].mean(axis=1))
    if np.all(data == 0):
        p_value = 1.0
    else:
        from scipy import stats as scipy_stats

        p_value = float(scipy_stats.wilcoxon(data, alternative="greater").pvalue)
    significant = p_value < alpha and low >= min_effect_s
    return GapTest(mean, low, high, p_value, min_effect_s, significant, int(data.size))
