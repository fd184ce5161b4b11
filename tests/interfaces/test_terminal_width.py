"""Every table fits the terminal and no figure is cut: the benchmark's per-model
tables, `torchscale list` and `report -f term`, at 80 and 200 columns.

A figure is "whole" when it appears on one line of the output, as written by the table's own
formatting; a column the narrow terminal leaves out must be named in the note instead."""

from __future__ import annotations

import functools
import io
import itertools
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from tests.report_sample import sample_report
from torchscale.api import build_report
from torchscale.contracts.finding import Finding
from torchscale.contracts.model_specs.listing import rows as model_rows
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.wording.spell import format_value
from torchscale.interfaces.cli.app import app
from torchscale.interfaces.console import report_term as term
from torchscale.interfaces.console import streams
from torchscale.interfaces.console.sweep_tables import (
    TABLE_COLUMNS,
    _row_cells,
    model_tables,
)
from torchscale.interfaces.formatting import _FIGURE
from torchscale.interfaces.report.model import Report, Table, Text
from torchscale.offline.results.documents import read_cell
from torchscale.offline.results.frame import cells_table

FIXTURES = Path(__file__).parents[1] / "fixtures"
WIDTHS = (80, 200)


def _fixture_results() -> list[CellResult]:
    """Real results of several shapes: an H100 cell, a tp2 CPU cell, ddp CPU cells with a
    diagnosis, and a directory of CPU cells (two models, one failed)."""
    files = [
        FIXTURES / "cells" / "h100_gpt2_bf16_compiled.json",
        FIXTURES / "cells" / "cpu_tiny_gpt2_tp2.json",
        FIXTURES / "cells" / "cpu_tiny_mlp_ddp_w2.json",
        FIXTURES / "cells" / "cpu_tiny_mlp_ddp_w2_again.json",
        *sorted((FIXTURES / "cpu_sweep_profile" / "v3_fixture" / "cells").glob("*.json")),
    ]
    results = []
    for path in files:
        read = read_cell(path)
        result = read.doc
        assert read.problem is None and result is not None, path
        results.append(result)
    return results


def _lines_fit(text: str, width: int) -> None:
    too_wide = [line for line in text.splitlines() if len(line.rstrip()) > width]
    assert not too_wide, "\n".join(too_wide)


def _whole(figure: str, text: str) -> bool:
    """On one line, not part of a longer token (so '16.6 %' is not found inside '116.6 %')."""
    pattern = rf"(?<![\w.,]){re.escape(figure)}(?![\w.,])"
    return any(re.search(pattern, line) for line in text.splitlines())


@pytest.mark.parametrize("width", WIDTHS)
def test_benchmark_tables_fit_and_keep_every_figure_whole(width: int) -> None:
    table = cells_table(_fixture_results())
    fitted = model_tables(table, width)
    console = Console(width=width, file=io.StringIO(), record=True, soft_wrap=True)
    for rich_table in fitted.tables:
        console.print(rich_table)
    console.print(fitted.note, soft_wrap=False, markup=False)
    out = console.export_text()
    _lines_fit(out, width)
    assert "…" not in out
    note = " ".join(fitted.note.split())
    for _, row in table.iterrows():
        cells = [re.sub(r"\[/?[^\]]*\]", "", cell) for cell in _row_cells(row)]
        for column, figure in zip(TABLE_COLUMNS, cells, strict=True):
            if figure == "-":
                continue
            assert _whole(figure, out) or column.header in note, (column.header, figure, out)
    if width >= 200:  # room for every column: nothing is left out
        assert "left out" not in note


def test_a_narrow_terminal_says_what_it_left_out_or_abbreviated() -> None:
    table = cells_table(_fixture_results())
    wide, narrow = model_tables(table, 200), model_tables(table, 80)
    # the H100 row's MFU and memory do not fit beside the CPU rows' figures at 80
    assert "left out to fit the terminal (summary.csv has every column)" in narrow.note
    assert narrow.note != wide.note


