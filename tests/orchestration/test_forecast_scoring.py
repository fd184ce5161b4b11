"""The sweep's scoring of forecasts (torchscale/orchestration/forecast_scoring.py) on a copy of
a real sweep: a measured cell scores its forecast into forecasts/scores/, a corrupt forecast
file is one problem line said once, and an experiment without forecasts is left as it was."""

from __future__ import annotations

from pathlib import Path

from tests.forecast_samples import fixture_cell, fixture_copy, forecast_of
from torchscale.contracts.schema.forecast import ForecastKey
from torchscale.offline.results.forecast_store import read_forecasts, scores_dir, write_forecast
from torchscale.orchestration.forecast_scoring import ForecastScorer

CELL = "tiny-gpt2__b16__w2"


def test_a_measured_cell_scores_its_forecast_once_per_cell(tmp_path: Path) -> None:
    root = fixture_copy(tmp_path)
    result = fixture_cell(root, CELL)
    key = ForecastKey.of_cell(result.cell)
    write_forecast(root, forecast_of(key, 0.03, 0.02, 0.04, forecast_id="mine"))
    other = ForecastKey.of_cell(fixture_cell(root, "tiny-mlp__b16__w2").cell)
    write_forecast(root, forecast_of(other, 0.03, 0.02, 0.04, forecast_id="theirs"))
    (root / "forecasts" / "torn.json").write_text('{"kind": "torchscale.forecast", ')
    scorer = ForecastScorer(root)
    check = scorer.check(result)
    assert check is not None and check.cell_id == result.cell.id
    assert [s.forecast.id for s in check.scored] == ["mine"]
    (problem,) = check.problems
    assert problem.startswith("forecast file torn.json not read, not scored: ")
    (stored,) = read_forecasts(root).scores
    assert stored == check.scored[0].score
    assert stored.cell_file == f"cells/{result.cell.id}.json"
    # the cell measured again scores again into the same file; the torn file is not said again
    again = scorer.check(result)
    assert again is not None and again.problems == () and len(again.scored) == 1
    assert len(list(scores_dir(root).glob("*.json"))) == 1
    # a cell no forecast is of has nothing to say
    assert scorer.check(fixture_cell(root, "tiny-gpt2__b32__w2")) is None


def test_an_experiment_without_forecasts_is_left_as_it_was(tmp_path: Path) -> None:
    root = fixture_copy(tmp_path)
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    assert ForecastScorer(root).check(fixture_cell(root, CELL)) is None
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def test_a_score_that_cannot_be_written_is_a_problem_line(tmp_path: Path) -> None:
    root = fixture_copy(tmp_path)
    result = fixture_cell(root, CELL)
    write_forecast(root, forecast_of(ForecastKey.of_cell(result.cell), 0.03, 0.02, 0.04))
    scores_dir(root).parent.mkdir(exist_ok=True)
    scores_dir(root).write_text("a file where the scores folder should be")
    check = ForecastScorer(root).check(result)
    assert check is not None and check.scored == ()
    (problem,) = check.problems
    assert problem.startswith("forecast f1 not scored: ")
