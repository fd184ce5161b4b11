"""What a short report keeps: the decision and what carries it (`--full` has the rest).

A stakeholder's PDF, a notebook's JSON and a pull request's Markdown are read for the decision,
not searched, so those formats build by default only the sections that carry it (which, per
scope: docs/reporting.md, "Formats and sizes"). Sections not kept are never built."""

from __future__ import annotations

from typing import Literal

from torchscale.interfaces.report.charts.limits import cut
from torchscale.interfaces.report.model import (
    Block,
    Chart,
    Findings,
    Report,
    Section,
    Table,
    Text,
    Unavailable,
)

Scope = Literal["full", "short", "summary"]
# the glossary explains the words of the sections kept, so it comes with them
SHORT_SECTIONS = frozenset({"summary", "scaling", "forecasts", "baseline", "failures", "glossary"})
SUMMARY_SECTIONS = frozenset({"summary", "baseline", "glossary"})
PROFILE_SECTIONS = frozenset({"bottlenecks"})  # a profile-only report's diagnosis
MAX_CHARTS = 2  # essential charts in a short report
MAX_FINDINGS = 5  # the costliest, where a section lists findings
# charts that carry the decision, by the suffix of their id: scaling efficiency (all models
# on one chart, weak and strong) and a profiled run's stall per rank and step
ESSENTIAL_CHARTS = ("-efficiency", "-stalls")
# the default HTML: every section, each table's first rows (its box shows 25 and scrolls) and
# the costliest findings, so a 500-cell report is under 1 MB and 40 screens (was 2.6 MB, 153)
HTML_ROWS = 40
HTML_FINDINGS = 10
HTML_REST = "`torchscale report --full` (HTML or JSON)"


def kept_sections(scope: Scope, has_cells: bool) -> frozenset[str] | None:
    """The section ids a scope builds (None: every one)."""
    if scope == "full":
        return None
    if scope == "summary":
        return SUMMARY_SECTIONS
    return SHORT_SECTIONS if has_cells else SHORT_SECTIONS | PROFILE_SECTIONS


def trim(sections: list[Section]) -> tuple[list[Section], int]:
    """The sections a short report shows (a section left with nothing but notes of what is
    unavailable is dropped), and how many charts it left out. Findings keep their costliest
    `MAX_FINDINGS`; at most `MAX_CHARTS` essential charts are kept."""
    out: list[Section] = []
    charts_left = MAX_CHARTS
    dropped = 0
    for section in sections:
        blocks: list[Block] = []
        for block in section.blocks:
            if isinstance(block, Unavailable):
                continue
            if isinstance(block, Chart):
                if block.id.endswith(ESSENTIAL_CHARTS) and charts_left > 0:
                    charts_left -= 1
                    blocks.append(block)
                else:
                    dropped += 1
                continue
            if isinstance(block, Findings) and len(block.findings) > MAX_FINDINGS:
                more = len(block.findings) - MAX_FINDINGS
                note = f"the {MAX_FINDINGS} costliest; {more} more with --full"
                block = cut(block, "findings", MAX_FINDINGS, note)
            blocks.append(block)
        if blocks:
            out.append(section.model_copy(update={"blocks": blocks}))
    return out, dropped


def left_out_line(charts: int) -> Text:
    """The one line that says what a short report leaves out and where it is."""
    drawn = f" ({charts} more chart{'s' if charts != 1 else ''} among them)" if charts else ""
    return Text(
        text="This is the short report: the decision and what carries it. Every other "
        f"section, table and chart{drawn} is in `torchscale report --full` and in the "
        "HTML report."
    )


def shortened(report: Report, max_rows: int, max_findings: int, rest: str) -> Report:
    """The report with each table cut to its first `max_rows` rows and each findings list to
    its first (costliest) `max_findings`, each saying how many more `rest` holds: nothing is
    dropped that a fuller format does not show."""
    sections = []
    for section in report.sections:
        blocks = []
        for block in section.blocks:
            if isinstance(block, Table) and len(block.rows) > max_rows:
                more = len(block.rows) - max_rows
                note = f"first {max_rows} of {len(block.rows)} rows; {more} more in {rest}"
                block = cut(block, "rows", max_rows, note)
            elif isinstance(block, Findings) and len(block.findings) > max_findings:
                more = len(block.findings) - max_findings
                note = (
                    f"the {max_findings} costliest of {len(block.findings)} findings; "
                    f"{more} more in {rest}"
                )
                block = cut(block, "findings", max_findings, note)
            blocks.append(block)
        sections.append(section.model_copy(update={"blocks": blocks}))
    return report.model_copy(update={"sections": sections})