def _list_output(monkeypatch: pytest.MonkeyPatch, width: int) -> str:
    monkeypatch.setattr(streams.stdout, "_width", None)  # read COLUMNS as rich does
    result = CliRunner().invoke(app, ["list"], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("width", WIDTHS)
def test_list_fits_and_keeps_names_and_counts_whole(
    monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    out = _list_output(monkeypatch, width)
    _lines_fit(out, width)
    assert "…" not in out and "..." not in out.split("plug-in")[0]
    for model in model_rows():
        assert _whole(model["name"], out), model["name"]
        assert _whole(f"{model['parameters']:,}", out), model["name"]
    if width >= 200:  # every column shown, nothing abbreviated
        assert "left out" not in out
        assert "input per sample" in out and "tokens/sample" in out


def test_list_at_80_columns_names_the_columns_it_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    out = " ".join(_list_output(monkeypatch, 80).split())
    assert "left out to fit the terminal" in out
    assert "torchscale list --json has every field" in out


@functools.cache
def _report(source: str) -> Report:
    """The hand-made report (every block type, hostile strings), one built from real results
    (its tables' headers broke at 100 columns: 'Configura/tion', 'Parame/ters') and one from
    real cells with a step model, which writes figures as text ('0.3 % ±0.1 %': cut before its
    last '%' at 80 columns)."""
    if source == "sample":
        return sample_report(cells=8)
    if source == "real":
        return build_report(FIXTURES / "cpu_ddp_fsdp" / "v2_fixture", "term").report
    with tempfile.TemporaryDirectory() as tmp:
        cells = Path(tmp) / "step_model" / "cells"
        cells.mkdir(parents=True)
        for name in ("cpu_tiny_mlp_ddp_w2", "cpu_tiny_mlp_ddp_w2_again"):
            shutil.copy(FIXTURES / "cells" / f"{name}.json", cells / f"{name}.json")
        return build_report(cells.parent, "term").report


def _table_values(report: Report) -> list[tuple[str, str]]:
    """(alignment, text) of every cell of the report's tables, as the renderer formats it."""
    return [
        (column.align, format_value(row.get(column.key), column.format))
        for section in report.sections
        for block in section.blocks
        if isinstance(block, Table)
        for row in block.rows
        for column in block.columns
    ]


@pytest.mark.parametrize("source", ["sample", "real", "step_model"])
@pytest.mark.parametrize("width", WIDTHS)
def test_report_term_fits_the_width_and_cuts_no_figure_or_word(width: int, source: str) -> None:
    report = _report(source)
    text = term.render(report, width, full=True).decode("utf-8")
    _lines_fit(text, width)
    lines = text.splitlines()
    for align, value in _table_values(report):
        if align == "right" or _FIGURE.match(value):  # a figure: whole, on one line
            assert any(value in line for line in lines), (width, value)
        else:  # text: wraps between words, never inside one (unless wider than the line)
            for word in value.split():
                if len(word) < width // 2:
                    assert any(word in line for line in lines), word


@pytest.mark.parametrize("source", ["sample", "real", "step_model"])
@pytest.mark.parametrize("width", WIDTHS)
def test_report_term_headers_are_never_broken_inside_a_word(width: int, source: str) -> None:
    """Seen at 100 columns: 'Efficie/ncy'. A header wraps between words (and after '/' or
    '-'), or becomes a record label, whole."""
    report = _report(source)
    words = {
        word
        for section in report.sections
        for block in section.blocks
        if isinstance(block, Table)
        for column in block.columns
        for word in re.sub(r"([/-])(?=\w)", r"\1 ", column.label).split()
    }
    lines = term.render(report, width, full=True).decode("utf-8").splitlines()
    for word in words:
        assert any(word in line for line in lines), (width, word)


@pytest.mark.parametrize("source", ["sample", "real", "step_model"])
def test_report_term_breaks_no_header_at_a_slash_where_it_fits(source: str) -> None:
    """Seen at 200 columns: 'Samples/ s ±95 %', 'TFLOP/ s' in tables far narrower than the
    terminal. A header is broken after '/' or '-' only when the table cannot fit otherwise."""
    report = _report(source)
    text = term.render(report, 200, full=True).decode("utf-8")
    broken = re.findall(r"\w+/ \w+", text)
    assert not broken, f"headers broken after '/' in a table that fits: {broken}"


@pytest.mark.parametrize("width", WIDTHS)
def test_report_term_printed_takes_the_terminals_width(
    monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    """`torchscale report -f term` printed (no --output) is as wide as the terminal; before,
    it stayed 100 columns whatever the width."""
    monkeypatch.setattr(streams.stdout, "_width", None)  # read COLUMNS as rich does
    source = FIXTURES / "cpu_ddp_fsdp" / "v2_fixture"
    result = CliRunner().invoke(
        app, ["report", "-s", str(source), "-f", "term"], env={"COLUMNS": str(width)}
    )
    assert result.exit_code == 0, result.output
    widest = max(len(line) for line in result.stdout.splitlines())
    assert widest <= width
    if width > term.WIDTH:
        assert widest > term.WIDTH  # the room is used, not a file's 100 columns


def test_report_term_shows_code_spans_without_backticks() -> None:
    """HTML and PDF set `code` in code type; the terminal has no markup, so no backticks."""
    report = sample_report(cells=2)
    report.sections[0].blocks.append(Text(text="then run `torchscale benchmark --resume` again"))
    flat = " ".join(term.render(report, 120).decode("utf-8").split())
    assert "then run torchscale benchmark --resume again" in flat


@pytest.mark.parametrize("width", (60, 80, 120))
def test_cell_lines_fit_with_their_prefix_and_whole_figures(width: int) -> None:
    """Every cell line of the fixture results, cut to the width: no row wider, every row a
    `> ` line (grep '^>' finds the continuations), no unit alone on its row, and each
    interval ('[a, b]') on one row."""
    from torchscale.interfaces.console.cells import cell_lines
    from torchscale.interfaces.console.lines import fit_lines

    for result in _fixture_results():
        for verbose in (False, True):
            lines = cell_lines(result, verbose=verbose)
            rows = [line.text for line in fit_lines(lines, width)]
            words = {w for line in lines for w in line.text.split() if len(w) > width - 4}
            for row in rows:
                assert len(row) <= width or any(w in row for w in words), row
                assert row.startswith("> "), row
                assert row.removeprefix(">").strip() not in ("%", "ms", "us", "s"), row
                assert row.count("[") == row.count("]") or "[" not in row.split("] ")[-1], row


def test_the_busy_machine_is_said_once_per_cell() -> None:
    from torchscale.contracts.busy_machine import busy_finding
    from torchscale.contracts.schema.cell_warning import CellWarning
    from torchscale.contracts.wording.cell_warnings import warning_words
    from torchscale.interfaces.console.cells import cell_lines

    host = {"host": "vm", **busy_finding(2.3, 2.0, 2, 2).model_dump(), "load_avg_max": None}
    busy_warning = CellWarning.of("busy machine", "warning.busy_machine", {"hosts": [host]})
    variance = CellWarning.of(
        "high variance", "warning.step_time_cv", {"cv": 0.3, "threshold": 0.1}
    )
    busy = warning_words(busy_warning)
    assert busy.startswith("busy machine: on vm, other processes used 2.3 of 2 cores")
    for result in _fixture_results():
        if result.diagnosis is None:
            continue
        caveat = Finding(code="caveat.busy_machine", figures={"cores": 2.3, "host": "vm"})
        noisy = result.model_copy(
            update={
                "warnings": [busy_warning, variance],
                "diagnosis": result.diagnosis.model_copy(update={"busy": caveat}),
            }
        )
        default = [line.text for line in cell_lines(noisy)]
        assert sum("busy machine" in text for text in default) == 1
        assert any("High variance in step time" in text for text in default)
        verbose = [line.text for line in cell_lines(noisy, verbose=True)]
        assert any(busy in text for text in verbose)
        return
    pytest.fail("no fixture result with a diagnosis")


def test_lines_go_whole_to_a_pipe_and_cut_with_their_prefix_to_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """To a file or pipe (no COLUMNS) a line stays one line, for grep and logs; with COLUMNS
    (or a terminal) it is cut to the width, each row a '> ' row."""
    from torchscale.interfaces.console.lines import Line
    from torchscale.interfaces.console.streams import print_lines

    text = "> [ANALYSIS] Step 4.45 ms: " + ", ".join(f"part{i} {i}.5 %" for i in range(12))
    monkeypatch.delenv("COLUMNS", raising=False)
    piped = Console(file=io.StringIO(), width=80)
    print_lines(piped, [Line("info", text)])
    assert piped.file.getvalue().splitlines() == [text]  # type: ignore[attr-defined]
    monkeypatch.setenv("COLUMNS", "60")
    narrow = Console(file=io.StringIO(), width=60)
    print_lines(narrow, [Line("info", text)])
    rows = narrow.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert len(rows) > 1 and all(len(r) <= 60 and r.startswith("> ") for r in rows)
    rejoined = [rows[0], *(r.removeprefix(">   ") for r in rows[1:])]
    assert " ".join(rejoined).split() == text.split()  # every word kept, none cut


@pytest.mark.parametrize("width", (80, 120))
def test_profile_lines_fit_with_their_prefix(width: int) -> None:
    """`profile`'s run and analysis lines, cut to the width: no row wider, each a `> ` row."""
    from tests.interfaces.test_report_diagnosis import busy_diagnosis
    from tests.interfaces.test_report_uncertainty import estimate
    from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
    from torchscale.interfaces.console.lines import fit_lines
    from torchscale.interfaces.console.profile import analysis_lines

    analysis = ProfileAnalysis(
        torchscale_version="0",
        target="sync_stalls",
        source="d",
        tool="torch",
        world_size=2,
        ranks_analysed=2,
        backend="gloo",
        device_type="cpu",
        overlap_pct=None,
        diagnosis=busy_diagnosis(step_s=estimate(0.137, 0.13, 0.144)),
    )
    for verbose in (False, True):
        rows = [line.text for line in fit_lines(analysis_lines(analysis, verbose=verbose), width)]
        assert rows
        for row in rows:
            assert len(row) <= width and row.startswith("> "), row


@pytest.mark.parametrize("width", (80, 120))
def test_validate_fits_the_width(width: int) -> None:
    """`validate`: the verdict first, its table and summary lines, none wider than COLUMNS."""
    result = CliRunner().invoke(
        app, ["validate", "--device", "cpu", "--quick"], env={"COLUMNS": str(width)}
    )
    assert result.exit_code == 0, result.output
    _lines_fit(result.stdout, width)
    assert result.stdout.startswith("This node is ready")


@pytest.mark.parametrize("width", (80, 120))
def test_report_term_keeps_paragraphs_and_figures_whole(width: int) -> None:
    """The term report of a real 8-cell sweep: a paragraph's later rows are indented (a list
    item stays one), and no row break falls between a number and its unit."""
    source = FIXTURES / "cpu_default_sweep"
    text = term.render(build_report(source, "term").report, width).decode()
    rows = text.splitlines()
    _lines_fit(text, width)
    units = re.compile(r"^\s*(%|ms|us|s|MB|GB|samples/s|tokens/s)\b")
    for above, row in itertools.pairwise(rows):
        if re.search(r"\d$", above.rstrip()):
            assert not units.match(row), (above, row)
    # the headline's verdict and every decision line: continuation rows never at column 0
    head = rows[1 : rows.index("") if "" in rows else 12]
    starts = [i for i, row in enumerate(head) if row[:1] in ("▲", "✖", "✔") or row[:3] == "  -"]
    assert starts, head
    for row in head[1:]:
        if row and not row.startswith(("hardware:", "measured:", "description:", "source")):
            assert row.startswith(" "), row
