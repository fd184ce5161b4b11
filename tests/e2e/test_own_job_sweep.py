"""A `jobs:` sweep of a user's own, unmodified DDP script (examples/own_job/ddp_train.py) over
`gpu_counts: [1, 2]` end to end through the CLI, with real torchrun ranks on CPU (gloo):
`torchscale benchmark -c` runs the script at each size inside torchscale's own torchrun, with
the probe, as the README's example does; `report -f md` shows the job's scaling from 1 to 2
ranks and its diagnosis; `predict` forecasts it at 4. Tiny: 2 warm-up and 10 measured steps,
one launch per size. Timings on a shared 2-core machine are noise: only what the sweep found
and where it wrote it are asserted.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tests.processes import REPO_ROOT, kill_mentioning, processes_mentioning
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.interfaces.cli.app import app

pytestmark = pytest.mark.slow

SCRIPT = REPO_ROOT / "examples" / "own_job" / "ddp_train.py"
BATCH, WARMUP, STEPS = 8, 2, 10


@dataclass(frozen=True)
class Sweep:
    out: Path  # -o
    script: Path  # the job's copy: its path marks the job's processes
    run: Result

    @property
    def cells(self) -> list[CellResult]:
        found = sorted((self.out / "jobs_sweep" / "cells").glob("*.json"))
        return [CellResult.model_validate_json(p.read_text(encoding="utf-8")) for p in found]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Sweep:
    folder = tmp_path_factory.mktemp("jobs_sweep")
    script = folder / "job" / SCRIPT.name
    script.parent.mkdir()
    shutil.copy(SCRIPT, script)
    config = {
        "experiment_name": "jobs_sweep",
        "jobs": [
            {"name": "my_ddp", "command": [sys.executable, str(script), "--batch-size", "{batch}"]}
        ],
        "batch_sizes": [BATCH],
        "gpu_counts": [1, 2],
        "device": "cpu",
        "measurement": {"warmup_steps": WARMUP, "steps": STEPS, "repeats": 1},
        "launcher": {"cell_timeout_s": 240},
    }
    path = folder / "jobs.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
    out = folder / "out"
    try:
        run = CliRunner().invoke(app, ["benchmark", "-c", str(path), "-o", str(out)])
        assert processes_mentioning(str(script)) == []  # every launch's ranks gone
    finally:
        kill_mentioning(str(script))
    return Sweep(out, script, run)


def test_the_job_runs_at_each_size_as_a_cell(sweep: Sweep) -> None:
    assert sweep.run.exit_code == 0, sweep.run.output
    cells = sweep.cells
    assert [(c.status, c.cell.world_size) for c in cells] == [("ok", 1), ("ok", 2)], [
        c.error for c in cells
    ]
    for cell in cells:
        assert cell.cell.model == "own:my_ddp" and cell.cell.batch_size == BATCH  # as counted
        assert re.fullmatch(rf"my_ddp__b{BATCH}__w\d__job__[0-9a-f]{{8}}", cell.cell.id)
        assert cell.measured_steps == STEPS // 5 and cell.repeats == 5  # one launch: 5 blocks
        argv = cell.launch["argv"]
        assert argv[1:3] == ["-m", "torch.distributed.run"]  # torchscale's own torchrun
        assert f"--nproc-per-node={cell.cell.world_size}" in argv
        costs = cell.fixed_costs  # the launch's start-up, apart from the measured steps
        assert costs is not None and costs.process_start_s and costs.model_build_s
    assert "own:my_ddp" in sweep.run.output


def test_report_md_shows_the_jobs_scaling(sweep: Sweep, tmp_path: Path) -> None:
    assert sweep.run.exit_code == 0, sweep.run.output
    report = CliRunner().invoke(
        app, ["report", "-s", str(sweep.out), "-f", "md", "-o", str(tmp_path / "r")]
    )
    assert report.exit_code == 0, report.output
    (md,) = sorted((tmp_path / "r").rglob("*.md"))
    text = " ".join(md.read_text(encoding="utf-8").split())
    assert "own:my_ddp, scaling to 2 CPU ranks: " in text
    assert f"own:my_ddp b{BATCH} x2 fp32 ddp" in text  # its diagnosis: the 2-rank step split


def test_predict_forecasts_the_job_at_a_size_not_run(sweep: Sweep) -> None:
    assert sweep.run.exit_code == 0, sweep.run.output
    run = CliRunner().invoke(app, ["predict", "-s", str(sweep.out), "--gpus", "4", "--json"])
    assert run.exit_code == 0, run.output
    forecasts = json.loads(run.stdout)["forecasts"]
    keys = [(f["key"]["label"], f["key"]["world_size"]) for f in forecasts]
    assert keys == [("own:my_ddp", 4)]
    assert forecasts[0]["samples_per_s"]["value"] > 0
