"""Scoring a forecast against the cell that measured it, and the track record of many
(torchscale/offline/analysis/prediction/score.py), on hand-made forecasts of real fixture cells:
each error computed here by hand from the cell's stored median step."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.forecast_samples import fixture_cell, fixture_copy, forecast_of
from torchscale.contracts.cell import Status
from torchscale.contracts.schema.forecast import ForecastKey, ForecastScore
from torchscale.contracts.wording.spell import error_pct as percent
from torchscale.offline.analysis.prediction.score import (
    TrackRecord,
    forecasts_of,
    measured_step_s,
    pending_scores,
    score,
    track_record,
)

CELL = "tiny-gpt2__b16__w2"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return fixture_copy(tmp_path)


def test_the_error_is_signed_and_relative_to_the_measured_step(root: Path) -> None:
    result = fixture_cell(root, CELL)
    assert result.step_time is not None
    measured = result.step_time.p50  # the median synchronised step, not the mean
    assert measured != result.step_time.mean
    key = ForecastKey.of_cell(result.cell)
    slow = score(forecast_of(key, measured * 1.25, measured, measured * 1.5), result, "c", "t")
    assert slow.error == pytest.approx(0.25)
    assert slow.inside  # the low end itself counts
    assert slow.measured_step_s == measured and slow.forecast_step_s == measured * 1.25
    fast = score(
        forecast_of(key, measured * 0.9, measured * 0.8, measured * 0.99), result, "c", "t"
    )
    assert fast.error == pytest.approx(-0.1)
    assert not fast.inside
    assert (fast.cell_id, fast.cell_file, fast.scored_at) == (result.cell.id, "c", "t")


def test_a_forecast_without_an_interval_never_holds(root: Path) -> None:
    result = fixture_cell(root, CELL)
    measured = measured_step_s(result)
    assert measured is not None
    key = ForecastKey.of_cell(result.cell)
    made = score(forecast_of(key, measured, None, None), result, "c", "t")
    assert made.error == 0 and not made.inside


def test_another_cells_forecast_is_refused(root: Path) -> None:
    result = fixture_cell(root, CELL)
    other = ForecastKey.of_cell(fixture_cell(root, "tiny-gpt2__b16__w1").cell)
    with pytest.raises(ValueError, match="is not of cell"):
        score(forecast_of(other, 0.03, 0.02, 0.04), result, "c", "t")


def test_the_measured_step_is_the_median_whatever_the_stalls(root: Path) -> None:
    # a few stalled steps move the mean 50 times and the median not at all: the score reads
    # the median, with or without a step model
    result = fixture_cell(root, CELL)
    assert result.step_time is not None
    stalled = result.step_time.model_copy(update={"mean": result.step_time.mean * 50})
    busy = result.model_copy(update={"step_time": stalled, "diagnosis": None})
    assert measured_step_s(busy) == result.step_time.p50
    failed = result.model_copy(update={"status": Status.FAILED})
    assert measured_step_s(failed) is None
    assert measured_step_s(result.model_copy(update={"step_time": None})) is None


def test_a_cell_scores_only_forecasts_of_its_key_not_made_from_itself(root: Path) -> None:
    result = fixture_cell(root, CELL)
    key = ForecastKey.of_cell(result.cell)
    other = ForecastKey.of_cell(fixture_cell(root, "tiny-mlp__b16__w2").cell)
    own_file = f"cells/{result.cell.id}.json"
    mine = forecast_of(key, 0.03, 0.02, 0.04, forecast_id="mine")
    fitted = forecast_of(key, 0.03, 0.02, 0.04, forecast_id="fit", basis=(own_file,))
    theirs = forecast_of(other, 0.03, 0.02, 0.04, forecast_id="theirs")
    found = forecasts_of(result, own_file, [mine, fitted, theirs])
    assert [f.id for f in found] == ["mine"]
    failed = result.model_copy(update={"status": Status.FAILED})
    assert forecasts_of(failed, own_file, [mine]) == []


def _score(error: float, inside: bool) -> ForecastScore:
    return ForecastScore(
        forecast_id="f",
        cell_id="c",
        cell_file="cells/c.json",
        measured_step_s=1.0,
        forecast_step_s=1.0 + error,
        error=error,
        inside=inside,
        scored_at="t",
    )


def test_the_track_record_is_the_median_absolute_error_and_the_intervals_held() -> None:
    record = track_record([_score(0.10, True), _score(-0.02, True), _score(-0.06, False)])
    assert record == TrackRecord(count=3, median_abs_error=pytest.approx(0.06), inside=2)
    assert record.coverage == pytest.approx(2 / 3)
    assert (
        record.sentence() == "forecasts scored: 3; median error 6 %; 2 of 3 inside their intervals"
    )
    one = track_record([_score(0.004, True)])
    assert one.sentence() == "forecasts scored: 1; median error 0.4 %; 1 of 1 inside its interval"
    empty = track_record([])
    assert (empty.count, empty.median_abs_error, empty.coverage) == (0, None, None)


@pytest.mark.parametrize(
    ("ratio", "signed", "text"),
    [
        (0.061, False, "6 %"),
        (0.0042, False, "0.4 %"),
        (0.25, False, "25 %"),
        (-0.047, True, "-5 %"),
        (0.047, True, "+5 %"),
        (0.0, True, "+0.0 %"),
    ],
)
def test_an_error_reads_as_a_percent(ratio: float, signed: bool, text: str) -> None:
    assert percent(ratio, signed) == text


def test_cells_no_sweep_followed_are_scored_on_read(root: Path) -> None:
    """A Kubernetes job's cell lands in cells/ with no torchscale process to score it: the
    forecasts made before it started are scored when read; one made after it, one computed
    from it (a fit) and one already scored are not."""
    result = fixture_cell(root, CELL)
    key = ForecastKey.of_cell(result.cell)
    cell_file = f"cells/{result.cell.id}.json"
    before = forecast_of(key, 0.03, 0.02, 0.04, forecast_id="before")
    assert result.started_at is not None and before.created_at < result.started_at
    after = before.model_copy(update={"id": "after", "created_at": "2027-01-01T00:00:00Z"})
    fit = forecast_of(key, 0.03, 0.02, 0.04, forecast_id="fit", basis=(cell_file,))
    done = forecast_of(key, 0.03, 0.02, 0.04, forecast_id="done")
    stored = [score(done, result, cell_file, "earlier")]
    owed = pending_scores([before, after, fit, done], stored, [(result, cell_file)], "now")
    assert owed == [score(before, result, cell_file, "now")]


def test_made_by_the_second_the_cell_started_in_either_zone_form(root: Path) -> None:
    result = fixture_cell(root, CELL)  # started 2026-11-26T02:15:21+00:00
    assert result.started_at == "2026-11-26T02:15:21+00:00"
    key = ForecastKey.of_cell(result.cell)
    made = {
        "2026-11-26T02:15:20Z": True,  # a second before
        "2026-11-26T02:15:21Z": True,  # the same second: predict, then benchmark, in a script
        "2026-11-26T02:15:22Z": False,
        "2026-11-26T02:15:22": False,  # no zone: UTC, as every torchscale time is
        "2026-11-26T03:15:20+01:00": True,  # the same instant as the first
    }
    forecasts = [
        forecast_of(key, 0.03, 0.02, 0.04, forecast_id=f"f{i}").model_copy(
            update={"created_at": stamp}
        )
        for i, stamp in enumerate(made)
    ]
    scored = {f.created_at for f in forecasts_of(result, "cells/c.json", forecasts)}
    assert scored == {stamp for stamp, before in made.items() if before}
    # a cell with no start time (written before rank 0 recorded one): only the basis rule
    unknown = result.model_copy(update={"started_at": None})
    assert len(forecasts_of(unknown, "cells/c.json", forecasts)) == len(made)


def test_load_forecasts_counts_what_the_cells_owe_without_writing(root: Path) -> None:
    from torchscale.offline.results.forecast_store import load_forecasts, write_forecast

    result = fixture_cell(root, CELL)
    write_forecast(root, forecast_of(ForecastKey.of_cell(result.cell), 0.03, 0.02, 0.04))
    table = load_forecasts(root)
    assert list(table["scored_cell_id"]) == [result.cell.id]
    assert table["measured_step_s"].iloc[0] == measured_step_s(result)
    assert not (root / "forecasts" / "scores").exists()


def test_a_forecast_no_back_test_checks_widens_to_the_worst_stored_miss(tmp_path: Path) -> None:
    """`predict` widens such a forecast to the worst error of the forecasts already scored in
    its experiments, from three scores on; before that, the stated default applies (None)."""

    from torchscale.interfaces.api.predict import _how_far_missed
    from torchscale.offline.results.forecast_store import write_score

    first, second = tmp_path / "a", tmp_path / "b"
    for root in (first, second):
        root.mkdir()
    write_score(first, replace_score(_score(-0.12, True), "f1", "c1"))
    write_score(second, replace_score(_score(0.31, False), "f2", "c2"))
    assert _how_far_missed([first, second]) is None  # two scores: no record yet
    write_score(second, replace_score(_score(0.05, True), "f3", "c3"))
    missed = _how_far_missed([first, second])
    assert missed is not None and missed[0] == pytest.approx(0.31)
    assert missed[1] == 3


def replace_score(score: ForecastScore, forecast_id: str, cell_id: str) -> ForecastScore:
    return score.model_copy(
        update={
            "forecast_id": forecast_id,
            "cell_id": cell_id,
            "cell_file": f"cells/{cell_id}.json",
        }
    )
