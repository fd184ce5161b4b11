"""Honest uncertainty: no "95 % interval" drawn from fewer than 4 samples by bootstrap (with 2
repeats that bootstrap is their range), intervals printed as [lo, hi] where '±' would misstate them,
and changes of a percentage in points. A run's throughput interval holds the median of reruns of the
cell (Student t on log throughput widened by the between-run drift, where the bootstrap of 4 repeats
is their range), shown on runs with synthetic drift. Known answers by hand
(`torchscale.offline.analysis.uncertainty`, `torchscale.interfaces.report.estimates`)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from torchscale.contracts.schema.diagnosis import Estimate
from torchscale.contracts.wording import why
from torchscale.contracts.wording.axis import tick_labels
from torchscale.contracts.wording.figures import lopsided, plus_minus, value_format
from torchscale.contracts.wording.spell import format_value
from torchscale.interfaces.console.sweep_tables import _throughput
from torchscale.interfaces.report.estimates import compact, efficiency_text
from torchscale.offline.analysis.uncertainty import (
    BETWEEN_RUN_SD,
    SMALL,
    block_indices,
    median_of_repeats,
    median_of_runs,
    paired_gap_test,
    percentile_interval,
    percentile_of_steps,
    ratio_method,
    ratio_of_medians,
    t_interval,
)

# a measured cell: tiny-gpt2 b32 x2, two repeats (a bootstrap of two is their range)
REPEATS = [332.1, 357.7]
# sd of log throughput between a run's repeats where BETWEEN_RUN_SD was measured (tiny-gpt2 b8
# x2, 10 repeats: IQR / median 5.8 %, docs/regressions.md; 0.058 / 1.349 for a normal)
WITHIN_SD = 0.043


def by_hand_log_t(values: list[float]) -> tuple[float, float]:
    """Student t interval of the mean of log values, exponentiated, written out."""
    logs = [math.log(v) for v in values]
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = scipy_stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    return math.exp(mean - half), math.exp(mean + half)


def by_hand_widened(values: list[float], drift: float = BETWEEN_RUN_SD) -> tuple[float, float]:
    """The repeats' interval written out: centred on the log of the median, half-width the
    Student t one of the logs (n - 1 degrees of freedom) and the drift's normal one added in
    quadrature."""
    logs = [math.log(v) for v in values]
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    spread = scipy_stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    half = math.sqrt(spread**2 + (scipy_stats.norm.ppf(0.975) * drift) ** 2)
    centre = math.log(float(np.median(values)))
    return math.exp(centre - half), math.exp(centre + half)


# ------------------------------------------------------------------------ repeats


def test_two_repeats_are_not_a_95_pct_interval_of_their_range() -> None:
    estimate = median_of_repeats(REPEATS)
    assert estimate.value == pytest.approx(344.9)
    assert estimate.n == 2
    assert estimate.low is not None and estimate.high is not None
    assert (estimate.low, estimate.high) != pytest.approx((332.1, 357.7))
    assert (estimate.low, estimate.high) == pytest.approx(by_hand_widened(REPEATS))
    # never narrower than Student t on their own spread (t with 1 degree of freedom: 12.7)
    plain_low, plain_high = by_hand_log_t(REPEATS)
    assert estimate.low < plain_low and estimate.high > plain_high
    assert (estimate.high - estimate.low) / (357.7 - 332.1) > 13
    assert 0 < estimate.low < 332.1 < 357.7 < estimate.high
    assert estimate.measurable


def test_two_repeats_far_apart_stay_positive() -> None:
    """On the linear scale a t interval of 10 and 1000 would reach -5,800: the log scale keeps
    a rate above 0, so the figure stays measurable, with an honest (huge) interval."""
    estimate = median_of_repeats([10.0, 1000.0])
    assert estimate.low is not None and estimate.high is not None
    assert 0 < estimate.low < 10.0 and estimate.high > 1000.0
    assert estimate.measurable and estimate.value == pytest.approx(505.0)


def test_three_repeats_student_t_on_logs() -> None:
    repeats = [300.0, 340.0, 380.0]
    estimate = median_of_repeats(repeats)
    assert estimate.n == 3 and estimate.value == 340.0
    assert (estimate.low, estimate.high) == pytest.approx(by_hand_widened(repeats))
    assert estimate.low is not None and estimate.high is not None
    assert estimate.low < 300.0 and estimate.high > 380.0


def test_from_four_repeats_the_same_widened_t() -> None:
    repeats = [300.0, 340.0, 380.0, 390.0]
    estimate = median_of_repeats(repeats)
    assert SMALL == 4
    assert estimate.n == 4
    assert (estimate.low, estimate.high) == pytest.approx(by_hand_widened(repeats))


def test_four_measured_repeats_get_an_interval_wider_than_their_range() -> None:
    """Over 2,697.0, 3,095.4, 3,074.7 and 2,666.8 the percentile bootstrap of the median is
    exactly their range, "2,886 ±214" (the lowest possible median of a resample, the smallest
    value, comes up in 13 of 256 resamples: over 2.5 %). `median_of_repeats` gives an interval
    wider than the range, holding the median."""
    repeats = [2697.0, 3095.4, 3074.7, 2666.8]
    data = np.asarray(repeats)
    old = percentile_interval(np.median(data[block_indices(4, block=1)], axis=1))
    assert old == pytest.approx((min(repeats), max(repeats)))
    estimate = median_of_repeats(repeats)
    assert estimate.low is not None and estimate.high is not None and estimate.value
    assert estimate.low < min(repeats) <= estimate.value <= max(repeats) < estimate.high


def test_identical_repeats_still_carry_the_drift() -> None:
    """Four equal repeats say nothing of the next run: the interval is the drift term alone
    (normal quantile: the term is a measured constant, not estimated), never zero wide."""
    estimate = median_of_repeats([500.0] * 4)
    half = 1.959964 * BETWEEN_RUN_SD
    assert (estimate.low, estimate.high) == pytest.approx(
        (500.0 * math.exp(-half), 500.0 * math.exp(half))
    )


def test_runs_take_t_over_the_runs_with_no_drift_term() -> None:
    """Several runs of a cell see the drift themselves: no drift term (it would count twice
    and never narrow with more runs), n - 1 degrees of freedom, centred on the median."""
    runs = [1.18, 1.0, 0.99, 1.01]
    estimate = median_of_runs(runs)
    assert estimate.n == 4 and estimate.value == pytest.approx(float(np.median(runs)))
    assert (estimate.low, estimate.high) == pytest.approx(by_hand_widened(runs, drift=0.0))
    assert why(median_of_runs([3.0]).reason) == "one run: spread unknown"


def synthetic_runs(
    rng: np.random.Generator, groups: int, within_sd: float, between_sd: float
) -> np.ndarray:
    """(groups, 6 runs, 4 repeats) of throughput: each run's level drifts from the cell's by
    a lognormal between-run term, each repeat from its run's by a lognormal within-run one."""
    level = rng.normal(0.0, between_sd, size=(groups, 6, 1))
    noise = rng.normal(0.0, within_sd, size=(groups, 6, 4))
    return 3000.0 * np.exp(level + noise)


