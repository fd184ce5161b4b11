"""Comparison with a baseline (`torchscale.analysis.baseline`) on synthetic cells tables whose
answers are known: the rule on per-repeat figures (identical distributions with noise are no
change, a 15 % shift with enough repeats is a regression, 2-3 repeats are "not enough repeats"
whatever the change), the matching rules, what is counted and what only shown."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from torchscale.analysis.baseline import (
    ALPHA,
    METRICS,
    MIN_EFFECT,
    RULE,
    STEP_REPEATS,
    RegressionRule,
    compare,
    judge_change,
    match_cells,
    min_p_value,
    pair_columns,
    parse_repeats,
    with_step_repeats,
)


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
    assert "Mann-Whitney U" in text and "p < 0.05" in text and f"{MIN_EFFECT * 100:g} %" in text
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
    assert verdict.p_value == pytest.approx(2 / 70)


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
    """The issue: the same config run twice gave a 'regression' and 4 'improvements'."""
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


def test_only_throughput_and_step_time_are_judged() -> None:
    assert [m.key for m in METRICS if m.tested] == ["samples_per_s", "step_p50_s"]
    assert all(m.judged_by for m in METRICS)


def test_empty_sides() -> None:
    comparison = compare(table(cell()).iloc[0:0], table(cell()))
    assert comparison.pairs.empty
    assert len(comparison.only_baseline) == 1
    assert comparison.regressions == 0
    assert comparison.judged == 0


def test_a_busy_machine_on_either_side_is_not_judged() -> None:
    """Whole runs drift apart on a busy host by more than the changes the rule looks for: a
    pair whose baseline or current cell ran on a busy machine is neither a regression nor a
    pass, and says why; the same pair on a quiet machine is judged."""
    from torchscale.analysis.baseline import compare

    quiet = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2]
    slower = [80.0, 81.0, 79.0, 80.5, 79.5, 80.2]

    def table(repeats: list[float], busy: bool | None, cores: float | None) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
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
            ]
        )

    judged = compare(table(slower, False, 0.0), table(quiet, False, 0.0))
    assert judged.regressions == 1
    busy = compare(table(slower, True, 0.9), table(quiet, False, 0.0))
    assert busy.regressions == 0 and busy.busy_machine == 1
    (row,) = busy.pairs.to_dict("records")
    assert row["verdict"] == "busy machine"
    assert "busy during the current windows" in row["samples_per_s_why"]
    assert "0.9 core(s)" in row["samples_per_s_why"]
    older = compare(table(slower, None, None), table(quiet, None, None))
    assert older.regressions == 1  # results before the host-load record are judged as before
