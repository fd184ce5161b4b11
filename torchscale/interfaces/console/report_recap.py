"""The short summary printed after every report (`report` writing a file, or any format but
the terminal's): the header facts and the summary section's top figures, in a few lines.
"""

from __future__ import annotations

from torchscale.contracts.wording.spell import format_value
from torchscale.interfaces.formatting import strip_code
from torchscale.interfaces.report.model import Decision, Findings, KeyFigures, Report, Text

SUMMARY_MAX_LINES = 10
MAX_CALLS = 3  # the calls under the headline shown here at most; the report has them all


def summary_lines(report: Report) -> list[str]:
    """The short summary printed after every report (plain text: print it with markup off).

    From the report header (title, the headline, the calls under it, the first thing to do,
    cells, regressions, skipped inputs) and the summary section's key figures and text (the top
    findings), at most `SUMMARY_MAX_LINES` lines: the header facts always, then key figures
    and text sharing the rest."""
    figures: list[str] = []
    texts: list[str] = []
    summary = report.section("summary")
    for block in summary.blocks if summary is not None else []:
        if isinstance(block, KeyFigures):
            for figure in block.figures:
                note = f" ({figure.note})" if figure.note else ""
                value = format_value(figure.value, figure.format)
                figures.append(f"{figure.label}: {value}{note}")
        elif isinstance(block, Text):
            texts.append(block.text)
        elif isinstance(block, Findings) and block.findings:
            texts.append(f"top finding: {block.findings[0].title}")
    head = [report.title]
    if report.headline is not None:
        head.append(report.headline.text)
    if report.decision is not None:  # what a stakeholder acts on, as on every other surface
        head.extend(_calls(report.decision))
    if report.decision is not None and report.decision.actions:  # a stopped sweep: what finishes it
        head.append(f"to do first: {report.decision.actions[0].text}")
    if not any(line.lower().startswith("cells") for line in figures):
        current = report.current_sources()
        ok = sum(s.ok for s in current)
        failed = sum(s.failed for s in current)
        skipped = sum(s.skipped for s in current)
        head.append(
            f"cells: {ok} ok, {failed} failed"
            + (f", {skipped} skipped" if skipped else "")
            + f" of {sum(s.cells for s in current)} in {len(current)} source(s)"
        )
    if report.regressions:
        tail = [f"regressions: {report.regressions} by the stated rule"]
    elif report.baseline_sources() and report.regressions is None:
        tail = [
            f"regressions: not judged ({report.not_judged or 0} matched cell(s) could not be "
            "judged; their changes: baseline section)"
        ]
    elif report.baseline_sources():
        unjudged = f"; {report.not_judged} not judged" if report.not_judged else ""
        tail = [f"regressions: none by the stated rule{unjudged} (baseline section)"]
    else:
        tail = ["regressions: not compared (no --baseline given)"]
    if report.skipped:
        tail.append(f"inputs not read: {len(report.skipped)} (reasons in the report)")
    room = max(0, SUMMARY_MAX_LINES - len(head) - len(tail))
    # text (failures, the top finding) keeps a third of the room when there is text
    n_texts = min(len(texts), max(1, room // 3)) if texts else 0
    n_figures = min(len(figures), room - n_texts)
    n_texts = min(len(texts), room - n_figures)
    body = [" ".join(line.split()) for line in figures[:n_figures] + texts[:n_texts]]
    return [strip_code(line) for line in (*head, *body, *tail)]


def _calls(decision: Decision) -> list[str]:
    """The buy-or-fix calls under the headline, at most MAX_CALLS lines (the last of them
    counting the rest); the baseline's verdict is the tail's 'regressions:' line here."""
    calls = [line.text for line in decision.conclusions()]
    calls = calls[1:] if decision.baseline is not None else calls
    if len(calls) <= MAX_CALLS:
        return calls
    rest = len(calls) - MAX_CALLS + 1
    return [*calls[: MAX_CALLS - 1], f"and {rest} more calls (the report's first lines)"]