def coverage(
    figures: np.ndarray, interval: Callable[[np.ndarray], tuple[float | None, float | None]]
) -> float:
    """Share of runs whose interval holds the median of the other runs' medians, as
    benchmarks/interval_coverage.py counts it."""
    hits = 0
    for group in figures:
        medians = np.median(group, axis=1)
        for i, repeats in enumerate(group):
            low, high = interval(repeats)
            target = float(np.median(np.delete(medians, i)))
            hits += low is not None and high is not None and low <= target <= high
    return hits / (figures.shape[0] * figures.shape[1])


def now(repeats: np.ndarray) -> tuple[float | None, float | None]:
    estimate = median_of_repeats(list(repeats))
    return estimate.low, estimate.high


def range_of_4(repeats: np.ndarray) -> tuple[float | None, float | None]:
    return float(repeats.min()), float(repeats.max())


def test_intervals_hold_reruns_under_between_run_drift() -> None:
    """Runs whose level drifts between runs by BETWEEN_RUN_SD (the drift this
    machine measured) with repeats as noisy within a run as measured (WITHIN_SD): the widened
    interval holds the other runs' median in >= 85 % of runs, where the range of 4 repeats
    (what the bootstrap printed) and Student t on the repeats alone fall short."""
    figures = synthetic_runs(np.random.default_rng(48), 100, WITHIN_SD, BETWEEN_RUN_SD)
    assert coverage(figures, now) >= 0.85
    assert coverage(figures, range_of_4) < 0.80
    assert coverage(figures, lambda r: by_hand_widened(list(r), drift=0.0)) < 0.85


def test_without_drift_the_interval_is_no_less_honest() -> None:
    """No between-run drift at all: the floor only widens, coverage stays above 85 %."""
    figures = synthetic_runs(np.random.default_rng(4), 100, WITHIN_SD, 0.0)
    assert coverage(figures, now) >= 0.85


