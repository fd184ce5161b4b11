"""A stopped sweep never reads as complete: the first line says it stopped,
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

from tests.h100_replay import DEFAULT_SWEEP
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.sweep_state import PlannedCell, SweepState
from torchscale.interfaces.cli.app import app
from torchscale.offline.results.sweep_progress import CellProgress, SweepProgress
from torchscale.results import load

SWEEP8 = Path(__file__).parents[1] / "fixtures" / "cpu_default_sweep"
H100_STOPPED = DEFAULT_SWEEP


def _flat(text: str) -> str:
    return " ".join(text.split())


def _report(source: Path, fmt: str, tmp_path: Path) -> str:
    out = tmp_path / f"report.{fmt}"
    args = ["report", "-s", str(source), "-f", fmt] + ([] if fmt == "term" else ["-o", str(out)])
    # wide enough that a pytest-xdist tmp path (over 100 characters) is never folded mid-path
    result = CliRunner().invoke(app, args, env={"COLUMNS": "240"})
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
    text = _flat(_report(root, fmt, tmp_path)).replace("`", "")
    first = "Sweep stopped by SIGTERM during cell 7 of 8."
    assert first in text
    assert text.index(first) < text.index("These numbers")  # before the usability verdict
    # under the headline the first thing to do, finish it; then, by model, what it did not measure
    said = f"Stopped while it ran: {planned[6].label}. Not reached: {planned[7].label}."
    finish = (
        f"To finish it: torchscale benchmark --config {root}/config.yaml --output-dir "
        f"{root.parent} --resume."
    )
    assert text.index("These numbers") < text.index(finish) < text.index(said)
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
    assert rows[planned[7].label]["status"] == "not reached"


def test_a_complete_sweep_opens_as_before(tmp_path: Path) -> None:
    text = _flat(_report(SWEEP8, "md", tmp_path))
    assert "Sweep stopped" not in text and "planned cells skipped" not in text


@pytest.mark.parametrize("fmt", ["md", "term"])
def test_the_h100_sweep_stopped_at_cell_7_reads_stopped(fmt: str, tmp_path: Path) -> None:
    """Its SIGTERM came before sweeps kept a state file: the started cell with no result (its
    signal read from torchrun's own error file) and the 2-GPU cells it skipped lead the
    report; the cell after it is named from its config.yaml, expanded again."""
    text = _flat(_report(H100_STOPPED, fmt, tmp_path))
    assert "Sweep stopped by SIGTERM during cell 7 of 8." in text
    assert "Stopped while it ran: tiny-gpt2 b32 x1 fp32 ddp." in text
    # skipped by design, with why, said once: the cells' own reason (this node, as the sweep
    # planned) is the same as the plan's made again from env.json for the cell it never reached
    assert "Skipped by design (needs 2 GPUs; this node has 1):" in text
    assert "tiny-gpt2 b16 x2 fp32 ddp, b32 x2 fp32 ddp" in text  # the cell it never started
    # its results were measured by an older definition: --resume measures them again, said
    assert "--resume --set experiment_name=default-sweep" in text.replace("`", "")
    said = "it measures the 3 kept cells again: their settings differ from this torchscale's"
    assert said in text
    assert fmt == "term" or "3 of 8" in text  # the cells card counts the cell never started


def _first_screen(text: str) -> str:
    """The md report before its summary: the headline, the lines under it and what to do."""
    return text[: text.index("Executive summary")]


@pytest.fixture
def model_never_ran(tmp_path: Path) -> tuple[Path, list[PlannedCell]]:
    """sweep8 stopped by SIGTERM during the first cell of its second model (in file order): no
    result of that model at all, and its two 2-GPU cells skipped by design."""
    shutil.copytree(SWEEP8, tmp_path / "sweep8")
    root = tmp_path / "sweep8" / "default_scaling"
    results = load(root).results
    needs = Finding(code="plan.needs_gpus", figures={"gpus": 2, "have": 1, "nodes": 1})
    planned = [
        PlannedCell(
            id=r.cell_id,
            label=r.cell.shape_label,
            skip=needs
            if r.cell.model == results[4].cell.model and r.cell.world_size == 2
            else None,
        )
        for r in results
    ]
    for entry in planned[4:]:
        (root / "cells" / f"{entry.id}.json").unlink()
    state = SweepState(
        phase="stopped", planned=planned, finished=4, stopped_by="SIGTERM", during=planned[4].id
    )
    (root / "sweep.json").write_text(state.model_dump_json(indent=2), encoding="utf-8")
    return root, planned


def test_a_model_that_never_ran_is_named_on_the_first_screen(
    model_never_ran: tuple[Path, list[PlannedCell]], tmp_path: Path
) -> None:
    """Today's md named tiny-gpt2 nowhere: its every cell is named with its state."""
    root, planned = model_never_ran
    first = _first_screen(_flat(_report(root, "md", tmp_path)))
    assert f"Stopped while it ran: {planned[4].label}." in first
    assert f"Not reached: {planned[6].label}." in first
    # skipped by design is told apart from not reached, with its why from the code
    assert f"Skipped by design (needs 2 GPUs; this node has 1): {planned[5].label}, " in first


def test_the_short_forms_give_the_command_that_finishes_it(
    model_never_ran: tuple[Path, list[PlannedCell]], tmp_path: Path
) -> None:
    root, _ = model_never_ran
    command = (
        f"torchscale benchmark --config {root}/config.yaml --output-dir {root.parent} --resume"
    )
    assert command in _first_screen(_flat(_report(root, "md", tmp_path)))
    assert command in _flat(_report(root, "term", tmp_path))
    assert command in _flat(_report(root, "html", tmp_path))  # the HTML's first screen
    recap = CliRunner().invoke(
        app, ["report", "-s", str(root), "-f", "md", "-o", str(tmp_path / "r.md")]
    )
    assert command in _flat(recap.output)  # the terminal answer of a report written to a file


def test_a_folder_without_a_state_file_is_planned_from_its_config(tmp_path: Path) -> None:
    """An older folder (no sweep.json) stopped in its 7th cell: its config.yaml expanded again
    names the 8th cell, never started (today: 'the cells it never started are not known')."""
    shutil.copytree(SWEEP8, tmp_path / "sweep8")
    root = tmp_path / "sweep8" / "default_scaling"
    cut, never = (
        next(r for r in load(root).results if r.cell.shape_label == f"tiny-gpt2 b32 x{n} fp32 ddp")
        for n in (1, 2)
    )
    for result in (cut, never):
        (root / "cells" / f"{result.cell_id}.json").unlink()
    (root / "specs").mkdir()
    (root / "specs" / f"{cut.cell_id}.json").write_text("{}", encoding="utf-8")
    first = _first_screen(_flat(_report(root, "md", tmp_path)))
    assert "not known" not in first
    assert "during cell 7 of 8." in first
    assert f"Stopped while it ran: {cut.cell.shape_label}." in first
    assert f"Not reached: {never.cell.shape_label}." in first
    assert "--resume" in first


def test_a_500_cell_sweep_is_named_in_a_few_lines() -> None:
    """Counts by state, then the cells not measured by model, collapsed beyond a few."""
    cells = [
        CellProgress(f"m{m}b{b}", f"model{m} b{b} x1 fp32 ddp", "not reached")
        for m in range(10)
        for b in range(50)
    ]
    said = SweepProgress("stopped", cells, "SIGTERM").details()
    assert len(said) < 500
    assert said.startswith("Not reached: ")
    assert "model0 (50 cells): b0 x1 fp32 ddp, b1 x1 fp32 ddp, b2 x1 fp32 ddp and 47 more" in said
    assert "and 7 more models (350 cells)" in said


def test_failures_name_the_cells_with_no_result_a_row_per_model_and_why(
    model_never_ran: tuple[Path, list[PlannedCell]], tmp_path: Path
) -> None:
    root, planned = model_never_ran
    report = json.loads(_report(root, "json", tmp_path))
    failures = next(s for s in report["sections"] if s["id"] == "failures")
    (table,) = [b for b in failures["blocks"] if b.get("id") == "failures-cells"]
    rows = {r["cell"]: (r["status"], r["reason"]) for r in table["rows"]}
    shapes = [p.label.removeprefix(planned[4].label.split(" ")[0]).strip() for p in planned]
    both = f"{planned[5].label}, {shapes[7]}"  # the two 2-GPU cells of the model, one row
    assert rows[both] == ("skipped", "needs 2 GPUs; this node has 1")
    assert rows[planned[6].label] == ("not reached", "the sweep stopped before it")


def test_a_sweep_stopped_in_its_first_cell_reads_stopped(tmp_path: Path) -> None:
    """No result and no sweep.json, only its config, env and the first cell's spec: the
    report named no experiment at all; now every planned cell, with the resume line."""
    shutil.copytree(SWEEP8, tmp_path / "sweep8")
    root = tmp_path / "sweep8" / "default_scaling"
    first = next(r for r in load(root).results if r.cell.shape_label == "tiny-mlp b16 x1 fp32 ddp")
    shutil.rmtree(root / "cells")
    (root / "specs").mkdir()
    (root / "specs" / f"{first.cell_id}.json").write_text("{}", encoding="utf-8")
    text = _flat(_report(root, "md", tmp_path)).replace("`", "")
    assert "during cell 1 of 8." in text
    assert "Stopped while it ran: tiny-mlp b16 x1 fp32 ddp." in text
    assert (
        "Not reached: tiny-mlp b16 x2 fp32 ddp, b32 x1 fp32 ddp, b32 x2 fp32 ddp; tiny-gpt2 "
        in text
    )
    assert f"--config {root}/config.yaml --output-dir {root.parent} --resume" in text
