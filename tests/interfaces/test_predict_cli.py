"""`torchscale predict` on a real 8-cell sweep (copied: fixtures are never written): the answer
first within COLUMNS, the forecasts written and loadable, and every mistake one line, exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from torchscale.interfaces.cli.app import app
from torchscale.results import load_forecasts

SWEEP = Path(__file__).resolve().parents[1] / "fixtures" / "cpu_default_sweep"


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return Path(shutil.copytree(SWEEP, tmp_path / "results"))


def predict(*args: object, columns: int = 80) -> Result:
    return CliRunner().invoke(app, ["predict", *map(str, args)], env={"COLUMNS": str(columns)})


def test_forecasts_printed_within_columns_and_written(results: Path) -> None:
    done = predict("-s", results, "--gpus", "4,8", "-v", columns=70)
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert lines[0] == "tiny-gpt2 b16 fp32 ddp (cpu)"  # the answer first
    assert max(len(line) for line in lines) <= 70
    assert "- no comm run" in done.output
    assert "stragglers:" in done.output  # -v: the terms
    assert lines[1].split()[0] == "ranks"  # a CPU world size counts ranks, not GPUs
    table = load_forecasts(results / "default_scaling")
    assert len(table) == 8  # 2 models x 2 batches x 2 world sizes
    assert set(table["world_size"]) == {4, 8}
    assert (table["step_low_s"] < table["step_s"]).all()
    assert (table["step_s"] < table["step_high_s"]).all()


def test_json_carries_every_forecast(results: Path) -> None:
    done = predict("-s", results / "default_scaling", "--gpus", "4", "--json")
    assert done.exit_code == 0, done.output
    payload = json.loads(done.output)
    assert len(payload["forecasts"]) == 4 and not payload["refused"]
    first = payload["forecasts"][0]
    assert first["kind"] == "torchscale.forecast"
    assert {t["name"] for t in first["terms"]} >= {"compute", "stragglers"}
    # the facts: each formula and assumption a code with its figures, worded when shown
    assert all(t["how"]["code"].startswith("forecast.term.") for t in first["terms"])
    assert all(a["code"].startswith("forecast.") for a in first["assumptions"])


def _one_line_exit_2(done: Result, words: str) -> None:
    assert done.exit_code == 2, done.output
    said = [line for line in done.output.splitlines() if line.strip()]
    assert len(said) == 1 and words in said[0], done.output


def test_no_cells(tmp_path: Path) -> None:
    (tmp_path / "empty" / "cells").mkdir(parents=True)
    _one_line_exit_2(predict("-s", tmp_path / "empty", "--gpus", "4"), "no measured cells")


def test_strategy_neither_measured_nor_derivable(results: Path) -> None:
    done = predict("-s", results, "--gpus", "4", "--strategy", "fsdp")
    _one_line_exit_2(done, "not derivable without a comm run")


@pytest.mark.parametrize("gpus", ["four", "0", "4,,8", "-2"])
def test_malformed_gpus(results: Path, gpus: str) -> None:
    _one_line_exit_2(predict("-s", results, "--gpus", gpus), "--gpus")


def test_world_size_below_the_measured(results: Path) -> None:
    for one in (results / "default_scaling" / "cells").glob("*__w1__*.json"):
        one.unlink()
    _one_line_exit_2(predict("-s", results, "--gpus", "1,4"), "below the smallest measured")
    assert not (results / "default_scaling" / "forecasts").exists()


def test_shared_assumptions_once_at_the_end_with_a_hanging_indent(results: Path) -> None:
    done = predict("-s", results, "--gpus", "4", columns=60)
    assert done.exit_code == 0, done.output
    out = done.output
    assert out.count("- no comm run") == 1  # every table makes it: said once
    tail = out[out.index("assumed in every forecast above:") :]
    assert "- no comm run" in tail
    rows = tail.splitlines()
    first = next(i for i, row in enumerate(rows) if "- no comm run" in row)
    assert rows[first].startswith("  - ") and rows[first + 1].startswith("    ")
    assert max(len(line) for line in out.splitlines()) <= 60


def test_figures_are_rounded_to_their_interval(results: Path) -> None:
    from tests.forecast_samples import estimate
    from torchscale.interfaces.console.forecasts import figure

    # +-3.35 -> two significant digits of the half-width: 49.4 +-3.4 (the report's rule)
    assert figure(estimate(0.04943, 0.04608, 0.05278), 1e3) == "49.4 ±3.4"
    assert figure(estimate(1295.2, 1212.3, 1389.1)) == "1,300 ±90"
    # lopsided (16 above, 2.2 below): the ends, to the step of half the width 8.0 -> 0.1
    assert figure(estimate(96.2, 94.0, 110.0)) == "96.2 [94.0, 110.0]"
    assert figure(None) == "-"
    # a rate whose step may be 0: no upper end, cut to its lower side (+-230 -> tens)
    assert figure(estimate(1068.8, 840.0, float("inf"))) == "1,070 [840, no limit]"


def test_world_size_below_a_later_group_leaves_nothing_written(results: Path) -> None:
    # tiny-gpt2 (sorted first) keeps its 1-rank cells, tiny-mlp starts at 2: --gpus 1 is
    # fine for the first group and below the second, and must be caught before any write
    experiment = results / "default_scaling"
    for one in (experiment / "cells").glob("tiny-mlp__*__w1__*.json"):
        one.unlink()
    _one_line_exit_2(predict("-s", results, "--gpus", "1,4"), "below the smallest measured")
    assert not (experiment / "forecasts").exists()


def test_nothing_forecast_is_exit_2_after_the_refusals(results: Path) -> None:
    done = predict("-s", results, "--gpus", "3", "--nodes", "2", columns=200)
    assert done.exit_code == 2, done.output
    said = [line for line in done.output.splitlines() if line.strip()]
    refusals = [line for line in said if line.startswith("no forecast for ")]
    assert len(refusals) == 4 and all("do not split evenly" in r for r in refusals)
    assert said[-1].startswith("error: no forecast made") and len(said) == 5
    assert not (results / "default_scaling" / "forecasts").exists()


def test_some_forecast_is_exit_0_with_the_refusals_as_lines(results: Path) -> None:
    done = predict("-s", results, "--gpus", "3,4", "--nodes", "2", columns=200)
    assert done.exit_code == 0, done.output
    assert done.output.count("do not split evenly over 2 nodes") == 4
    assert len(load_forecasts(results / "default_scaling")) == 4


def test_unwritable_forecasts_folder_is_one_line(results: Path) -> None:
    (results / "default_scaling" / "forecasts").write_text("a file, not a folder\n")
    _one_line_exit_2(predict("-s", results, "--gpus", "4"), "cannot write its forecasts")


def test_json_is_strict_json_with_null_for_an_open_end(
    results: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a step whose lower end is 0 has a throughput with no upper end: null, as stored
    from tests.forecast_samples import estimate, fixture_cell, forecast_of
    from torchscale.contracts.schema.forecast import ForecastKey
    from torchscale.interfaces.api import predict as api

    cell = fixture_cell(results / "default_scaling", "tiny-gpt2__b16__w2").cell
    key = ForecastKey(
        model=cell.model,
        label=cell.label,
        batch_size=cell.batch_size,
        precision=cell.precision,
        strategy="ddp",
        world_size=4,
        nodes=1,
        device=cell.device,
    )
    made = forecast_of(key, 0.05, 0.04, 0.06)
    made.samples_per_s = estimate(1280.0, 1000.0, float("inf"))
    monkeypatch.setattr(api, "run_predict", lambda request: api.PredictRun(forecasts=[made]))
    done = predict("-s", results, "--gpus", "4", "--json")
    assert done.exit_code == 0, done.output

    def refuse(word: str) -> None:
        raise AssertionError(f"{word} is not JSON")

    payload = json.loads(done.output, parse_constant=refuse)
    assert payload["forecasts"][0]["samples_per_s"]["high"] is None
    assert payload["forecasts"][0] == json.loads(made.model_dump_json())  # the stored form


def test_corrupt_cell_and_comm_files_are_one_line_each(results: Path) -> None:
    experiment = results / "default_scaling"
    (experiment / "cells" / "broken.json").write_text("{not json")
    (experiment / "comm").mkdir(exist_ok=True)
    (experiment / "comm" / "other.json").write_text('{"kind": "something else"}')
    done = predict("-s", results, "--gpus", "4", columns=300)
    assert done.exit_code == 0, done.output
    skipped = [line for line in done.output.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 2, done.output
    assert "broken.json: not valid JSON" in skipped[0]
    assert "other.json: not a torchscale comm result" in skipped[1]
