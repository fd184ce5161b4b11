"""`torchscale profile --profile-steps K -- torchrun ... train.py`: the probe traces K optimizer
steps after the measured ones on every rank of a user's own, unmodified DDP script (2 gloo
ranks, tiny sizes), writes each rank's trace as the built-in profile writes them, the run's
result holds the traces' analysis, and `torchscale profile analyze` of the ranks' folder
gives the same verdict. One short run: the window's placement, its skips and failures are
tests/rank/test_own_job_trace.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.own_job_runs import EXAMPLES, RANKS, TORCHRUN
from tests.processes import REPO_ROOT, cli, kill_mentioning
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.interfaces.cli.app import app

pytestmark = pytest.mark.slow

WARMUP, STEPS, TRACED = 1, 4, 3
TINY = ("--hidden", "16", "--dataset-size", "256", "--batch-size", "8", "--log-every", "100")


@pytest.fixture(scope="module")
def traced_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    folder = tmp_path_factory.mktemp("own_trace")
    script = folder / "ddp_train.py"  # this path marks the job's processes (left-over check)
    script.write_text((EXAMPLES / "ddp_train.py").read_text())
    root = folder / "out"
    argv = cli(
        "profile", "--warmup-steps", WARMUP, "--steps", STEPS, "--profile-steps", TRACED,
        "-o", root, "--", TORCHRUN, "--nproc-per-node", RANKS, script, *TINY,
    )  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "200", "OMP_NUM_THREADS": "1"}
    try:
        done = subprocess.run(
            argv, env=env, cwd=folder, capture_output=True, text=True, timeout=240, check=False
        )
    finally:
        kill_mentioning(str(script))
    return done, root


def test_each_rank_traces_the_window_and_analyze_agrees_with_the_run(
    traced_run: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path
) -> None:
    done, root = traced_run
    assert done.returncode == 0, done.stdout + done.stderr
    (ranks,) = {p.parent for p in root.rglob("rank0.measurement.json")}
    assert sorted(p.name for p in ranks.glob("rank*.trace.json.gz")) == [
        f"rank{r}.trace.json.gz" for r in range(RANKS)
    ]
    for rank in range(RANKS):
        record = json.loads((ranks / f"rank{rank}.phases.json").read_text())
        assert record["steps"] == list(range(1, TRACED + 1))
        measured = json.loads((ranks / f"rank{rank}.measurement.json").read_text())
        assert measured["steps"] == STEPS  # the traced steps are not among the measured
    (cell,) = sorted((root / "own_job" / "cells").glob("*.json"))
    result = CellResult.model_validate_json(cell.read_text())
    assert result.profile is not None and result.profile.active == TRACED
    assert result.profile.files == [f"rank{r}.trace.json.gz" for r in range(RANKS)]
    stored = ProfileAnalysis.model_validate_json((ranks / "analysis.json").read_text())
    assert stored.ranks_analysed == RANKS and stored.diagnosis is not None
    assert result.diagnosis == stored.diagnosis  # the run's verdict is the traces' analysis
    out = tmp_path / "analysis.json"
    again = CliRunner().invoke(app, ["profile", "analyze", str(ranks), "--output", str(out)])
    assert again.exit_code == 0, again.output
    analysed = ProfileAnalysis.model_validate_json(out.read_text())
    assert analysed.diagnosis is not None
    assert analysed.diagnosis.straggler == result.diagnosis.straggler
    assert analysed.diagnosis == stored.diagnosis
