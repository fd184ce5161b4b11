"""Comparison with a baseline (`torchscale.analysis.baseline`) on synthetic cells tables whose
answers are known: noise against regression with and without repeats, the matching rules, what
is counted and what only shown."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from torchscale.analysis.baseline import (
    METRICS,
    compare,
    judge_change,
    match_cells,
    pair_columns,
)


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
        "throughput_spread": None,
        "repeats": 1,
        "step_p50_s": 0.1,
        "scaling_efficiency": 1.0,
        "comm_overhead": None,
        "peak_allocated_bytes": None,
        "peak_rss_bytes": 1000,
    }
    row.update(changes)
    return row


def table(*rows: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


# ------------------------------------------------------------------------ the rule


@pytest.mark.parametrize(
    ("current", "outcome"),
    [(96.0, "noise"), (95.0, "noise"), (94.0, "regression"), (106.0, "improvement")],
)
def test_without_spread_the_noise_pct_decides(current: float, outcome: str) -> None:
    verdict = judge_change(
        100.0,
        current,
        higher_is_better=True,
        baseline_spread=None,
        current_spread=None,
        noise_pct=5.0,
    )
    assert verdict.outcome == outcome
    assert verdict.rule == "noise_pct"
    assert verdict.threshold == pytest.approx(0.05)
    assert verdict.change == pytest.approx((current - 100) / 100)


def test_one_side_without_spread_falls_back_to_noise_pct() -> None:
    verdict = judge_change(
        100.0, 97.0, higher_is_better=True, baseline_spread=0.01, current_spread=None, noise_pct=5
    )
    assert (verdict.rule, verdict.outcome) == ("noise_pct", "noise")


def test_with_spread_the_ranges_decide() -> None:
    # baseline repeats 98..102 (spread 0.04), current 95.06..96.94 (spread 0.0196 at 96):
    # the ranges do not overlap: a regression, though the drop (4 %) is below noise_pct
    verdict = judge_change(
        100.0, 96.0, higher_is_better=True, baseline_spread=0.04, current_spread=0.0196, noise_pct=5
    )
    assert verdict.rule == "spread"
    assert verdict.threshold == pytest.approx((0.04 * 100 + 0.0196 * 96) / 2 / 100)
    assert verdict.outcome == "regression"
    # 97 +- 1.94 (spread 0.04) reaches 98.06: overlaps 98..102, within the noise
    overlap = judge_change(
        100.0, 97.0, higher_is_better=True, baseline_spread=0.04, current_spread=0.04, noise_pct=5
    )
    assert overlap.outcome == "noise"
    assert overlap.threshold == pytest.approx(0.0394)


def test_tight_repeats_never_narrow_the_band_below_the_floor() -> None:
    # two repeats 0.4 % apart on each side: the ranges do not overlap at a 0.8 % drop, but
    # back-to-back repeats understate the noise between sweeps; the 1 % floor decides
    tight = {"baseline_spread": 0.004, "current_spread": 0.004, "noise_pct": 5}
    within = judge_change(100.0, 99.2, higher_is_better=True, **tight)
    assert within.threshold == pytest.approx(0.01)
    assert within.outcome == "noise"
    beyond = judge_change(100.0, 98.5, higher_is_better=True, **tight)
    assert beyond.outcome == "regression"
    assert judge_change(100.0, 99.2, higher_is_better=True, min_noise_pct=0.5, **tight).outcome == (
        "regression"
    )


def test_a_wide_spread_hides_a_drop_larger_than_noise_pct() -> None:
    verdict = judge_change(
        100.0, 90.0, higher_is_better=True, baseline_spread=0.2, current_spread=0.2, noise_pct=5
    )
    assert verdict.threshold == pytest.approx(0.19)
    assert verdict.outcome == "noise"


def test_step_time_regresses_upwards() -> None:
    kwargs: dict[str, Any] = {
        "higher_is_better": False,
        "baseline_spread": None,
        "current_spread": None,
        "noise_pct": 5.0,
    }
    assert judge_change(0.100, 0.106, **kwargs).outcome == "regression"
    assert judge_change(0.100, 0.094, **kwargs).outcome == "improvement"
    assert judge_change(0.100, 0.104, **kwargs).outcome == "noise"


@pytest.mark.parametrize(("baseline", "current"), [(None, 1.0), (1.0, None), (0.0, 1.0)])
def test_missing_values_are_not_compared(baseline: float | None, current: float | None) -> None:
    verdict = judge_change(
        baseline,
        current,
        higher_is_better=True,
        baseline_spread=None,
        current_spread=None,
        noise_pct=5,
    )
    assert verdict.outcome == "n/a"
    assert verdict.change is None


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
    baseline = table(
        cell(
            cell_id="reg",
            definition_sha256="1",
            samples_per_s=100.0,
            repeats=3,
            throughput_spread=0.02,
        ),
        cell(
            cell_id="noise",
            definition_sha256="2",
            samples_per_s=100.0,
            repeats=3,
            throughput_spread=0.10,
        ),
        cell(cell_id="better", definition_sha256="3", samples_per_s=100.0),
        cell(cell_id="same", definition_sha256="4", samples_per_s=100.0),
    )
    current = table(
        cell(
            cell_id="reg",
            definition_sha256="1",
            samples_per_s=97.0,
            repeats=3,
            throughput_spread=0.02,
        ),
        cell(
            cell_id="noise",
            definition_sha256="2",
            samples_per_s=93.0,
            repeats=3,
            throughput_spread=0.10,
        ),
        cell(cell_id="better", definition_sha256="3", samples_per_s=120.0, step_p50_s=0.08),
        cell(cell_id="same", definition_sha256="4", samples_per_s=101.0, scaling_efficiency=0.5),
    )
    comparison = compare(current, baseline, noise_pct=5.0)
    pairs = comparison.pairs.set_index("cell_id")
    assert list(comparison.pairs.columns) == pair_columns()
    assert pairs.loc["reg", "samples_per_s_verdict"] == "regression"  # ranges 99..101 / 96..98
    assert pairs.loc["reg", "samples_per_s_rule"] == "spread"
    assert pairs.loc["noise", "samples_per_s_verdict"] == "noise"  # 7 % within a 9.65 % band
    assert pairs.loc["better", "samples_per_s_verdict"] == "improvement"
    assert pairs.loc["better", "step_p50_s_verdict"] == "improvement"
    assert pairs.loc["better", "samples_per_s_rule"] == "noise_pct"
    # scaling efficiency halved: shown as a change, never flagged
    assert pairs.loc["same", "scaling_efficiency_change"] == pytest.approx(-0.5)
    assert not pairs.loc["same", "regression"]
    assert list(pairs.index[pairs["regression"]]) == ["reg"]
    assert comparison.regressions == 1
    assert comparison.improvements == 1


def test_step_time_alone_can_regress() -> None:
    baseline = table(cell(step_p50_s=0.100))
    current = table(cell(step_p50_s=0.120, samples_per_s=99.0))
    pairs = compare(current, baseline).pairs
    assert pairs.loc[0, "samples_per_s_verdict"] == "noise"
    assert pairs.loc[0, "step_p50_s_verdict"] == "regression"
    assert compare(current, baseline).regressions == 1


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
    assert (comparison.regressions, comparison.improvements) == (1, 1)


def test_a_skipped_cell_is_not_a_regression() -> None:
    current = table(cell(status="skipped", samples_per_s=None))
    assert compare(current, table(cell())).regressions == 0


def test_peak_memory_compared_on_one_basis() -> None:
    baseline = table(cell(peak_allocated_bytes=1000, peak_rss_bytes=5000))
    current = table(cell(peak_allocated_bytes=1500, peak_rss_bytes=5000))
    pairs = compare(current, baseline).pairs
    assert pairs.loc[0, "peak_memory_kind"] == "allocated"
    assert pairs.loc[0, "peak_memory_bytes_change"] == pytest.approx(0.5)
    mixed = compare(table(cell(peak_allocated_bytes=1500, peak_rss_bytes=6000)), table(cell()))
    assert mixed.pairs.loc[0, "peak_memory_kind"] == "rss"
    assert mixed.pairs.loc[0, "peak_memory_bytes_change"] == pytest.approx(5.0)


def test_only_throughput_and_step_time_are_tested() -> None:
    assert [m.key for m in METRICS if m.tested] == ["samples_per_s", "step_p50_s"]


def test_empty_sides() -> None:
    comparison = compare(table(cell()).iloc[0:0], table(cell()))
    assert comparison.pairs.empty
    assert len(comparison.only_baseline) == 1
    assert comparison.regressions == 0


def test_noise_pct_must_be_a_number() -> None:
    with pytest.raises(ValueError, match="noise_pct"):
        compare(table(cell()), table(cell()), noise_pct=-1)
