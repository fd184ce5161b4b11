"""Predict, then verify, as a user does it (slow: real torchrun runs): measure tiny-mlp at 1
rank and an all_reduce at 2 ranks, `torchscale predict --gpus 2`, then measure 2 ranks into the
same folder. The second benchmark scores the forecast (forecasts/scores/, its line printed) by
prediction/score.py's definitions, and the report shows the score and the track record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchscale.contracts.wording.spell import error_pct as percent
from torchscale.interfaces.cli.app import app
from torchscale.offline.analysis.prediction.score import measured_step_s, track_record
from torchscale.offline.results.documents import read_cell
from torchscale.offline.results.forecast_store import read_forecasts

pytestmark = pytest.mark.slow

NAME = "verify"


def _config(path: Path, world: int) -> Path:
    path.write_text(
        json.dumps(
            {
                "experiment_name": NAME,
                "device": "cpu",
                "models": ["tiny-mlp"],
                "batch_sizes": [16],
                "gpu_counts": [world],
                "measurement": {"warmup_steps": 3, "steps": 10, "repeats": 2},
            }
        ),
        encoding="utf-8",
    )
    return path


def test_a_forecast_is_scored_by_the_run_that_measures_it(tmp_path: Path) -> None:
    runner = CliRunner()
    root = tmp_path / NAME

    def ok(*argv: str) -> str:
        done = runner.invoke(app, list(argv))
        assert done.exit_code == 0, done.output
        return done.output

    ok("benchmark", "-c", str(_config(tmp_path / "w1.yaml", 1)), "-o", str(tmp_path))
    ok(
        "comm",
        "--device",
        "cpu",
        "--gpus",
        "2",
        "--max-bytes",
        "1M",
        "-o",
        str(tmp_path),
        "--name",
        NAME,
    )
    ok("predict", "-s", str(root), "--gpus", "2")
    (forecast,) = read_forecasts(root).forecasts
    assert forecast.key.world_size == 2 and read_forecasts(root).scores == []

    printed = " ".join(
        ok("benchmark", "-c", str(_config(tmp_path / "w2.yaml", 2)), "-o", str(tmp_path)).split()
    )
    stored = read_forecasts(root)
    (score,) = stored.scores
    (cell_file,) = sorted((root / "cells").glob("tiny-mlp__b16__w2__*.json"))
    measured = read_cell(cell_file).doc
    assert measured is not None
    assert score.forecast_id == forecast.id and score.cell_id == measured.cell.id
    assert score.cell_file == f"cells/{cell_file.name}"
    step = measured_step_s(measured)
    assert step is not None and score.measured_step_s == step
    assert score.error == pytest.approx((forecast.step_s.value - step) / step)
    low, high = forecast.step_s.low, forecast.step_s.high
    assert low is not None and high is not None
    assert score.inside == (low <= step <= high)
    held = "inside" if score.inside else "outside"
    assert f"{held}, error {percent(score.error, signed=True)}" in printed
    assert "forecast for tiny-mlp" in printed

    out = tmp_path / "report"
    ok("report", "-s", str(root), "-f", "json", "-o", str(out))
    (report_file,) = sorted(out.rglob("*.json"))
    report = json.loads(report_file.read_text(encoding="utf-8"))
    (section,) = [s for s in report["sections"] if s["id"] == "forecasts"]
    texts = [b["text"] for b in section["blocks"] if b["type"] == "text"]
    assert track_record([score]).sentence() in texts[0]
    (table,) = [b for b in section["blocks"] if b["type"] == "table"]
    (row,) = table["rows"]
    assert row["measured"] == step and row["held"] == held
