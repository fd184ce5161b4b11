"""A forecast at a size the results already measured is a fit of that cell, not a forecast
awaiting its test: `predict --gpus 2,4` over a sweep that measured 2 ranks
listed its 2-rank forecasts as 'not measured yet', with 'forecasts scored: 0'. predict now
refuses such a size; a report still reads files written before as fits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from torchscale.interfaces.cli.app import app
from torchscale.results import load

SWEEP8 = Path(__file__).parents[1] / "fixtures" / "cpu_default_sweep"


def _predicted(tmp_path: Path) -> tuple[Path, str]:
    shutil.copytree(SWEEP8, tmp_path / "sweep8")
    root = tmp_path / "sweep8" / "default_scaling"
    result = CliRunner().invoke(app, ["predict", "-s", str(root), "--gpus", "2,4"])
    assert result.exit_code == 0, result.output
    return root, " ".join(result.output.split())


def test_predict_refuses_a_size_already_measured(tmp_path: Path) -> None:
    """Its answer is the measurement: no forecast written for 2 ranks, each refusal naming the
    cell and its median step; the 4-rank forecasts are made."""
    root, said = _predicted(tmp_path)
    cells = load(root).cells
    for row in cells[cells["world_size"] == 2].itertuples():
        label = f"{row.model_label} b{row.batch_size} x2 fp32 ddp"
        step = f"{row.step_p50_s * 1000:.3g} ms"
        assert (
            f"no forecast for {label}: measured: median step {step} (cells/{row.cell_id}.json)"
            in said
        )
    written = [json.loads(p.read_text()) for p in (root / "forecasts").glob("*.json")]
    assert written and {f["key"]["world_size"] for f in written} == {4}


def test_a_fit_written_before_reads_as_a_fit(tmp_path: Path) -> None:
    """A forecast file of a measured size (as predict wrote them before it refused them),
    computed from that very cell: the report says so, with the cell's median step, and counts
    it apart from the forecasts that wait for a measurement."""
    root, _ = _predicted(tmp_path)
    cells = load(root).cells
    cell = cells[(cells["model_label"] == "tiny-gpt2") & (cells["world_size"] == 2)].iloc[0]
    path = next(p for p in sorted((root / "forecasts").glob("*.json")) if "tiny-gpt2" in p.name)
    fit = json.loads(path.read_text())
    fit["key"] |= {"world_size": 2, "batch_size": int(cell["batch_size"])}
    fit["basis"].append(f"cells/{cell['cell_id']}.json")
    path.write_text(json.dumps(fit))
    out = tmp_path / "report.md"
    result = CliRunner().invoke(
        app, ["report", "-s", str(root), "-f", "md", "--full", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    label = f"| tiny-gpt2 b{cell['batch_size']} x2 fp32 ddp |"
    row = next(ln for ln in text.splitlines() if ln.startswith(label) and "fit" in ln)
    assert "measured: a fit of that cell" in row and f"{cell['step_p50_s'] * 1000:.1f} ms" in row
    assert "1 made at a size already measured: fits of those cells, testing nothing" in text
    assert "3 forecasts not measured yet" in text


def test_each_assumption_is_said_once_with_its_range() -> None:
    """Three forecasts each assumed the same model error and their own 'past the cores'
    figures: one line per code, its varying figures as ranges, built from the findings' figures
    (no stored sentence is read)."""
    from torchscale.contracts.finding import Finding
    from torchscale.contracts.wording.forecast import said_once

    error = Finding(code="forecast.model_error", figures={"miss": 0.3, "error": 0.3})
    items = []
    for busy, slower in ((0.91, 1.82), (0.79, 1.58), (0.96, 1.92)):
        figures = {"ranks_per_host": 4, "demand": busy, "cores": 2, "shared": slower, "half": 0}
        items += [error, Finding(code="forecast.past_the_cores", figures=figures)]
    fixed = Finding(code="forecast.threads.fixed", figures={"threads": 1})
    assert said_once([*items, fixed]) == [
        "model error: no measured size could be back-tested; forecasts have missed by up to "
        "30 % (the stated default until a track record exists): interval widened by 30.0 %",
        "past the cores (4 ranks x 0.79-0.96 busy cores on 2): ranks take turns, 1.58-1.92x "
        "slower (they share the cores evenly); the scheduler's wake-up latency in each "
        "collective and other processes' CPU are not modelled (no measured cell ran past the "
        "cores: measure one)",
        "each rank runs 1 thread(s), as every measured cell did (OMP_NUM_THREADS fixed)",
    ]


def test_a_name_is_not_a_figure_to_merge() -> None:
    """Findings that differ in a name (the cell) are said each: only numbers become ranges."""
    from torchscale.contracts.finding import Finding
    from torchscale.contracts.wording.forecast import said_once

    def few(cell_id: str) -> Finding:
        figures = {"ranks_per_host": 1, "cell_id": cell_id, "fewest": 2}
        return Finding(code="forecast.few_ranks", figures=figures)

    said = said_once([few("m__w2"), few("n__w2")])
    assert len(said) == 2 and "from m__w2," in said[0] and "from n__w2," in said[1]
