"""`torchscale report -f term` is a summary: at most 60 lines at any sweep size, no line wider
than COLUMNS (80 included), printed or written with -o; `--full` prints the whole report
(1,044-1,161 lines for 8 cells, 54,209 for 500: a dump).

The sweeps are `benchmarks/report_scale.py`'s synthetic results at 8 and 500 cells (five
models, 500 noisy cells, 200 findings, 27 charts)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner

from tests.report_sample import sample_report
from torchscale.contracts.wording.spell import format_value
from torchscale.interfaces.cli.app import app
from torchscale.interfaces.console import report_summary, streams
from torchscale.interfaces.console import report_term as term
from torchscale.interfaces.formatting import strip_code
from torchscale.interfaces.report.build import build_report
from torchscale.interfaces.report.model import Findings, KeyFigure, KeyFigures, Report, Table, Text
from torchscale.interfaces.report.request import ReportOptions
from torchscale.interfaces.report.sources import read_sources

REPO = Path(__file__).resolve().parents[2]
MAX_LINES = 60


def _scale_module() -> Any:
    path = REPO / "benchmarks" / "report_scale.py"
    spec = importlib.util.spec_from_file_location("report_scale", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("report_scale", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("scale")
    return {cells: _scale_module().write_results(root, cells) for cells in (8, 500)}


@pytest.fixture(scope="module")
def reports(sweeps: dict[int, Path]) -> dict[int, Report]:
    return {n: build_report(read_sources(path), ReportOptions()) for n, path in sweeps.items()}


def _fits(text: str, width: int) -> list[str]:
    lines = text.splitlines()
    assert len(lines) <= MAX_LINES, (len(lines), text)
    widest = max(cell_len(line) for line in lines)
    assert widest <= width, (widest, [line for line in lines if cell_len(line) > width])
    return lines


@pytest.mark.slow
@pytest.mark.parametrize("cells", [8, 500])
@pytest.mark.parametrize("width", [80, 200])
def test_the_summary_fits_the_terminal_at_any_sweep_size(
    reports: dict[int, Report], cells: int, width: int
) -> None:
    report = reports[cells]
    lines = _fits(term.render(report, width).decode("utf-8"), width)
    flat = " ".join(" ".join(lines).split())
    # the decision first: title, then the headline verdict, as the model words it
    assert lines[0] == report.title
    assert report.headline is not None
    assert " ".join(strip_code(report.headline.text).split()) in flat  # code spans as text
    if report.decision is not None:  # then the decision's lines, before the sections
        for line in report.decision.conclusions() + report.decision.by_model():
            assert " ".join(strip_code(line.text).split()) in flat, line.text
    # the best configuration of every model, its throughput and efficiency whole (intervals),
    # where the numbers can be used (the table shows none under "cannot be used")
    summary = report.section("summary")
    assert summary is not None
    (best,) = [b for b in summary.blocks if isinstance(b, Table) and b.id == "summary-best"]
    for row in best.rows:
        for key in ("model", "samples_per_s_text", "efficiency_text"):
            if key in row:
                assert any(str(row[key]) in line for line in lines), (key, row[key])
        assert any(str(row["model"]) in line for line in lines)
    # the last line says what was left out and how to see it
    assert "All of it: --full; charts: -f html." in flat
    assert f"{len(report.charts())} charts" in flat


@pytest.mark.slow  # over 2 s on 2 cores
def test_500_cells_say_how_much_was_left_out(reports: dict[int, Report]) -> None:
    report = reports[500]
    flat = " ".join(term.render(report, 80).decode("utf-8").split())
    tables = [(s.id, b) for s in report.sections for b in s.blocks if isinstance(b, Table)]
    outside = sum(len(b.rows) for section, b in tables if section != "summary")
    every = sum(len(b.rows) for _, b in tables)
    counted = re.search(r"tables \(([\d,]+) rows\)", flat)
    assert counted is not None, flat
    # every row outside the summary, and the summary's rows beyond what fitted
    assert outside <= int(counted.group(1).replace(",", "")) <= every, (outside, every, flat)
    findings = sum(
        len(b.findings) for s in report.sections for b in s.blocks if isinstance(b, Findings)
    )
    assert f"{findings:,} findings" in flat  # counts spelled with thousands separators
    # a narrow terminal leaves columns out by name (a table, or its rows as paragraphs that
    # keep every qualifier), never cuts a figure
    assert re.search(r"left out (to fit the terminal )?\(--full shows them\):", flat), flat


def test_the_line_budget_holds_when_the_summary_is_long() -> None:
    """A summary section five times over (texts, key figures, a 5-row table each time), a
    40-column terminal: still 60 lines, and the verdict-bearing text kept first."""
    report = sample_report(cells=8)
    summary = report.section("summary")
    assert summary is not None
    summary.blocks = summary.blocks * 5 + [
        KeyFigures(figures=[KeyFigure(label=f"figure {i}", value=i) for i in range(40)]),
        Text(text="the machine was busy: rerun on an idle node", severity="bad"),
    ]
    for width in (40, 80):
        lines = _fits(term.render(report, width).decode("utf-8"), width)
        flat = " ".join(" ".join(lines).split())
        assert "✖ the machine was busy: rerun on an idle node" in flat
        assert flat.endswith("All of it: --full; charts: -f html.")  # the rest, counted


def test_a_key_figure_kept_keeps_its_note() -> None:
    """What qualifies a figure (its interval, 'noisy') is its note: where all do not fit,
    fewer figures are shown, each with its note, and the rest are counted (a bare '661,000'
    under 'cannot be used' read as a clean figure)."""
    report = sample_report(cells=2)
    figures = [
        KeyFigure(label=f"Figure {i}", value=0.5, format="ratio_pct", note=f"qualifier{i} " * 6)
        for i in range(30)
    ]
    report.sections[0].blocks = [KeyFigures(figures=figures)]
    lines = report_summary.summary(report, 80)
    assert len(lines) <= MAX_LINES
    shown = [i for i in range(30) if any(f"Figure {i} " in line for line in lines)]
    assert 0 < len(shown) < 30
    for i in shown:
        assert any(f"qualifier{i}" in line for line in lines), i
    assert any(f"and {30 - len(shown)} more key figures" in line for line in lines)
    assert format_value(0.5, "ratio_pct") in " ".join(lines)


def _invoke(*args: str, columns: str | None, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(streams.stdout, "_width", None)  # read COLUMNS as rich does
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    env = {"COLUMNS": columns} if columns is not None else {}
    return CliRunner().invoke(app, ["report", *args], env=env)


@pytest.mark.slow  # over 2 s on 2 cores
def test_printed_and_written_the_summary_fits_columns(
    sweeps: dict[int, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """COLUMNS=80: the printed summary and the one written with -o both fit: a file
    follows COLUMNS too, and takes 100 without it."""
    source = str(sweeps[8])
    printed = _invoke("-s", source, "-f", "term", columns="80", monkeypatch=monkeypatch)
    assert printed.exit_code == 0, printed.output
    _fits(printed.stdout, 80)
    target = tmp_path / "summary.txt"
    written = _invoke(
        "-s", source, "-f", "term", "-o", str(target), columns="80", monkeypatch=monkeypatch
    )
    assert written.exit_code == 0, written.output
    text = target.read_text(encoding="utf-8")
    _fits(text, 80)
    assert text.rstrip("\n") == printed.stdout.rstrip("\n")
    wide = tmp_path / "wide.txt"
    _invoke("-s", source, "-f", "term", "-o", str(wide), columns=None, monkeypatch=monkeypatch)
    widest = max(cell_len(line) for line in wide.read_text(encoding="utf-8").splitlines())
    assert 80 < widest <= term.WIDTH


@pytest.mark.slow  # over 2 s on 2 cores
def test_full_prints_the_whole_report(
    sweeps: dict[int, Path], reports: dict[int, Report], monkeypatch: pytest.MonkeyPatch
) -> None:
    report = reports[8]
    result = _invoke(
        "-s", str(sweeps[8]), "-f", "term", "--full", columns="80", monkeypatch=monkeypatch
    )
    assert result.exit_code == 0, result.output
    full = result.stdout
    assert len(full.splitlines()) > 10 * MAX_LINES  # the whole report, as before
    for section in report.sections:
        assert section.title in full
    assert max(cell_len(line) for line in full.splitlines()) <= 80
    # the same text as the renderer's whole report at that width (generated_at differs)
    expected = term.render(report, 80, full=True).decode("utf-8").rstrip("\n").splitlines()
    assert len(full.rstrip("\n").splitlines()) == len(expected)


@pytest.mark.slow  # over 2 s on 2 cores
def test_interactive_is_for_the_html_only(sweeps: dict[int, Path]) -> None:
    result = CliRunner().invoke(app, ["report", "-s", str(sweeps[8]), "-f", "md", "--interactive"])
    assert result.exit_code == 2
    assert "--interactive is for -f html" in result.output
    assert "Traceback" not in result.output
