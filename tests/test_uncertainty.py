"""Honest uncertainty (issue 38, point 4): no "95 % interval" drawn from fewer than 4 samples by
bootstrap (with 2 repeats that bootstrap is their range), intervals printed as [lo, hi] where
'±' would misstate them, and changes of a percentage in points. Known answers by hand
(`torchscale.offline.analysis.uncertainty`, `torchscale.interfaces.report.estimates`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from torchscale.contracts.schema.cell_result import Estimate
from torchscale.interfaces.report.estimates import (
    compact,
    efficiency_text,
    long_form,
    lopsided,
    plus_minus,
    value_format,
    with_interval,
)
from torchscale.interfaces.report.render.formatting import format_value, tick_labels
from torchscale.interfaces.report.terminal.sweep_tables import _throughput
from torchscale.offline.analysis.uncertainty import (
    SMALL,
    median_of_repeats,
    paired_gap_test,
    percentile_of_steps,
    ratio_method,
    ratio_of_medians,
    t_interval,
)

# the cell: tiny-gpt2 b32 x2, two repeats, printed "95 % interval 332.1 to 357.7"
REPEATS = [332.1, 357.7]


def by_hand_log_t(values: list[float]) -> tuple[float, float]:
    """Student t interval of the mean of log values, exponentiated, written out."""
    logs = [math.log(v) for v in values]
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = scipy_stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    return math.exp(mean - half), math.exp(mean + half)


# ------------------------------------------------------------------------ repeats


def test_two_repeats_are_not_a_95_pct_interval_of_their_range() -> None:
    estimate = median_of_repeats(REPEATS)
    assert estimate.value == pytest.approx(344.9)
    assert estimate.n == 2
    assert estimate.method == "Student t on log throughput, 2 repeats"
    assert estimate.low is not None and estimate.high is not None
    assert (estimate.low, estimate.high) != pytest.approx((332.1, 357.7))
    assert (estimate.low, estimate.high) == pytest.approx(by_hand_log_t(REPEATS))
    assert estimate.low == pytest.approx(215.03, abs=0.01)
    assert estimate.high == pytest.approx(552.44, abs=0.01)
    # about 13 times the range (t with 1 degree of freedom: 12.7), and positive
    assert (estimate.high - estimate.low) / (357.7 - 332.1) == pytest.approx(13.2, abs=0.1)
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
    assert estimate.method == "Student t on log throughput, 3 repeats"
    assert estimate.n == 3 and estimate.value == 340.0
    assert (estimate.low, estimate.high) == pytest.approx(by_hand_log_t(repeats))
    assert estimate.low is not None and estimate.high is not None
    assert estimate.low < 300.0 and estimate.high > 380.0


def test_from_four_repeats_the_bootstrap() -> None:
    estimate = median_of_repeats([300.0, 340.0, 380.0, 390.0])
    assert SMALL == 4
    assert estimate.method == "bootstrap of the median over 4 repeats"
    assert estimate.low is not None and estimate.high is not None


def test_one_repeat_still_spread_unknown() -> None:
    estimate = median_of_repeats([332.1])
    assert estimate.low is None and estimate.high is None
    assert estimate.reason == "one repeat: spread unknown"


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("seed", range(20))
def test_no_interval_below_four_is_the_range_of_the_samples(n: int, seed: int) -> None:
    """The done-when of the issue: whatever 2-3 repeats, the interval is strictly wider than
    their range (a bootstrap's would be inside it) and holds the median."""
    rng = np.random.default_rng(seed)
    repeats = list(100 * np.exp(0.1 * rng.standard_normal(n)))
    estimate = median_of_repeats(repeats)
    assert estimate.low is not None and estimate.high is not None and estimate.value
    assert estimate.method.startswith("Student t")
    assert 0 < estimate.low < min(repeats) <= estimate.value <= max(repeats) < estimate.high


def test_non_positive_repeats_take_t_on_the_figures_and_the_domain_rule() -> None:
    estimate = median_of_repeats([-1.0, 3.0])
    assert estimate.method == "Student t on throughput, 2 repeats"
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
    assert estimate.reason == "range of 3 steps, no interval"
    assert estimate.n == 3 and estimate.measurable
    assert with_interval(estimate, value_format("seconds")) == (
        "11.9 ms (range of 3 steps, no interval)"
    )
    many = percentile_of_steps([0.010, 0.012, 0.011, 0.013, 0.010, 0.011], 50)
    assert many.low is not None and many.method.startswith("moving-block bootstrap")


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
    return Estimate(value=value, low=low, high=high, n=2, method="test", measurable=True)


@pytest.mark.parametrize(
    ("value", "low", "high", "expected"),
    [
        (12.3, 11.1, 13.5, False),  # symmetric
        (100.0, 90.0, 114.0, False),  # 1.4 to 1: still ± (within LOPSIDED)
        (0.302, 0.130, 0.844, True),  # the efficiency: 17.2 below, 54.2 above
        (10.9e-3, 1.43e-3, 29.3e-3, True),  # the p95
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
    # rounded to what the interval supports (issue 40): a 71-point interval holds no decimals
    assert plus_minus(est(0.302, 0.130, 0.844), pct) == "30 % [13 %, 84 %]"
    assert plus_minus(est(10.9e-3, 1.43e-3, 29.3e-3), seconds) == "10.9 ms [1.4 ms, 29.3 ms]"
    assert plus_minus(est(12.3e-3, 11.1e-3, 13.5e-3), seconds) == "12.3 ms ±1.2 ms"
    # the two repeats as a table cell
    two = median_of_repeats(REPEATS)
    text = compact(two.value, two.low, two.high, "rate")
    assert text == "340 [220, 550]"  # rounded to what a 337-wide interval supports
    assert "±" not in text
    # an efficiency in a table (was "30.2 % ±35.7 %": 30.2 - 35.7 is below 0)
    assert efficiency_text(0.302, 0.130, 0.844) == "30 % [13 %, 84 %]"
    # the long form states the interval either way
    assert long_form(0.302, 0.130, 0.844, "ratio_pct") == ("30 % (95 % interval 13 % to 84 %)")


def test_the_terminal_table_prints_lopsided_throughput_as_brackets() -> None:
    two = median_of_repeats(REPEATS)
    row = pd.Series({"samples_per_s": two.value, "samples_per_s_low": two.low,
                     "samples_per_s_high": two.high})  # fmt: skip
    assert _throughput(row) == "345 [215, 552]"
    even = pd.Series({"samples_per_s": 4075.9, "samples_per_s_low": 4067.1,
                      "samples_per_s_high": 4084.7})  # fmt: skip
    assert _throughput(even) == "4,076±9"


def test_changes_of_a_percentage_are_points() -> None:
    assert format_value(0.115, "change_pts") == "+11.5 pts"
    assert format_value(-0.2, "change_pts") == "-20.0 pts"
    assert format_value(0.0, "change_pts") == "+0.0 pts"
    assert tick_labels([-0.1, 0.0, 0.1], "change_pts") == ["-10 pts", "0 pts", "+10 pts"]
