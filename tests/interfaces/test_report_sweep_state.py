"""A stopped sweep never reads as complete (issue 63, point 1): the first line says it stopped,
by what and during which cell; the cells card counts every planned cell; Failures lists the cells
it cut short or never reached; the sources say how many planned cells have no result. Over a copy
of the 8-cell sweep with its last two results taken away and a state file as a SIGTERM leaves
it, and over the H100 sweep stopped at cell 7 of 8 (an older folder, with no state file)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import SHARED_DIR
from torchscale.contracts.schema.sweep_state import PlannedCell, SweepState
from torchscale.interfaces.cli.app import app
from torchscale.results import load

SWEEP8 = Path(__file__).parents[1] / "fixtures" / "sweep8_v13"
H100_STOPPED = SHARED_DIR / "gpu" / "h100-2026-11-26" / "default-sweep"


def _flat(text: str) -> str:
    return " ".join(text.split())


def _report(source: Path, fmt: str, tmp_path: Path) -> str:
    out = tmp_path / f"report.{fmt}"
    args = ["report", "-s", str(source), "-f", fmt] + ([] if fmt == "term" else ["-o", str(out)])
    result = CliRunner().invoke(app, args, env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    return result.output if fmt == "term" else out.read_text(encoding="utf-8")


@pytest.fixture
def stopped(tmp_path: Path) -> tuple[Path, list[PlannedCell]]:
    """sweep8 as a SIGTERM during its 7th cell leaves it: 6 results, a state file."""
    shutil.copytree(SWEEP8, tmp_path / "sweep8")
    root = tmp_path / "sweep8" / "default_scaling"
    results = load(root).results
    planned = [PlannedCell(id=r.cell_id, label=r.cell.shape_label) for r in results]
    for entry in planned[6:]:
        (root / "cells" / f"{entry.id}.json").unlink()
    state = SweepState(
        phase="stopped", planned=planned, finished=6, stopped_by="SIGTERM", during=planned[6].id
    )
    (root / "sweep.json").write_text(state.model_dump_json(indent=2), encoding="utf-8")
    return root, planned


@pytest.mark.parametrize("fmt", ["md", "term"])
def test_the_first_line_says_the_sweep_stopped(
    fmt: str, stopped: tuple[Path, list[PlannedCell]], tmp_path: Path
) -> None:
    root, planned = stopped
    text = _flat(_report(root, fmt, tmp_path))
    first = (
        f"Sweep stopped by SIGTERM during cell 7 of 8 ({planned[6].label}): 6 ok, 1 stopped, "
        "1 not run."
    )
    assert first in text
    assert text.index(first) < text.index("These numbers")  # before the usability verdict
    assert "6 of 8" in text  # the cells card counts every planned cell


def test_failures_and_sources_list_the_cells_with_no_result(
    stopped: tuple[Path, list[PlannedCell]], tmp_path: Path
) -> None:
    root, planned = stopped
    report = json.loads(_report(root, "json", tmp_path))
    (source,) = report["sources"]
    assert source["unfinished"] == 2 and source["cells"] == 6
    failures = next(s for s in report["sections"] if s["id"] == "failures")
    (table,) = [b for b in failures["blocks"] if b.get("id") == "failures-cells"]
    rows = {r["cell"]: r for r in table["rows"]}
    assert rows[planned[6].label]["status"] == "stopped"
    assert "stopped by SIGTERM while it ran" in rows[planned[6].label]["reason"]
    assert rows[planned[7].label]["status"] == "not run"


def test_a_complete_sweep_opens_as_before(tmp_path: Path) -> None:
    text = _flat(_report(SWEEP8, "md", tmp_path))
    assert "Sweep stopped" not in text and "planned cells skipped" not in text


@pytest.mark.skipif(not H100_STOPPED.is_dir(), reason="../shared/gpu is not here")
@pytest.mark.parametrize("fmt", ["md", "term"])
def test_the_h100_sweep_stopped_at_cell_7_reads_stopped(fmt: str, tmp_path: Path) -> None:
    """Its SIGTERM came before sweeps kept a state file: the started cell with no result (its
    signal read from torchrun's own error file) and the 2-GPU cells it skipped lead the
    report; the cells after it are said to be unrecorded."""
    text = _flat(_report(H100_STOPPED, fmt, tmp_path))
    assert "Sweep stopped by SIGTERM during tiny-gpt2 b32 x1 fp32 ddp" in text
    assert "3 skipped (needs 2 GPUs; a node has 1)" in text
    assert "3 of 7" in text
