"""A forecast made at a size the results already measured is a fit of that cell, not a forecast
awaiting its test (issue 63, point 3): `predict --gpus 2,4` over a sweep that measured 2 ranks
listed its 2-rank forecasts as 'not measured yet', with 'forecasts scored: 0'."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from torchscale.interfaces.cli.app import app
from torchscale.results import load

SWEEP8 = Path(__file__).parents[1] / "fixtures" / "sweep8_v13"


def test_forecasts_at_a_measured_size_read_as_fits(tmp_path: Path) -> None:
    shutil.copytree(SWEEP8, tmp_path / "sweep8")
    root = tmp_path / "sweep8" / "default_scaling"
    runner = CliRunner()
    assert runner.invoke(app, ["predict", "-s", str(root), "--gpus", "2,4"]).exit_code == 0
    out = tmp_path / "report.md"
    result = runner.invoke(app, ["report", "-s", str(root), "-f", "md", "--full", "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    rows = [ln for ln in text.splitlines() if ln.startswith("| tiny-")]
    fits = [ln for ln in rows if "measured: a fit of that cell" in ln]
    waiting = [ln for ln in rows if "not measured yet" in ln]
    assert {ln.split(" | ")[0] for ln in fits} == {
        f"| {m} b{b} x2 fp32 ddp" for m in ("tiny-gpt2", "tiny-mlp") for b in (16, 32)
    }
    assert len(waiting) == 4 and all(" x4 " in ln for ln in waiting)
    # the fit's measured step is the cell's median step, the statistic scoring uses
    cells = load(root).cells
    gpt2 = cells[(cells["model_label"] == "tiny-gpt2") & (cells["world_size"] == 2)]
    step_ms = f"{gpt2[gpt2['batch_size'] == 32]['step_p50_s'].iloc[0] * 1000:.1f} ms"
    assert step_ms in next(ln for ln in fits if "tiny-gpt2 b32" in ln)
    assert "4 made at a size already measured: fits of those cells, testing nothing" in text


def test_each_assumption_is_said_once_with_its_range() -> None:
    """Four forecasts each said 'model error: no measured size could be back-tested' and their
    own 'past the cores' figures: one clause each, its figures as ranges."""
    from torchscale.interfaces.report.sections.forecasts import said_once

    items = [
        f"model error: no measured size could be back-tested; past the cores (4 ranks x {busy} "
        f"busy cores on 2): ranks take turns, {slower}x slower"
        for busy, slower in (("0.91", "1.82"), ("0.79", "1.58"), ("0.96", "1.92"))
    ]
    assert said_once([*items, "each rank runs 1 thread(s)"]) == [
        "model error: no measured size could be back-tested",
        "past the cores (4 ranks x 0.79-0.96 busy cores on 2): ranks take turns, 1.58-1.92x slower",
        "each rank runs 1 thread(s)",
    ]
