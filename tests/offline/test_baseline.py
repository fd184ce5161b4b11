"""Comparison with a baseline (`torchscale.offline.analysis.regressions`) on synthetic cells tables
whose answers are known: the rule on per-repeat figures (identical distributions with noise are no
change, a 15 % shift with enough repeats is a regression, 2-3 repeats are "not enough repeats"
whatever the change), the matching rules, what is counted and what only shown."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from torchscale.offline.analysis.numbers import parse_repeats
from torchscale.offline.analysis.regression_rule import (
    ALPHA,
    METRICS,
    MIN_EFFECT,
    POWER,
    RULE,
    STEP_REPEATS,
    RegressionRule,
    detectable_regression,
    judge_change,
    min_p_value,
)
from torchscale.offline.analysis.regressions import (
    compare,
    match_cells,
    pair_columns,
    with_step_repeats,
)
from torchscale.offline.analysis.uncertainty import log_ratio_t_interval, ratio_of_medians


def noisy(median: float, n: int, seed: int, cv: float = 0.03) -> list[float]:
    """n per-repeat figures around `median` with a relative noise `cv` (seeded)."""
    rng = np.random.default_rng(seed)
    return list(median * (1 + cv * rng.standard_normal(n)))


def joined(values: list[float]) -> str:
    """As the cells table holds them (`samples_per_s_repeats`)."""
    return ";".join(f"{v:.6g}" for v in values)


def cell(**changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "cell_id": "m__b8__w1",
        "status": "ok",
        "model_label": "m",
        "batch_size": 8,
        "world_size": 1,
        "precision": "fp32",
        "strategy": "ddp",
        "device": "cuda",
        "definition_sha256": "h1",
        "samples_per_s": 100.0,
        "samples_per_s_repeats": "100",
        "step_p50_s": 0.1,
        STEP_REPEATS: None,
        "scaling_efficiency": 1.0,
        "comm_overhead": None,
        "peak_allocated_bytes": None,
        "peak_rss_bytes": 1000,
    }
    row.update(changes)
    return row


def measured(values: list[float], **changes: Any) -> dict[str, Any]:
    """A cell whose throughput repeats are `values` (its samples/s their median)."""
    return cell(
        samples_per_s=float(np.median(values)), samples_per_s_repeats=joined(values), **changes
    )


def table(*rows: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


# ------------------------------------------------------------------------ the rule


def test_the_rule_parameters() -> None:
    assert (RULE.alpha, RULE.min_effect) == (ALPHA, MIN_EFFECT)
    assert min_p_value(3, 3) == pytest.approx(0.1)
    assert min_p_value(4, 4) == pytest.approx(2 / 70)
    assert min_p_value(3, 4) == pytest.approx(2 / 35)  # 0.057: still not enough at 0.05
    assert RULE.repeats_needed == 4
    assert RegressionRule(alpha=0.01).repeats_needed == 5
    assert not RULE.enough(3, 3) and not RULE.enough(3, 4) and RULE.enough(4, 4)
    assert not RULE.enough(1, 100)  # one repeat has no spread
    text = RULE.describe()
    assert (
        "Welch t-test on the log figures" in text
        and "p < 0.05" in text
        and f"{MIN_EFFECT * 100:g} %" in text
    )
    with pytest.raises(ValueError, match="alpha"):
        RegressionRule(alpha=0)
    with pytest.raises(ValueError, match="min_effect"):
        RegressionRule(min_effect=-0.1)


@pytest.mark.parametrize("seed", range(10))
def test_identical_distributions_with_noise_are_no_change(seed: int) -> None:
    base, now = noisy(100, 10, seed), noisy(100, 10, seed + 1000)
    verdict = judge_change(base, now, higher_is_better=True)
    assert verdict.outcome == "no significant change", verdict.reason
    assert verdict.p_value is not None and (verdict.n_baseline, verdict.n_current) == (10, 10)


@pytest.mark.parametrize("seed", range(10))
def test_a_15_pct_drop_with_enough_repeats_is_a_regression(seed: int) -> None:
    base, now = noisy(100, 10, seed), noisy(85, 10, seed + 1000)
    verdict = judge_change(base, now, higher_is_better=True)
    assert verdict.outcome == "regression", verdict.reason
    assert verdict.p_value is not None and verdict.p_value < ALPHA
    assert verdict.change == pytest.approx(np.median(now) / np.median(base) - 1)
    low, change, high = verdict.low, verdict.change, verdict.high
    assert low is not None and change is not None and high is not None
    assert low <= change <= high < -MIN_EFFECT
    # the same change the other way is an improvement
    assert judge_change(now, base, higher_is_better=True).outcome == "improvement"


def test_step_time_regresses_upwards() -> None:
    base, now = noisy(0.100, 10, 1), noisy(0.115, 10, 2)
    assert judge_change(base, now, higher_is_better=False).outcome == "regression"
    assert judge_change(now, base, higher_is_better=False).outcome == "improvement"


@pytest.mark.parametrize(("n_base", "n_now"), [(2, 2), (3, 3), (2, 6), (3, 4), (1, 20)])
def test_too_few_repeats_are_never_a_verdict(n_base: int, n_now: int) -> None:
    # a 50 % drop, every repeat apart: still no regression without enough repeats
    verdict = judge_change(noisy(100, n_base, 1), noisy(50, n_now, 2), higher_is_better=True)
    assert verdict.outcome == "not enough repeats"
    assert verdict.p_value is None
    assert f"{n_base} vs {n_now} repeats" in verdict.reason
    assert "need 4 per side" in verdict.reason
    assert verdict.change == pytest.approx(-0.5, abs=0.1)


def test_four_against_four_can_judge() -> None:
    verdict = judge_change([100, 101, 102, 103], [90, 91, 92, 93], higher_is_better=True)
    assert verdict.outcome == "regression"
    assert verdict.p_value is not None and verdict.p_value < ALPHA


def test_a_41_pct_drop_over_4_against_4_runs_is_a_regression() -> None:
    # measured: 4 runs a side, the median 41 % lower, one baseline run slow (a neighbour hit
    # it) so that the fastest current run beats it. The exact Mann-Whitney U test gives 4 / 70
    # = 0.057 here (only complete separation reaches 2 / 70 with 4 + 4): "no significant
    # change"; Welch's test on the log figures weighs the distance
    base = [73.1, 115.9, 116.3, 119.3]
    now = [56.7, 68.3, 68.9, 74.5]
    verdict = judge_change(base, now, higher_is_better=True, unit="runs")
    assert verdict.outcome == "regression", verdict.reason
    assert verdict.change == pytest.approx(68.6 / 116.1 - 1, abs=1e-3)  # -41 %
    assert verdict.p_value is not None and verdict.p_value < ALPHA < 4 / 70
    assert verdict.high is not None and verdict.high < -MIN_EFFECT
    assert "4 vs 4 runs" in verdict.reason


def test_a_41_pct_drop_over_4_against_4_runs_is_normally_judged() -> None:
    # simulated runs, 4 a side, log-normal spread 8 % (twice the VM's quiet-day spread), a 41 %
    # drop: judged a regression in nearly every pair; the same runs unchanged almost never
    rng = np.random.default_rng(38)

    def side(level: float) -> list[float]:
        return list(level * np.exp(0.08 * rng.standard_normal(4)))

    found = sum(
        judge_change(side(100), side(59), higher_is_better=True, unit="runs").outcome
        == "regression"
        for _ in range(60)
    )
    false = sum(
        judge_change(side(100), side(100), higher_is_better=True, unit="runs").outcome
        in ("regression", "improvement")
        for _ in range(60)
    )
    assert found >= 58 and false <= 2, (found, false)


def test_three_against_five_takes_welch_t_for_its_interval() -> None:
    """3 vs 5 can reach p < 0.05 (2 / 56), but a bootstrap of 3 figures is about their range:
    the ratio's interval is Welch's t on the log ratio; still a regression here."""
    base, now = [100.0, 101.0, 102.0], [80.0, 81.0, 82.0, 83.0, 84.0]
    verdict = judge_change(base, now, higher_is_better=True)
    ratio, low, high = ratio_of_medians(now, base)
    assert low is not None and high is not None
    expected = log_ratio_t_interval(np.array(now), np.array(base), centre=ratio)
    assert (low, high) == pytest.approx(expected)
    assert (verdict.low, verdict.high) == pytest.approx((low - 1, high - 1))
    assert verdict.outcome == "regression"


def test_a_significant_change_below_the_minimum_effect_is_no_change() -> None:
    # 3 % slower, every repeat apart: p is tiny, the change is too small to act on
    base = [100, 101, 99, 100.5, 99.5, 100.2, 99.8, 100.1]
    now = [97, 97.2, 96.8, 97.1, 96.9, 97.3, 96.7, 97.0]
    verdict = judge_change(base, now, higher_is_better=True)
    assert verdict.p_value is not None and verdict.p_value < 0.01
    assert verdict.outcome == "no significant change"
    assert "smaller than 5 %" in verdict.reason
    assert judge_change(base, now, higher_is_better=True, rule=RegressionRule(min_effect=0.02))
    assert (
        judge_change(base, now, higher_is_better=True, rule=RegressionRule(min_effect=0.02)).outcome
        == "regression"
    )


def test_an_interval_reaching_inside_the_minimum_effect_is_no_change() -> None:
    # median 5.8 % lower and p < 0.01, but the interval reaches -2.2 %: maybe a small change
    base = [100, 101, 99, 100.5, 99.5, 100.2, 99.8, 100.1]
    now = [94, 93, 95, 99.5, 92, 94.5, 98, 93.5]
    verdict = judge_change(base, now, higher_is_better=True)
    assert verdict.p_value is not None and verdict.p_value < 0.01
    assert verdict.change is not None and verdict.change < -MIN_EFFECT
    assert verdict.outcome == "no significant change"
    assert "interval reaches within 5 %" in verdict.reason


def test_detectable_regression_from_the_interval_width() -> None:
    # ratio interval 0.95..1.05: se of the log ratio = log(1.05 / 0.95) / (2 x 1.96); over 8 vs
    # 8 units (t with 14 degrees of freedom: 2.1448 and 1.7613) a drop is found 95 % of the
    # time once the log ratio <= log(0.95) - (2.1448 + 1.7613) x se
    se = np.log(1.05 / 0.95) / (2 * 1.959964)
    shift = (2.144787 + 1.761310) * se
    drop = detectable_regression(0.95, 1.05, 0.05, higher_is_better=True, units=16)
    rise = detectable_regression(0.95, 1.05, 0.05, higher_is_better=False, units=16)
    assert drop == pytest.approx(1 - 0.95 * np.exp(-shift), rel=1e-4)
    assert rise == pytest.approx(1.05 * np.exp(shift) - 1, rel=1e-4)
    same = detectable_regression(1.0, 1.0, 0.05, higher_is_better=True, units=16)
    assert same == pytest.approx(0.05)
    assert detectable_regression(0.0, 1.0, 0.05, higher_is_better=True, units=16) is None
    assert detectable_regression(0.9, 1.1, 0.05, higher_is_better=True, units=2) is None


def test_a_no_change_verdict_says_what_it_could_have_seen() -> None:
    tight = judge_change(
        noisy(100, 10, 1, cv=0.01), noisy(100, 10, 2, cv=0.01), higher_is_better=True
    )
    loose = judge_change(
        noisy(100, 10, 1, cv=0.08), noisy(100, 10, 2, cv=0.08), higher_is_better=True
    )
    assert tight.outcome == loose.outcome == "no significant change"
    assert tight.detectable is not None and loose.detectable is not None
    assert MIN_EFFECT < tight.detectable < loose.detectable
    assert f"{loose.detectable * 100:.0f} % or more would be found" in loose.reason
    few = judge_change(noisy(100, 3, 1), noisy(100, 3, 2), higher_is_better=True)
    assert few.outcome == "not enough repeats" and few.detectable is None


def test_the_comparison_names_the_largest_drop_its_unchanged_cells_may_hide() -> None:
    base = [
        measured(noisy(100, 10, seed), cell_id=f"c{i}", definition_sha256=f"h{i}")
        for i, seed in ((0, 1), (1, 2))
    ]
    now = [
        measured(noisy(100, 10, 11, cv=0.01), cell_id="c0", definition_sha256="h0"),
        measured(noisy(100, 10, 12, cv=0.10), cell_id="c1", definition_sha256="h1"),
    ]
    comparison = compare(table(*now), table(*base))
    assert list(comparison.pairs["verdict"]) == ["no significant change"] * 2
    detectable = list(comparison.pairs["samples_per_s_detectable"])
    assert comparison.largest_undetectable == pytest.approx(max(detectable))
    assert detectable[1] > detectable[0] > MIN_EFFECT
    # nothing judged unchanged: nothing to say
    few = compare(table(measured([100.0, 101.0])), table(measured([99.0, 100.0])))
    assert few.largest_undetectable is None


def test_the_detectable_drop_is_found_about_as_often_as_it_says() -> None:
    # calibration of the normal approximation on log-normal runs (8 a side, spread 5 %): the
    # drop the rule says it finds 95 % of the time at this spread, once real, is found in
    # about that share of fresh pairs (the exact test and small samples make it approximate)
    rng = np.random.default_rng(7)

    def side(shift: float) -> list[float]:
        return list(100 * np.exp(shift + 0.05 * rng.standard_normal(8)))

    pilot = [
        judge_change(side(0), side(0), higher_is_better=True, unit="runs").detectable
        for _ in range(15)
    ]
    said = float(np.median([d for d in pilot if d is not None]))
    assert 0.08 < said < 0.2
    drop = np.log(1 - said)
    found = sum(
        judge_change(side(0), side(drop), higher_is_better=True, unit="runs").outcome
        == "regression"
        for _ in range(80)
    )
    assert 0.8 <= found / 80 <= 1.0, (said, found)
    half = np.log(1 - said / 2)
    found_half = sum(
        judge_change(side(0), side(half), higher_is_better=True, unit="runs").outcome
        == "regression"
        for _ in range(80)
    )
    assert found_half / 80 < POWER - 0.2, (said, found_half)


def test_identical_repeats_are_no_change() -> None:
    verdict = judge_change([100.0] * 5, [100.0] * 5, higher_is_better=True)
    assert (verdict.outcome, verdict.p_value, verdict.change) == ("no significant change", 1, 0)


@pytest.mark.parametrize(
    ("baseline", "current"), [([], [1.0, 2.0]), ([1.0, 2.0], []), ([0.0, 0.0], [1.0, 2.0])]
)
def test_missing_figures_are_not_compared(baseline: list[float], current: list[float]) -> None:
    verdict = judge_change(baseline, current, higher_is_better=True)
    assert verdict.outcome == "n/a"
    assert verdict.change is None


def test_parse_repeats() -> None:
    assert parse_repeats("1.5;2;3e2") == [1.5, 2.0, 300.0]
    assert parse_repeats("1;nan;x; ;2") == [1.0, 2.0]
    assert parse_repeats([1, 2.5]) == [1.0, 2.5]
    for missing in (None, float("nan"), "", pd.NA):
        assert parse_repeats(missing) == []


def test_step_repeats_are_each_repeats_median_over_ranks() -> None:
    steps = pd.DataFrame(
        [
            # cell a, repeat 0: median of 0.1, 0.2 (rank 0) and 0.3, 0.4 (rank 1) = 0.25
            ("a", 0, "sync", 0, 0, 0.1),
            ("a", 0, "sync", 0, 1, 0.2),
            ("a", 1, "sync", 0, 0, 0.3),
            ("a", 1, "sync", 0, 1, 0.4),
            # repeat 1: 0.5
            ("a", 0, "sync", 1, 0, 0.5),
            ("a", 1, "sync", 1, 0, 0.5),
            ("a", 0, "no_sync", 1, 1, 9.0),  # no_sync windows are not the step time
        ],
        columns=["cell_id", "rank", "window", "repeat", "step", "time_s"],
    )
    cells = table(cell(cell_id="a"), cell(cell_id="b"))
    out = with_step_repeats(cells, steps)
    assert parse_repeats(out.loc[0, STEP_REPEATS]) == [0.25, 0.5]
    assert pd.isna(out.loc[1, STEP_REPEATS])  # no step records: not judged
    assert STEP_REPEATS not in cells.columns or cells[STEP_REPEATS].isna().all()
    # keyed by experiment where both tables have it
    both = with_step_repeats(cells.assign(experiment=["x", "y"]), steps.assign(experiment="y"))
    assert pd.isna(both.loc[0, STEP_REPEATS])
    assert pd.isna(with_step_repeats(cells, steps.iloc[0:0]).loc[0, STEP_REPEATS])


# ------------------------------------------------------------------------ matching


def test_cells_match_by_definition_then_by_key() -> None:
    current = table(
        cell(cell_id="a", definition_sha256="h1"),
        cell(cell_id="b", definition_sha256="new", world_size=2),
        cell(cell_id="c", definition_sha256="h9", model_label="other"),
    )
    baseline = table(
        cell(cell_id="a0", definition_sha256="h1"),
        cell(cell_id="b0", definition_sha256="old", world_size=2),
        cell(cell_id="d0", definition_sha256="h8", world_size=4),
    )
    pairs, only_current, only_baseline = match_cells(current, baseline)
    assert sorted(pairs) == [(0, 0, "definition"), (1, 1, "key")]
    assert list(only_current) == [2]
    assert list(only_baseline) == [2]
    assert "no cell" in only_current[2]


def test_an_ambiguous_key_is_not_guessed() -> None:
    current = table(cell(cell_id="a", definition_sha256="x1"))
    baseline = table(
        cell(cell_id="b", definition_sha256="y1"), cell(cell_id="c", definition_sha256="y2")
    )
    comparison = compare(current, baseline)
    assert comparison.pairs.empty
    assert list(comparison.only_current["cell_id"]) == ["a"]
    assert list(comparison.only_baseline["cell_id"]) == ["b", "c"]
    assert comparison.only_baseline["why"].str.contains("ambiguous").all()
    assert comparison.regressions == 0


# ------------------------------------------------------------------------ compare


def test_regressions_counted_improvements_shown() -> None:
    base = noisy(100, 10, 1)
    baseline = table(
        measured(base, cell_id="reg", definition_sha256="1"),
        measured(base, cell_id="same", definition_sha256="2"),
        measured(base, cell_id="better", definition_sha256="3"),
        measured(base[:3], cell_id="few", definition_sha256="4"),
    )
    current = table(
        measured(noisy(85, 10, 2), cell_id="reg", definition_sha256="1"),
        measured(noisy(100, 10, 3), cell_id="same", definition_sha256="2", scaling_efficiency=0.5),
        measured(noisy(120, 10, 4), cell_id="better", definition_sha256="3"),
        measured(noisy(50, 3, 5), cell_id="few", definition_sha256="4"),
    )
    comparison = compare(current, baseline)
    pairs = comparison.pairs.set_index("cell_id")
    assert list(comparison.pairs.columns) == pair_columns()
    assert pairs.loc["reg", "samples_per_s_verdict"] == "regression"
    assert pairs.loc["reg", "samples_per_s_repeats"] == "10 vs 10"
    assert pairs.loc["reg", "samples_per_s_p_value"] < ALPHA
    assert pairs.loc["same", "samples_per_s_verdict"] == "no significant change"
    assert pairs.loc["better", "verdict"] == "improvement"
    # halved with 3 repeats: not judged, and said why
    assert pairs.loc["few", "verdict"] == "not enough repeats"
    assert "need 4 per side" in pairs.loc["few", "samples_per_s_why"]
    # scaling efficiency halved: shown as a change, never judged
    assert pairs.loc["same", "scaling_efficiency_change"] == pytest.approx(-0.5)
    assert pairs.loc["same", "verdict"] == "no significant change"
    assert list(pairs.index[pairs["regression"]]) == ["reg"]
    assert (comparison.regressions, comparison.improvements) == (1, 1)
    assert (comparison.unchanged, comparison.not_enough_repeats, comparison.judged) == (1, 1, 3)


def test_an_unchanged_rerun_is_no_regression() -> None:
    """The same config run twice is no 'regression' and no 'improvement', whatever the seed."""
    for seed in range(10):
        sides = [
            table(
                *(
                    measured(noisy(100 * k, 10, 100 * side + 10 * seed + k), cell_id=f"c{k}")
                    for k in range(1, 6)
                )
            )
            for side in (0, 1)
        ]
        baseline, current = (t.assign(definition_sha256=t["cell_id"]) for t in sides)
        comparison = compare(current, baseline)
        assert comparison.regressions == comparison.improvements == 0
        assert comparison.unchanged == 5


def test_step_time_alone_can_regress() -> None:
    base = noisy(100, 10, 1)
    baseline = table(measured(base, **{STEP_REPEATS: joined(noisy(0.1, 10, 2))}))
    current = table(measured(base, **{STEP_REPEATS: joined(noisy(0.12, 10, 3))}))
    comparison = compare(current, baseline)
    pairs = comparison.pairs
    assert pairs.loc[0, "samples_per_s_verdict"] == "no significant change"
    assert pairs.loc[0, "step_p50_s_verdict"] == "regression"
    assert pairs.loc[0, "verdict"] == "regression"
    assert comparison.regressions == 1


def test_step_time_without_step_records_is_not_judged() -> None:
    base = noisy(100, 10, 1)
    pairs = compare(table(measured(noisy(100, 10, 2))), table(measured(base))).pairs
    assert pairs.loc[0, "step_p50_s_verdict"] == "n/a"
    assert pairs.loc[0, "verdict"] == "no significant change"


def test_a_cell_that_breaks_is_a_regression_one_that_is_fixed_an_improvement() -> None:
    baseline = table(
        cell(cell_id="x", definition_sha256="1"),
        cell(cell_id="y", definition_sha256="2", status="failed", samples_per_s=None),
    )
    current = table(
        cell(cell_id="x", definition_sha256="1", status="oom", samples_per_s=None),
        cell(cell_id="y", definition_sha256="2"),
    )
    comparison = compare(current, baseline)
    pairs = comparison.pairs.set_index("cell_id")
    assert pairs.loc["x", "status_change"] == "broke"
    assert pairs.loc["y", "status_change"] == "fixed"
    assert pairs.loc["x", "samples_per_s_verdict"] == "n/a"
    assert list(pairs["verdict"]) == ["regression", "improvement"]
    # with one repeat: a broken cell is a regression all the same
    assert (comparison.regressions, comparison.improvements) == (1, 1)


def test_a_skipped_cell_is_not_a_regression() -> None:
    current = table(cell(status="skipped", samples_per_s=None))
    comparison = compare(current, table(cell()))
    assert comparison.regressions == 0
    assert comparison.pairs.loc[0, "verdict"] == "not compared"
    assert comparison.judged == 0


def test_peak_memory_compared_on_one_basis() -> None:
    baseline = table(cell(peak_allocated_bytes=1000, peak_rss_bytes=5000))
    current = table(cell(peak_allocated_bytes=1500, peak_rss_bytes=5000))
    pairs = compare(current, baseline).pairs
    assert pairs.loc[0, "peak_memory_kind"] == "allocated"
    assert pairs.loc[0, "peak_memory_bytes_change"] == pytest.approx(0.5)
    mixed = compare(table(cell(peak_allocated_bytes=1500, peak_rss_bytes=6000)), table(cell()))
    assert mixed.pairs.loc[0, "peak_memory_kind"] == "rss"
    assert mixed.pairs.loc[0, "peak_memory_bytes_change"] == pytest.approx(5.0)


def test_changes_of_a_share_are_in_points() -> None:
    """Efficiency 30.2 % -> 108.4 % is +78.2 points, not the relative +258.9 %; exposed
    communication likewise; memory stays relative."""
    baseline = table(cell(scaling_efficiency=0.302, comm_overhead=0.10))
    current = table(cell(scaling_efficiency=1.084, comm_overhead=0.25, peak_rss_bytes=1500))
    pairs = compare(current, baseline).pairs
    assert pairs.loc[0, "scaling_efficiency_change"] == pytest.approx(0.782)
    assert pairs.loc[0, "comm_overhead_change"] == pytest.approx(0.15)
    assert pairs.loc[0, "peak_memory_bytes_change"] == pytest.approx(0.5)
    points = {m.key for m in METRICS if m.points}
    assert points == {"scaling_efficiency", "comm_overhead"}


def test_only_throughput_and_step_time_are_judged() -> None:
    assert [m.key for m in METRICS if m.tested] == ["samples_per_s", "step_p50_s"]
    assert all(m.judged_by for m in METRICS)


def test_empty_sides() -> None:
    comparison = compare(table(cell()).iloc[0:0], table(cell()))
    assert comparison.pairs.empty
    assert len(comparison.only_baseline) == 1
    assert comparison.regressions == 0
    assert comparison.judged == 0


def test_a_pair_is_judged_only_under_comparable_load() -> None:
    """A busy host slows a run by more than the changes the rule looks for: a pair whose two
    runs were loaded differently (one busy, one quiet; or one without a host-load record) is
    neither a regression nor a pass, and says why; so is one run a side on a busy machine
    (it cannot see how far runs drift apart). Loaded alike with several runs a side (a CI
    runner that is always shared), the pair is judged, with a note; quiet, judged as ever."""
    from torchscale.offline.analysis.regressions import compare

    quiet = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2]
    slower = [80.0, 81.0, 79.0, 80.5, 79.5, 80.2]

    def table(
        repeats: list[float], busy: bool | None, cores: float | None, runs: int = 1
    ) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "experiment": f"run-{i}",
                    "cell_id": "c",
                    "definition_sha256": "d" * 64,
                    "model_label": "tiny-mlp",
                    "batch_size": 8,
                    "world_size": 2,
                    "precision": "fp32",
                    "strategy": "ddp",
                    "device": "cpu",
                    "status": "ok",
                    "samples_per_s": float(np.median(repeats)),
                    "samples_per_s_repeats": ";".join(str(r) for r in repeats),
                    "busy_machine": busy,
                    "other_cpu_cores": cores,
                }
                for i in range(runs)
            ]
        )

    judged = compare(table(slower, False, 0.0), table(quiet, False, 0.0))
    assert judged.regressions == 1
    assert judged.pairs.loc[0, "load_note"] is None
    differed = compare(table(slower, True, 0.9), table(quiet, False, 0.0))
    assert differed.regressions == 0 and differed.busy_machine == 1
    (row,) = differed.pairs.to_dict("records")
    assert row["verdict"] == "busy machine"
    assert (
        "0.0 core(s) during the baseline windows and 0.9 during the current"
        in (row["samples_per_s_why"])
    )
    assert "at least 0.5 (0.25 per rank)" in row["samples_per_s_why"]
    # the other way round too: a busy baseline against a quiet rerun is no improvement
    faster = compare(table(quiet, False, 0.0), table(slower, True, 0.9))
    assert faster.improvements == 0 and faster.busy_machine == 1
    one_run = compare(table(slower, True, 0.9), table(quiet, True, 0.8))
    assert one_run.regressions == 0 and one_run.busy_machine == 1
    assert "one run a side" in one_run.pairs.loc[0, "samples_per_s_why"]
    # four runs a side, loaded alike: judged over runs, with the note (every run of a side the
    # same here: the runs' figures tie, and a 20 % drop is still beyond any doubt)
    drifting = [[100.0, 101.0], [104.0, 103.0], [98.0, 99.0], [102.0, 101.0]]
    base_runs = pd.concat(
        [table(r, True, 0.8).assign(experiment=f"b-{i}") for i, r in enumerate(drifting)]
    )
    slow_runs = pd.concat(
        [
            table([v * 0.8 for v in r], True, 0.9).assign(experiment=f"s-{i}")
            for i, r in enumerate(drifting)
        ]
    )
    alike = compare(slow_runs, base_runs)
    assert alike.regressions == 1 and alike.busy_machine == 0
    (row,) = alike.pairs.to_dict("records")
    assert row["units"] == "runs"
    assert "loaded alike" in row["load_note"] and "loaded alike" in row["samples_per_s_why"]
    unknown = compare(table(slower, True, 0.9), table(quiet, None, None))
    assert unknown.busy_machine == 1
    assert "cannot be compared" in unknown.pairs.loc[0, "samples_per_s_why"]
    older = compare(table(slower, None, None), table(quiet, None, None))
    assert older.regressions == 1  # results before the host-load record are judged as before


# ------------------------------------------------------------------------ several runs a side


def runs_of(levels: list[float], seed: int, name: str) -> pd.DataFrame:
    """One cell run len(levels) times (experiments name-0, name-1, ...): each run's 10 repeats
    tight (1 %) around its own level, as on a shared host where whole runs drift apart."""
    rows = []
    for i, level in enumerate(levels):
        repeats = noisy(level, 10, seed=seed + i, cv=0.01)
        rows.append(measured(repeats, experiment=f"{name}-{i}", cell_id=f"m__b8__w1__{i}"))
    return table(*rows)


def test_runs_of_one_cell_are_pooled_and_judged_as_the_units() -> None:
    """Unchanged runs that drift 8 % apart (each tight inside): one run per side calls the
    drift a regression, and four runs a side see it as the spread it is. A real 15 % drop
    over four runs a side is a regression, said over runs."""
    drifting = [100.0, 108.0, 101.0, 107.0]
    baseline = runs_of(drifting, seed=1, name="base")
    unchanged = runs_of([106.0, 100.5, 107.5, 100.0], seed=20, name="now")
    one_each = compare(unchanged.iloc[[3]], baseline.iloc[[1]])
    assert one_each.regressions == 1  # 100 vs 108: the drift, read as a change
    assert one_each.pairs.loc[0, "units"] == "repeats"
    pooled = compare(unchanged, baseline)
    assert len(pooled.pairs) == 1 and pooled.only_current.empty
    (row,) = pooled.pairs.to_dict("records")
    assert row["units"] == "runs" and row["runs"] == "4 vs 4"
    assert row["verdict"] == "no significant change"
    assert row["samples_per_s_repeats"] == "4 vs 4 runs"
    slower = runs_of([level * 0.85 for level in [104.0, 100.0, 107.0, 101.0]], 40, "slow")
    dropped = compare(slower, baseline)
    (row,) = dropped.pairs.to_dict("records")
    assert row["verdict"] == "regression", row["samples_per_s_why"]
    assert "over 4 vs 4 runs" in row["samples_per_s_why"]
    # three runs a side can never reach p < 0.05: not enough, never a verdict
    few = compare(slower.iloc[:3], baseline.iloc[:3])
    assert few.pairs.loc[0, "verdict"] == "not enough repeats"
    assert "3 vs 3 runs" in few.pairs.loc[0, "samples_per_s_why"]


def test_a_pooled_run_that_failed_makes_the_cell_broken() -> None:
    baseline = runs_of([100.0, 101.0, 99.0, 100.0], seed=3, name="base")
    now = runs_of([100.0, 101.0, 99.0, 100.0], seed=9, name="now")
    now.loc[2, "status"] = "oom"
    (row,) = compare(now, baseline).pairs.to_dict("records")
    assert row["status"] == "oom" and row["verdict"] == "regression"


def test_a_run_of_another_definition_is_not_pooled() -> None:
    runs = runs_of([100.0, 101.0], seed=3, name="base")
    runs.loc[1, "definition_sha256"] = "other"
    # two rows, two definitions, one key: the first matches by definition, the other is left
    comparison = compare(runs_of([100.0], seed=4, name="now"), runs)
    assert comparison.pairs.loc[0, "runs"] == "1 vs 1"
    assert len(comparison.only_baseline) == 1
