"""Markdown, JSON and terminal renderers (torchscale.interfaces.report.render.markdown / json_format
/ term): escaping of user strings, the JSON round trip, plain terminal text with no markup
interpreted, and the short summary printed after every report."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from tests.report_sample import HOSTILE, HOSTILE_IMG, sample_report, with_findings
from torchscale.contracts.wording.spell import format_value
from torchscale.interfaces.api.report_generate import renderer
from torchscale.interfaces.console import report_term as term
from torchscale.interfaces.console.report_full import chart_summary
from torchscale.interfaces.console.report_recap import SUMMARY_MAX_LINES, summary_lines
from torchscale.interfaces.report.model import (
    REPORT_SCHEMA_VERSION,
    Chart,
    Column,
    Findings,
    Report,
    Section,
    Series,
    Table,
    Text,
)
from torchscale.interfaces.report.render import json_format, markdown


def _with_cell(report: Report, text: str) -> Report:
    """The sample report with `text` as the model name of the first scaling row."""
    copy = report.model_copy(deep=True)
    table = next(b for b in copy.section("scaling").blocks if isinstance(b, Table))  # type: ignore[union-attr]
    table.rows[0]["model"] = text
    return copy


def _table_lines(text: str, header: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header} |"))
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return lines[start:end]


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)(?:\\\\)*\|", line))


# --- Markdown ---------------------------------------------------------------------------------


def _in_summary(report: Report, *blocks: Any) -> Report:
    """The sample report with `blocks` (the scaling table by default) added to its summary:
    the Markdown shows the summary, not every section."""
    copy = report.model_copy(deep=True)
    summary = copy.section("summary")
    assert summary is not None
    scaling = next(b for b in copy.section("scaling").blocks if isinstance(b, Table))  # type: ignore[union-attr]
    summary.blocks += list(blocks) or [scaling]
    return copy


def _with_headline(report: Report, **facts: Any) -> Report:
    headline = Text(text=f"On 8 x H100, {HOSTILE} scales at 92-96 % of linear", severity="warn")
    return report.model_copy(update={"headline": headline, **facts})


def test_markdown_never_holds_raw_html_from_user_strings() -> None:
    report = _with_headline(_in_summary(sample_report()), hardware=HOSTILE, description=HOSTILE)
    text = markdown.render(report).decode("utf-8")
    assert "<script>" not in text
    assert "<img" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<" not in text and ">" not in text  # nothing from the model is markup
    # a source's path is on the machine that made the report: not shown in a PR comment
    assert "&gt;&lt;img src=x onerror=alert(2)&gt;" not in text


def test_markdown_escapes_pipes_backslashes_and_ampersands_in_cells() -> None:
    report = _in_summary(_with_cell(sample_report(), "a|b \\ c & d\nnext line"))
    text = markdown.render(report).decode("utf-8")
    assert "a\\|b \\\\ c &amp; d next line" in text
    rows = _table_lines(text, "Model")
    columns = len(next(b for b in report.section("scaling").blocks if isinstance(b, Table)).columns)  # type: ignore[union-attr]
    # every row of the table has exactly its columns: the `|` in the cell did not add one
    assert all(_unescaped_pipes(row) == columns + 1 for row in rows)


def test_markdown_is_the_verdict_the_summary_and_a_link_not_the_whole_report() -> None:
    report = _with_headline(
        _in_summary(sample_report()),
        hardware="8 x H100 80GB HBM3",
        measured="2026-11-20",
        description="nightly",
        html_report="https://ci.example.com/run 7/report (1).html",
    )
    text = markdown.render(report).decode("utf-8")
    assert text.startswith("# Scaling report ")
    assert text.endswith("\n")
    lines = text.splitlines()
    assert lines[2].startswith("▲ **On 8 x H100, ")  # the verdict comes right after the title
    assert "Hardware: 8 x H100 80GB HBM3 · Measured: 2026-11-20 · Description: nightly" in text
    assert "## Executive summary" in text
    assert "Highest throughput: 704.0" in text
    # bold marks the decision sentence alone
    assert re.findall(r"\*\*[^*]+\*\*", text) == [f"**{markdown.inline(report.headline.text)}**"]  # type: ignore[union-attr]
    assert "| Model | GPUs |" in text and "|:---|---:|" in text
    assert "Top finding: " in text
    assert "5 cells (4 ok, 1 failed), 1 profiled run" in text
    # the other sections, their charts and the config stay in the HTML report
    assert "## Scaling" not in text and "## Appendix" not in text
    assert "Chart:" not in text and "experiment_name" not in text
    assert text.rstrip().endswith(
        "[https://ci.example.com/run 7/report (1).html]"
        "(https://ci.example.com/run%207/report%20%281%29.html)"
    )


def test_the_terminal_report_states_hardware_date_and_description() -> None:
    """The header a stakeholder reads first, in the terminal too (the audit found the
    description only in HTML, PDF and Markdown)."""
    report = _with_headline(
        _in_summary(sample_report()),
        hardware="8 x H100 80GB HBM3",
        measured="2026-11-20",
        description="nightly",
    )
    head = term.render(report, 120).decode("utf-8").splitlines()[:6]
    assert "hardware: 8 x H100 80GB HBM3" in head
    assert "measured: 2026-11-20" in head and "description: nightly" in head


def test_markdown_without_an_html_report_says_how_to_make_one() -> None:
    report = sample_report().model_copy(update={"source_path": "/data/results"})
    text = markdown.render(report).decode("utf-8")
    # the results directory by its name: its path is on the machine that made the report
    assert text.rstrip().endswith("run torchscale report -s results -f html")
    assert "/data/" not in text


def test_markdown_link_targets_cannot_break_out_or_run_script() -> None:
    assert markdown._link_target("javascript:alert(1)") == "javascript%3Aalert%281%29"
    assert markdown._link_target("../a b)/r.html") == "../a%20b%29/r.html"
    assert markdown._link_target("https://x.io/a<b>") == "https://x.io/a%3Cb%3E"


def test_markdown_tables_bold_no_cell() -> None:
    """A row's severity is its mark; bold is the decision's alone (a PR comment of 11 bold
    columns hides what matters)."""
    text = markdown.render(_in_summary(sample_report(cells=12))).decode("utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert rows and not any("**" in row for row in rows)


def test_markdown_caps_rows_per_table() -> None:
    text = markdown.render(_in_summary(sample_report(cells=60))).decode("utf-8")
    rows = _table_lines(text, "Model")
    assert len(rows) == 2 + markdown.MAX_ROWS
    assert f"... {60 - markdown.MAX_ROWS} more rows in the HTML report" in text


def test_markdown_lists_the_costliest_findings_and_counts_the_rest() -> None:
    many = with_findings(sample_report(), 25)
    findings = next(b for b in many.section("bottlenecks").blocks if isinstance(b, Findings))  # type: ignore[union-attr]
    text = markdown.render(_in_summary(many, findings)).decode("utf-8")
    assert f"finding {markdown.MAX_FINDINGS - 1} (" in text
    assert f"finding {markdown.MAX_FINDINGS} (" not in text
    assert f"... {25 - markdown.MAX_FINDINGS} more findings" in text


def test_markdown_lists_the_largest_changes_judged_or_not() -> None:
    columns = [Column(key="cell", label="Cell", align="left"), Column(key="verdict", label="V")]
    rows = [
        {"cell": "slower", "verdict": "regression", "_severity": "bad"},
        {"cell": "halved", "verdict": "not judged: 2 repeats a side", "_severity": "warn"},
        {"cell": "same", "verdict": "no significant change", "_severity": "info"},
    ]
    largest = Table(id="baseline-largest", title="Largest", columns=columns, rows=rows * 10)
    every = Table(id="baseline-changes", title="Every cell", columns=columns, rows=rows)
    section = Section(id="baseline", title="Against the baseline", blocks=[every, largest])
    report = sample_report()
    report = report.model_copy(update={"sections": [*report.sections, section]})
    text = markdown.render(report).decode("utf-8")
    shown = _table_lines(text, "Cell")[2:]
    assert len(shown) == markdown.MAX_ROWS
    assert "slower" in shown[0] and "not judged: 2 repeats a side" in shown[1]
    assert "Every cell" not in text  # the whole comparison stays in the HTML report


def test_markdown_is_cut_to_fit_a_pull_request_comment() -> None:
    huge = Text(text="z" * 40_000)
    report = _in_summary(sample_report(), huge, huge, huge)
    text = markdown.render(report).decode("utf-8")
    assert len(text) <= markdown.MAX_CHARS < 65_536
    assert "cut to fit a pull-request comment" in text
    assert text.rstrip().endswith("-f html")  # the way to the full report survives the cut


def test_markdown_keeps_the_lines_of_preformatted_text_as_text() -> None:
    text = markdown._preformatted(
        f"experiment_name: {HOSTILE}\nmodels:\n- name: tiny-mlp\n  options: {{}}\n# ```\n"
        "1. not a list"
    )
    lines = text.splitlines()
    assert lines[1:] == [
        "models:\\",
        "\\- name: tiny-mlp\\",  # a list item stays text
        "&nbsp;&nbsp;options: {}\\",  # indentation kept
        "\\# \\`\\`\\`\\",  # neither a heading nor a code fence
        "1\\. not a list",
    ]


def test_markdown_paragraphs_cannot_start_blocks() -> None:
    assert markdown._paragraph("# not a heading") == "\\# not a heading"
    assert markdown._paragraph("1. not a list") == "1\\. not a list"
    assert markdown._paragraph("- not a list") == "\\- not a list"
    assert markdown._paragraph("69.2 % of the step") == "69.2 % of the step"
    assert markdown.escape("[link](javascript:x) *b* `c`") == (
        "\\[link\\](javascript:x) \\*b\\* \\`c\\`"
    )
    # underscores inside a word cannot emphasise: ids stay readable; at a boundary they can
    assert markdown.escape("tiny-mlp__b8__w2 snake_case") == "tiny-mlp__b8__w2 snake_case"
    assert markdown.escape("_x_ __init__") == "\\_x\\_ \\_\\_init\\_\\_"


# --- JSON -------------------------------------------------------------------------------------


def test_json_round_trips_to_the_same_model() -> None:
    report = sample_report(cells=12)
    data = json_format.render(report)
    assert data.endswith(b"\n")
    assert Report.model_validate_json(data) == report
    loaded = json.loads(data)
    assert loaded["kind"] == "torchscale.report"
    assert loaded["schema_version"] == REPORT_SCHEMA_VERSION
    assert renderer("json") is json_format.render


# --- terminal ---------------------------------------------------------------------------------


def test_term_holds_every_section_and_hostile_strings_literally() -> None:
    report = sample_report()
    text = term.render(report, full=True).decode("utf-8")
    for section in report.sections:
        assert section.title in text
    assert HOSTILE in text
    assert HOSTILE_IMG in text
    assert "\x1b[" not in text  # no ANSI escapes in the recorded text
    assert max(len(line) for line in text.splitlines()) <= term.WIDTH
    assert "704.0" in text and "88.0 %" in text
    assert "Chart: Throughput vs GPUs" in text
    # line chart: first → last, each point with the interval drawn around it
    words = " ".join(text.split())  # the line wraps at the console's width
    assert "100.0 (interval 97.0 to 103.0) at 1 → 704.0 (interval 682.9 to 725.1) at 8" in words
    assert "balance the input pipeline of rank 1" in text
    assert "MFU: CPU device" in text
    # the failures table folds its long strings, it never cuts them
    assert text.count("x") >= 150
    assert text.count("y") >= 300


def test_term_interprets_no_markup_in_user_strings() -> None:
    title = "[bold red]boom[/] :rocket: [link=https://example.com]x[/link]"
    report = _with_cell(sample_report().model_copy(update={"title": title}), "[/]")
    text = term.render(report, full=True).decode("utf-8")
    assert title in text
    assert "[/]" in text
    assert "🚀" not in text


def test_term_table_fits_the_width_with_all_columns() -> None:
    text = term.render(sample_report(cells=8), full=True).decode("utf-8")
    assert "baseline" in text  # the last column is not cropped off
    assert max(len(line) for line in text.splitlines()) <= term.WIDTH


def test_term_table_too_wide_for_the_console_becomes_records() -> None:
    columns = [Column(key=f"c{i}", label=f"Column number {i}", format="seconds") for i in range(16)]
    row = {f"c{i}": 0.0123 * (i + 1) for i in range(16)}
    table = Table(id="wide", title="Wide table", columns=columns, rows=[row, row])
    report = sample_report()
    report.sections[0].blocks = [table]
    text = term.render(report, full=True).decode("utf-8")
    assert max(len(line) for line in text.splitlines()) <= term.WIDTH
    for i in range(16):
        # each value whole on the line of its label: no number folded across lines
        assert re.search(
            rf"Column number {i} +{re.escape(format_value(row[f'c{i}'], 'seconds'))}", text
        )


def test_chart_summaries_per_kind() -> None:
    charts = {c.id: c for c in sample_report().charts()}
    assert chart_summary(charts["efficiency"]).startswith("gpt2: 1=100.0 %, 2=96.0 %")
    assert "4 distributions over GPUs 1, 2, 4, 8" in chart_summary(charts["step-distribution"])
    assert "backward: 0=8.00 ms, 1=58.0 ms" in chart_summary(charts["phases-per-rank"])
    assert chart_summary(charts["stall-heatmap"]).startswith("2 x 5 grid of stall % of step")
    gap = Chart(
        id="g", title="g", kind="line", x_label="x", y_label="y",
        series=[Series(name="s", x=[1, 2, 3], y=[None, 2.0, None])],
    )  # fmt: skip
    assert chart_summary(gap) == "s: 2.00 at 2 → 2.00 at 2"


def test_summary_lines_from_header_and_summary_section() -> None:
    report = sample_report()
    lines = summary_lines(report)
    assert 5 <= len(lines) <= SUMMARY_MAX_LINES
    assert lines[0] == report.title
    assert lines[1] == "cells: 4 ok, 1 failed of 5 in 1 source(s)"
    assert f"Highest throughput: {format_value(704.0, 'rate')} ({HOSTILE} at 8 GPUs)" in lines
    assert "Scaling efficiency at 8 GPUs: 88.0 %" in lines
    assert any(line.startswith("Top finding:") for line in lines)
    assert "regressions: 1 by the stated rule" in lines
    assert all("\n" not in line for line in lines)


def test_the_verdict_is_the_first_line_after_the_title() -> None:
    report = _with_headline(sample_report())
    lines = summary_lines(report)
    assert lines[:2] == [report.title, f"On 8 x H100, {HOSTILE} scales at 92-96 % of linear"]
    assert len(lines) <= SUMMARY_MAX_LINES
    printed = term.render(report).decode("utf-8").splitlines()
    assert printed[1].startswith("▲ On 8 x H100, ")


def test_summary_lines_stay_short_with_many_figures() -> None:
    report = sample_report()
    summary = report.section("summary")
    assert summary is not None
    summary.blocks = summary.blocks * 5
    lines = summary_lines(report)
    assert len(lines) == SUMMARY_MAX_LINES
    assert lines[-2].startswith("regressions:")  # the header facts are kept, figures cut


# --- imports ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "module",
    [
        "report.render.markdown",
        "report.render.json_format",
        "console.report_term",
        "report.render.pdf",
    ],
)
@pytest.mark.slow  # starts a child process
def test_light_formats_import_neither_weasyprint_nor_matplotlib(module: str) -> None:
    code = (
        f"import sys, torchscale.interfaces.{module}; "
        "print(sorted(m for m in ('weasyprint', 'matplotlib') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, check=True, timeout=60, text=True
    )
    assert done.stdout.strip() == "[]"