def test_one_repeat_still_spread_unknown() -> None:
    estimate = median_of_repeats([332.1])
    assert estimate.low is None and estimate.high is None
    assert why(estimate.reason) == "one repeat: spread unknown"


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("seed", range(20))
def test_no_interval_below_four_is_the_range_of_the_samples(n: int, seed: int) -> None:
    """Whatever 2-3 repeats, the interval is strictly wider than
    their range (a bootstrap's would be inside it) and holds the median."""
    rng = np.random.default_rng(seed)
    repeats = list(100 * np.exp(0.1 * rng.standard_normal(n)))
    estimate = median_of_repeats(repeats)
    assert estimate.low is not None and estimate.high is not None and estimate.value
    assert (estimate.low, estimate.high) == pytest.approx(by_hand_widened(repeats))
    assert 0 < estimate.low < min(repeats) <= estimate.value <= max(repeats) < estimate.high


def test_non_positive_repeats_take_t_on_the_figures_and_the_domain_rule() -> None:
    estimate = median_of_repeats([-1.0, 3.0])
    # t on the figures themselves (no log of a non-positive figure, no relative drift term),
    # its low end clamped to the domain's edge
    low, high = t_interval([-1.0, 3.0], log=False)
    assert (estimate.low, estimate.high) == pytest.approx((max(low, 0.0), high))
    assert not estimate.measurable  # the interval reaches 0: not measurable, as before
    signed = median_of_repeats([-1.0, 3.0], lower=None)
    assert (signed.low, signed.high) == pytest.approx(t_interval([-1.0, 3.0], log=False))


def test_t_interval_needs_two_and_positive_values_on_logs() -> None:
    with pytest.raises(ValueError):
        t_interval([1.0], log=False)
    with pytest.raises(ValueError):
        t_interval([0.0, 1.0], log=True)


# ------------------------------------------------------------------------ steps


def test_a_percentile_of_three_steps_has_no_interval() -> None:
    estimate = percentile_of_steps([0.010, 0.012, 0.011], 95)
    assert estimate.low is None and estimate.high is None
    assert why(estimate.reason) == "range of 3 steps, no interval"
    assert estimate.n == 3 and estimate.measurable
    assert plus_minus(estimate, value_format("seconds")) == "11.9 ms (spread unknown)"
    many = percentile_of_steps([0.010, 0.012, 0.011, 0.013, 0.010, 0.011], 50)
    data = np.asarray([0.010, 0.012, 0.011, 0.013, 0.010, 0.011])
    by_hand = percentile_interval(np.percentile(data[block_indices(data.size)], 50, axis=1))
    assert many.n == 6 and (many.low, many.high) == pytest.approx(by_hand)


def test_a_gap_over_three_steps_takes_student_t() -> None:
    differences = [0.001, 0.002, 0.0015]
    test = paired_gap_test(differences, min_effect_s=1e-4)
    low, high = t_interval(differences, log=False)
    assert (test.low_s, test.high_s) == pytest.approx((low, high))
    assert test.low_s is not None and test.low_s < 0.001 and test.high_s is not None
    assert test.high_s > 0.002
    assert not test.significant  # 3 steps: the signed-rank test cannot reach p < 0.01


# ------------------------------------------------------------------------ ratios


def welch(top: list[float], bottom: list[float]) -> tuple[float, float]:
    x, y = np.log(top), np.log(bottom)
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    df = (vx + vy) ** 2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1))
    half = scipy_stats.t.ppf(0.975, df) * math.sqrt(vx + vy)
    ratio = float(np.median(top) / np.median(bottom))
    return ratio * math.exp(-half), ratio * math.exp(half)


@pytest.mark.parametrize(
    ("top", "bottom"),
    [
        ([90.0, 110.0], [45.0, 55.0]),
        ([700.0, 843.2, 950.0], [300.0, 340.0, 380.0]),
        ([101.0, 99.0, 100.5], [98.0, 99.0, 100.0, 101.0, 102.0, 97.0]),  # 3 vs 6
    ],
)
def test_a_ratio_with_a_small_side_takes_welch_t_on_logs(
    top: list[float], bottom: list[float]
) -> None:
    ratio, low, high = ratio_of_medians(top, bottom)
    assert ratio == pytest.approx(float(np.median(top) / np.median(bottom)))
    assert (low, high) == pytest.approx(welch(top, bottom))
    assert low is not None and high is not None and 0 < low < ratio < high
    assert ratio_method(len(top), len(bottom)).startswith("Welch's t on the log ratio")


def test_a_ratio_of_four_a_side_is_bootstrapped() -> None:
    _, low, high = ratio_of_medians([2.0, 2.1, 1.9, 2.05], [1.0, 1.1, 0.9, 1.05])
    assert low is not None and high is not None
    assert ratio_method(4, 4).startswith("percentile bootstrap")
    assert ratio_method(1, 4).startswith("no interval")


def test_ratio_of_medians_edges() -> None:
    assert ratio_of_medians([2.0], [1.0, 1.0]) == (2.0, None, None)
    assert ratio_of_medians([2.0, 2.0], [1.0, 1.0, 1.0]) == (2.0, 2.0, 2.0)  # no spread
    assert ratio_of_medians([-1.0, 2.0], [1.0, 1.0]) == (0.5, None, None)  # no log


