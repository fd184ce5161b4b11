"""A 500-cell sweep's terminal summary (issue 63, point 6): its five models read alike, so the
decision says them in one line, and what the summary leaves out to fit is counted by kind, the
key figures (the cards) apart from the notes."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tests.scale_sample import report_scale
from torchscale.interfaces.cli.app import app


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


def test_runs_whose_diagnoses_read_alike_are_one_row(tmp_path: Path) -> None:
    """400 multi-rank cells with two distinct diagnoses: two rows, each counting its runs."""
    from tests.scale_sample import scale_report

    report = scale_report(tmp_path)
    section = report.section("summary")
    assert section is not None
    (table,) = [b for b in section.blocks if getattr(b, "id", None) == "summary-diagnoses"]
    assert len(table.rows) == 2
    assert all(str(r["run"]).endswith("and 199 more alike") for r in table.rows)
