"""benchmarks/prediction_accuracy.py: its summary on hand-made scores (medians per world size,
the intervals held, the verdict only on a quiet machine), and its --quick smoke run (slow: real
torchrun runs) reading back the scores the benchmark wrote."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.processes import REPO_ROOT
from torchscale.offline.results.forecast_store import read_forecasts

SCRIPT = REPO_ROOT / "benchmarks" / "prediction_accuracy.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("prediction_accuracy", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("prediction_accuracy", module)
    spec.loader.exec_module(module)
    return module


def _row(
    bench: ModuleType, model: str, world: int, error: float, inside: bool, headline: bool = True
) -> object:
    return bench.Row(
        model, 8, world, "1", headline, 0.1, 0.09, 0.11, 0.1 / (1 + error), error, inside
    )


def test_the_summary_and_the_verdict_only_when_quiet() -> None:
    bench = _module()
    rows = [
        _row(bench, "sleep", 2, 0.04, True),
        _row(bench, "tiny-mlp", 2, -0.08, True),
        _row(bench, "tiny-gpt2", 2, 0.30, False),
        _row(bench, "sleep", 4, -0.12, True),
        _row(bench, "tiny-mlp", 4, 0.50, False, headline=False),
    ]
    quiet = bench.report(rows, "load average: 0.10", "load average: 0.20", busy=False)
    assert any(
        line.startswith(
            "  2 ranks: 3 forecasts, median |error| 8.0 % (real work 19.0 %, sleep 4.0 %)"
        )
        and line.endswith("intervals held 66.7 %")
        for line in quiet
    ), quiet
    assert (
        "  4 ranks: 1 forecasts, median |error| 12.0 % (real work -, sleep 12.0 %), "
        "intervals held 100.0 %" in quiet
    )
    assert quiet[-1] == (
        "verdict on a quiet machine: median <= 10% at 2 ranks: met; median <= 15% at 4 ranks: "
        "met; coverage >= 80%: missed"
    )
    assert any("superseded" in line and "50.0 %" in line for line in quiet)
    others = bench.OtherWork(1.23, "sleep__b8__w4", ["sleep__b8__w4"])
    busy = bench.report(rows, "load average: 0.4", "load average: 2.2", busy=True, others=others)
    assert busy[-1].startswith("beside other work: noise, no verdict")
    assert not any(line.startswith("verdict") for line in busy)
    assert "up to 1.23 cores busy (sleep__b8__w4); busy by its telemetry: sleep__b8__w4" in (
        " ".join(busy)
    )


def test_quiet_runs_are_pooled_and_busy_ones_left_out() -> None:
    bench = _module()
    first = [  # median 5 % at 2 ranks, 10 % at 4, 3 of 4 held: the coverage missed
        _row(bench, "sleep", 2, 0.04, True),
        _row(bench, "tiny-gpt2", 2, -0.20, False),
        _row(bench, "tiny-mlp", 2, 0.05, True),
        _row(bench, "sleep", 4, 0.10, True),
    ]
    second = [  # every target met
        _row(bench, "sleep", 2, 0.02, True),
        _row(bench, "tiny-gpt2", 2, 0.03, True),
        _row(bench, "tiny-mlp", 2, 0.30, True),
        _row(bench, "sleep", 4, -0.12, True),
    ]
    busy = [_row(bench, "sleep", 2, 0.90, False)]
    lines = bench.pooled(
        [
            bench.Run(first, "", "", False, None),
            bench.Run(second, "", "", False, None),
            bench.Run(busy, "", "", True, None),
        ]
    )
    assert "pooled over 3 runs, 2 of them quiet:" in lines
    # 2 ranks: |errors| .02 .03 .04 .05 .20 .30, median 4.5 %, 5 of 6 held
    assert "  2 ranks: 6 forecasts, median |error| 4.5 %, intervals held 83.3 %" in lines
    assert "  4 ranks: 2 forecasts, median |error| 11.0 %, intervals held 100.0 %" in lines
    assert "  quiet runs meeting every target on their own: 1 of 2" in lines
    assert lines[-1] == (
        "verdict on the quiet runs pooled: median <= 10% at 2 ranks: met; median <= 15% at 4 "
        "ranks: met; coverage >= 80% (87.5 %): met"
    )
    assert bench.pooled([bench.Run(busy, "", "", True, None)])[-1] == "  no quiet run: no verdict"
    # a quiet run that measured no 4 ranks meets no target there
    short = bench.Run(second[:3], "", "", False, None)
    assert bench.verdict_of(short.rows)[1] == "median <= 15% at 4 ranks: not measured"
    assert "  quiet runs meeting every target on their own: 0 of 1" in bench.pooled([short])


@pytest.mark.slow
def test_the_quick_run_scores_its_forecast(tmp_path: Path) -> None:
    out, saved = tmp_path / "out", tmp_path / "rows.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--out", str(out), "--json", str(saved)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(saved.read_text(encoding="utf-8"))
    (row,) = data["rows"]
    (score,) = read_forecasts(out / "prediction_accuracy").scores
    assert (row["model"], row["world_size"], row["round"]) == ("sleep", 2, "1")
    assert (row["error"], row["inside"], row["measured_s"]) == (
        score.error,
        score.inside,
        score.measured_step_s,
    )
    assert "2 ranks: 1 forecasts" in done.stdout
    assert "load before: " in done.stdout and "load after: " in done.stdout