# ------------------------------------------------------------------------ printing


def est(value: float, low: float, high: float) -> Estimate:
    return Estimate(value=value, low=low, high=high, n=2, measurable=True)


@pytest.mark.parametrize(
    ("value", "low", "high", "expected"),
    [
        (12.3, 11.1, 13.5, False),  # symmetric
        (100.0, 90.0, 114.0, False),  # 1.4 to 1: still ± (within LOPSIDED)
        (0.302, 0.130, 0.844, True),  # a measured efficiency: 17.2 below, 54.2 above
        (10.9e-3, 1.43e-3, 29.3e-3, True),  # a measured p95
        (1.1, 0.1, 2.5, True),  # 1.0 below, 1.4 above, but 1.1 ± 1.2 would reach below 0
        (5.0, 6.0, 7.0, True),  # a value outside its interval
        (-1.0, -3.0, 1.0, False),  # a signed figure (a gap): ± is fine below 0
        (2.0, 2.0, 2.0, False),  # no width
    ],
)
def test_what_is_lopsided(value: float, low: float, high: float, expected: bool) -> None:
    assert lopsided(value, low, high) is expected


def test_lopsided_intervals_print_as_brackets_never_plus_minus() -> None:
    pct = value_format("ratio_pct")
    seconds = value_format("seconds")
    # rounded to what the interval supports: a 71-point interval holds no decimals
    assert plus_minus(est(0.302, 0.130, 0.844), pct) == "30 % [13, 84]"
    assert plus_minus(est(10.9e-3, 1.43e-3, 29.3e-3), seconds) == "11 ms [1, 29]"
    assert plus_minus(est(12.3e-3, 11.1e-3, 13.5e-3), seconds) == "12.3 ms ±1.2 ms"
    # the measured two repeats as a table cell
    two = median_of_repeats(REPEATS)
    text = compact(two.value, two.low, two.high, "rate")
    assert text == "340 [210, 560]"  # rounded to what a 343-wide interval supports
    assert "±" not in text
    # an efficiency in a table (was "30.2 % ±35.7 %": 30.2 - 35.7 is below 0)
    assert efficiency_text(0.302, 0.130, 0.844) == "30 % [13, 84]"


def test_the_terminal_table_prints_lopsided_throughput_as_brackets() -> None:
    two = median_of_repeats(REPEATS)
    row = pd.Series({"samples_per_s": two.value, "samples_per_s_low": two.low,
                     "samples_per_s_high": two.high})  # fmt: skip
    assert _throughput(row) == "340 [210, 560]"  # as the report writes it
    even = pd.Series({"samples_per_s": 4075.9, "samples_per_s_low": 4067.1,
                      "samples_per_s_high": 4084.7})  # fmt: skip
    assert _throughput(even) == "4,076±9"


def test_small_figures_keep_their_digits_on_the_terminal() -> None:
    """A throughput of 0.42 samples/s (a large model on CPU) is never "0 [0, 1]"."""
    from torchscale.contracts.wording.spell import readable

    small = pd.Series({"samples_per_s": 0.4213, "samples_per_s_low": 0.3902,
                       "samples_per_s_high": 0.4526})  # fmt: skip
    assert _throughput(small) == "0.421±0.031"
    lopsided_small = pd.Series({"samples_per_s": 0.42, "samples_per_s_low": 0.30,
                                "samples_per_s_high": 0.70})  # fmt: skip
    assert _throughput(lopsided_small) == "0.42 [0.30, 0.70]"
    # an interval wider than the figure (0.42 in [0.05, 1.90]): no digits, as every table
    too_wide = lopsided_small.copy()
    too_wide["samples_per_s_low"], too_wide["samples_per_s_high"] = 0.05, 1.9
    assert _throughput(too_wide) == "not measurable"
    figures = (2886.4, 123.4, 99.96, 42.13, 9.996, 7.318, 0.4213, 0.0042, 4.2e-7, 0.0, -3.14)
    assert [readable(v) for v in figures] == [
        "2,886",
        "123",
        "100",
        "42.1",
        "10.0",
        "7.32",
        "0.421",
        "0.00420",
        "4.2e-07",
        "0",
        "-3.14",
    ]
    assert [readable(v) for v in (math.nan, math.inf)] == ["nan", "inf"]


def test_changes_of_a_percentage_are_points() -> None:
    assert format_value(0.115, "change_pts") == "+11.5 pts"
    assert format_value(-0.2, "change_pts") == "-20.0 pts"
    assert format_value(0.0, "change_pts") == "+0.0 pts"
    assert tick_labels([-0.1, 0.0, 0.1], "change_pts") == ["-10 pts", "0 pts", "+10 pts"]
