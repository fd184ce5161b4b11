"""A 500-cell sweep's terminal summary: its five models read alike, so the
decision says them in one line, and what the summary leaves out to fit is counted by kind, the
key figures (the cards) apart from the notes."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.scale_sample import report_scale
from torchscale.interfaces.cli.app import app


@pytest.mark.slow  # over 2 s on 2 cores
def test_five_alike_models_are_one_line_and_dropped_cards_are_said(tmp_path: Path) -> None:
    experiment = report_scale().write_results(tmp_path, 500)
    result = CliRunner().invoke(
        app, ["report", "-s", str(experiment), "-f", "term"], env={"COLUMNS": "100"}
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    models = [ln for ln in lines if ln.startswith("  - scale-model-")]
    assert len(models) == 1 and "(5 models)" in models[0]
    assert len(lines) <= 62 and max(len(ln) for ln in lines) <= 100
    flat = " ".join(result.output.split())
    shown = "Cells measured" in flat
    assert shown or " key figure" in flat.split("Left out:")[1], "cards dropped without a word"


@pytest.mark.slow  # over 2 s on 2 cores
def test_runs_whose_diagnoses_read_alike_are_one_row(tmp_path: Path) -> None:
    """500 cells made from the busy sweep's four two-rank cells (benchmarks/report_scale.py),
    each carrying its template's diagnosis: four distinct diagnoses, four rows, each counting
    its runs."""
    from tests.scale_sample import report_scale, scale_report

    templates = [
        p
        for p in (report_scale().FIXTURE / "cells").glob("*.json")
        if "__w2__" in p.name and '"status": "ok"' in p.read_text(encoding="utf-8")
    ]
    assert len(templates) == 4
    report = scale_report(tmp_path)
    section = report.section("summary")
    assert section is not None
    (table,) = [b for b in section.blocks if getattr(b, "id", None) == "summary-diagnoses"]
    assert len(table.rows) == len(templates)
    assert all(str(r["run"]).endswith("and 124 more alike") for r in table.rows)


@pytest.mark.slow  # over 2 s on 2 cores
def test_a_capped_chart_keeps_the_lines_that_reach_the_axis_end(tmp_path: Path) -> None:
    """The strong-scaling efficiency chart keeps 11 of 140 series: it kept 11 lines that all
    ended at 2 ranks, on top of each other, on an axis to 16; now each model's widest line
    reaches 16, and within a model no kept line repeats another point for point."""
    from tests.scale_sample import scale_report

    (chart,) = [c for c in scale_report(tmp_path).charts() if c.id == "scaling-strong-efficiency"]
    kept = [s for s in chart.series if s.style == "solid" and s.name != "ideal"]
    widest = max(max(s.x) for s in chart.series)
    for model in {s.model for s in kept}:
        lines = [s for s in kept if s.model == model]
        assert max(max(s.x) for s in lines) == widest, model
        shapes = [(tuple(s.x), tuple(s.y)) for s in lines]
        assert len(set(shapes)) == len(shapes) or len(lines) == 1, model
