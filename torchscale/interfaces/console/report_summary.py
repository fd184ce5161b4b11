"""The terminal report's default form: a summary of at most `MAX_LINES` lines, however many
cells the sweep has, no line wider than the terminal (`report -f term --full` prints it all).
What it shows and in which order blocks get lines when not all fit: docs/reporting.md
("Terminal"). Nothing is computed here: every figure is the model's, formatted by
`format_value`, every sentence the model's own.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from rich.console import RenderableType
from rich.text import Text as RichText

from torchscale.contracts.wording.spell import MISSING, format_value
from torchscale.contracts.wording.spell import count as count_text
from torchscale.interfaces.console import fit
from torchscale.interfaces.console.lines import RICH_JOIN, glued, hanging_prose, unglued
from torchscale.interfaces.console.report_full import baseline_verdicts, key_figures, what_ran
from torchscale.interfaces.console.report_full import console as plain_console
from torchscale.interfaces.console.report_full import prose as _prose
from torchscale.interfaces.formatting import is_figure, severity_prefix, strip_code
from torchscale.interfaces.report.model import (
    Block,
    Chart,
    Findings,
    KeyFigures,
    Report,
    Table,
    Text,
    Unavailable,
)

MAX_LINES = 60
TABLE_ROWS = 12  # of one table at most: a summary, not the table
FINDINGS = 5  # titles of a findings block at most
# a table whose rows wrap to more lines than this each (prose in narrow columns) is printed a
# paragraph per row instead
ROWS_PER_RECORD = 3
SUMMARY = "summary"
# a narrow terminal leaves these columns of a summary table out first, in this order (they
# repeat what another column says: the configuration names its batch and rank count); then
# any other column from the right; the first (what the row is) stays
# ('lead', how far the best leads the next, is the headline's best line already; a run's
# step split and what-if give way to its straggler verdict)
DROP_FIRST = ("split", "whatif", "batch_per_gpu", "gpus", "step_p50_text", "tokens_per_s")
# what a kept figure means (the criterion it is best by, whether its lead is real, whether it
# can be used): never left out while the figure stays; one value in every row is said once
# in the table's title after these words ('best by throughput', 'reliable')
QUALIFIERS = {"best_by": "best by", "lead": "", "reliability": "all"}
# the order in which blocks get lines when everything does not fit (lower first)
PRIORITY = {"alert": 0, "table": 1, "figures": 2, "findings": 3, "text": 4, "note": 5}


def _lines(items: Sequence[RenderableType], width: int) -> list[str]:
    """`items` as printed `width` columns wide, one string per line (plain: no styles)."""
    if not items:
        return []
    console = plain_console(io.StringIO(), width)
    for item in items:
        console.print(hanging_prose(item, width))
    text = unglued(console.export_text(styles=False))
    return [line.rstrip() for line in text.splitlines()]


# a part's ways of being drawn, most complete first: (items shown, lines)
Drafts = Callable[[], Iterator[tuple[int, list[str]]]]


@dataclass
class _Part:
    """One block of the summary and its `drafts`, the first that fits is printed (a table
    with fewer rows, key figures without their notes, then fewer of them)."""

    order: int
    priority: int
    drafts: Drafts
    spaced: bool = True  # a blank line around it (consecutive texts run on)
    shown: int = 0
    lines: list[str] | None = None


def _counts(most: int, draw: Callable[[int], list[str]]) -> Drafts:
    """Drafts of the first `most`, then one fewer, down to one item."""
    return lambda: ((count, draw(count)) for count in range(most, 0, -1))


def _text_part(order: int, block: Text, width: int) -> _Part:
    lines = _lines([_prose(severity_prefix(block.severity) + block.text)], width)
    urgent = block.severity in ("bad", "warn")
    priority = PRIORITY["alert" if urgent else "text"]
    return _Part(order, priority, lambda: iter([(1, lines)]), spaced=False)


def _figures_part(order: int, block: KeyFigures, width: int) -> _Part:
    """Key figures with their notes (what each is, its interval, whether it can be used),
    fewer of them where all do not fit: a figure kept never loses what qualifies it (a bare
    '661,000' under 'cannot be used' read as a clean figure)."""
    figures = block.figures

    def draw(count: int) -> list[str]:
        table = key_figures(figures[:count])
        return _more(_lines([table], width), len(figures) - count, "key figure", width)

    return _Part(order, PRIORITY["figures"], _counts(len(figures), draw))


def _columns(block: Table, cells: Sequence[Sequence[str]]) -> list[fit.FitColumn]:
    keys = [c.key for c in block.columns]
    later = [k for k in reversed(keys[1:]) if k not in DROP_FIRST]
    ranked = [k for k in DROP_FIRST if k in keys[1:]] + later
    columns = []
    for index, column in enumerate(block.columns):
        values = [row[index] for row in cells]
        figures = all(v == MISSING or is_figure(v) for v in values)
        columns.append(
            fit.FitColumn(
                header=column.label,
                justify=column.align,
                drop=ranked.index(column.key) if column.key in ranked else None,
                wrap=column.align == "left" and not figures,
                fact=QUALIFIERS.get(column.key),
            )
        )
    return columns


def _table_part(order: int, block: Table, width: int) -> _Part:
    cells = [[format_value(row.get(c.key), c.format) for c in block.columns] for row in block.rows]
    for row, texts in zip(block.rows, cells, strict=True):
        if texts:
            texts[0] = severity_prefix(row.get("_severity") or "info") + texts[0]
    # a wrapped cell never breaks inside a figure ('+3.13 ms', '[1.97, 4.37]')
    rows = [[RichText(glued(text, RICH_JOIN)) for text in texts] for texts in cells]
    columns = _columns(block, cells)
    fitted = fit.fit_table(columns, rows, width)
    tall = _tall(fitted, rows, width)
    # prose that wraps tall: leave its columns out, in the order of DROP_FIRST, while that
    # makes the table read as one (the note names them)
    prose = sorted(
        (i for i, c in enumerate(columns) if c.wrap and c.drop is not None),
        key=lambda i: columns[i].drop or 0,
    )
    shown = rows
    for left_out in range(1, len(prose) + 1):
        if not tall:
            break
        gone = set(prose[:left_out])
        kept = [i for i in range(len(columns)) if i not in gone]
        narrower = [[row[i] for i in kept] for row in rows]
        trial = fit.fit_table([columns[i] for i in kept], narrower, width)
        if not _tall(trial, narrower, width):
            trial.dropped[:0] = [columns[i] for i in sorted(gone)]
            fitted, tall, shown = trial, False, narrower
    keys = [c.key for c in block.columns]
    essential = [i for i, key in enumerate(keys) if i == 0 or key not in DROP_FIRST]
    # still tall, or a column that carries the reading left out: a paragraph per row, of the
    # columns that carry it
    lost = any(columns[i] in fitted.dropped for i in essential)
    paragraphs = tall or lost

    def draw(count: int) -> list[str]:
        if paragraphs:
            drawn = _lines([RichText(block.title)], width)
            records = [_record(block, texts, essential) for texts in cells[:count]]
            drawn += _lines([RichText(text) for text in records], width)
            left = [c.label for i, c in enumerate(block.columns) if i not in essential]
            if left:
                drawn += _lines([_prose(f"left out (--full shows them): {', '.join(left)}")], width)
            return _more(drawn, len(rows) - count, "row", width)
        drawn = _lines([RichText(block.title), fitted.table(shown[:count])], width)
        notes = fitted.notes(elsewhere="--full shows them")
        drawn += _lines([_prose(note) for note in notes], width)
        return _more(drawn, len(rows) - count, "row", width)

    return _Part(order, PRIORITY["table"], _counts(min(len(rows), TABLE_ROWS), draw))


def _tall(fitted: fit.Fitted, rows: Sequence[Sequence[RichText]], width: int) -> bool:
    """More than ROWS_PER_RECORD lines a row once drawn (its header and rule aside)."""
    return len(_lines([fitted.table(rows)], width)) - 2 > ROWS_PER_RECORD * len(rows)


def _record(block: Table, texts: Sequence[str], columns: Sequence[int]) -> str:
    """A table row's `columns` as one paragraph: '▲ tiny-gpt2 b16 x2: Sync stall 5.7 % [3.8,
    7.6]; Straggler: rank 1, ...' (a value that starts with its column's name is not named
    twice)."""
    head = texts[0]
    parts = []
    for index in columns[1:]:
        column, text = block.columns[index], texts[index]
        if text == MISSING:
            continue
        label = column.label
        named = text.lower().startswith(label.lower().split()[0])
        parts.append(text if named else f"{label} {text}")
    return f"{strip_code(head)}: {'; '.join(strip_code(p) for p in parts)}"


def _findings_part(order: int, block: Findings, width: int) -> _Part:
    def draw(count: int) -> list[str]:
        titles = [
            _prose(f"{severity_prefix(f.severity)}{n}. {f.title}")
            for n, f in enumerate(block.findings[:count], start=1)
        ]
        return _more(_lines(titles, width), len(block.findings) - count, "finding", width)

    most = min(len(block.findings), FINDINGS)
    return _Part(order, PRIORITY["findings"], _counts(most, draw))


def _unavailable_part(order: int, block: Unavailable, width: int) -> _Part:
    text = "Not available here: " + "; ".join(block.items) + " (why: --full)"
    lines = _lines([_prose(text)], width)
    return _Part(order, PRIORITY["note"], lambda: iter([(1, lines)]), spaced=False)


def _more(lines: list[str], left: int, what: str, width: int) -> list[str]:
    if left <= 0:
        return lines
    return lines + _lines([RichText(f"… and {left} more {what}{'' if left == 1 else 's'}")], width)


def _part(order: int, block: Block, width: int) -> _Part | None:
    """The summary's form of a block; None for a chart (a terminal cannot draw it)."""
    if isinstance(block, Text):
        return _text_part(order, block, width)
    if isinstance(block, KeyFigures) and block.figures:
        return _figures_part(order, block, width)
    if isinstance(block, Table) and block.rows:
        return _table_part(order, block, width)
    if isinstance(block, Findings) and block.findings:
        return _findings_part(order, block, width)
    if isinstance(block, Unavailable) and block.items:
        return _unavailable_part(order, block, width)
    return None


def _header(report: Report, width: int) -> list[str]:
    """The title, the headline verdict, what ran and the baseline's verdict."""
    items: list[RenderableType] = [RichText(report.title)]
    if report.headline is not None:
        items.append(_prose(severity_prefix(report.headline.severity) + report.headline.text))
    if report.decision is not None:  # what to conclude, what to do, then what carries it
        decision = report.decision
        for line in decision.conclusions():
            items.append(_prose(f"  - {severity_prefix(line.severity)}{line.text}"))
        for number, action in enumerate(decision.actions, 1):
            lead = "What to do: " if number == 1 else ""
            items.append(_prose(f"  {lead}{number}. {action.text}"))
        if decision.by_model():
            items.append(_prose(f"  {decision.by_model_heading}:"))
        for line in decision.by_model():
            items.append(_prose(f"  - {severity_prefix(line.severity)}{line.text}"))
    items += map(RichText, what_ran(report))
    for source in report.sources:
        role = "baseline" if source.role == "baseline" else "source"
        items.append(RichText(f"{role} {source.name}: {source.contents()}"))
    if report.skipped:
        items.append(RichText(f"{severity_prefix('warn')}inputs not read: {len(report.skipped)}"))
    items += map(RichText, baseline_verdicts(report, counted=True))
    return _lines(items, width)


def _fill(parts: list[_Part], budget: int) -> None:
    """Give each part, by priority, as many items as fit in `budget` lines (with the blank
    lines around it)."""
    for part in sorted(parts, key=lambda p: (p.priority, p.order)):
        room = budget - (2 if part.spaced else 0)
        for count, lines in part.drafts():
            if len(lines) <= room:
                part.shown, part.lines = count, lines
                budget = room - len(lines)
                break


def _body(parts: list[_Part]) -> list[str]:
    """The parts shown, in the report's order, blank lines around those spaced."""
    out: list[str] = []
    shown = [p for p in sorted(parts, key=lambda p: p.order) if p.lines is not None]
    for number, part in enumerate(shown):
        if part.spaced and out and out[-1]:
            out.append("")
        out.extend(part.lines or [])
        following = shown[number + 1] if number + 1 < len(shown) else None
        if (part.spaced and following is not None) or (following is not None and following.spaced):
            out.append("")
    return out


@dataclass
class _LeftOut:
    sections: int = 0
    tables: int = 0
    rows: int = 0
    charts: int = 0
    findings: int = 0
    figures: int = 0  # key figures (the cards): said apart, never folded into the notes
    notes: int = 0  # texts, notes of what is unavailable

    def add(self, block: Block, shown: int = 0) -> None:
        if isinstance(block, Table):
            if shown < len(block.rows):
                self.tables += 1
                self.rows += len(block.rows) - shown
        elif isinstance(block, Chart):
            self.charts += 1
        elif isinstance(block, Findings):
            self.findings += len(block.findings) - shown
        elif isinstance(block, KeyFigures):
            self.figures += len(block.figures) - shown
        elif not shown:
            self.notes += 1

    def line(self) -> str:
        counts = [
            (self.sections, "section"),
            (self.tables, "table"),
            (self.charts, "chart"),
            (self.findings, "finding"),
            (self.figures, "key figure"),
            (self.notes, "note"),
        ]
        said = []
        for count, what in counts:
            if count:
                rows = f" ({count_text(self.rows)} rows)" if what == "table" and self.rows else ""
                said.append(f"{count_text(count)} {what}{'' if count == 1 else 's'}{rows}")
        if not said:
            return "Nothing left out."
        return f"Left out: {', '.join(said)}. All of it: --full; charts: -f html."


def summary(report: Report, width: int, max_lines: int = MAX_LINES) -> list[str]:
    """The report's summary as lines, `width` columns wide at most, `max_lines` at most
    where the header and the last line leave room (they are always printed)."""
    head = _header(report, width)
    section = report.section(SUMMARY)
    blocks: list[Block] = list(section.blocks) if section is not None else []
    parts: dict[int, _Part] = {}
    for order, block in enumerate(blocks):
        part = _part(order, block, width)
        if part is not None:
            parts[order] = part
    # the last line's length is known once the parts are chosen: keep room for its longest
    longest = _LeftOut(99, 9_999, 9_999_999, 9_999, 99_999, 999, 9_999).line()
    reserve = len(_lines([RichText(longest)], width))
    _fill(list(parts.values()), max_lines - len(head) - reserve - 2)
    left = _LeftOut(sections=sum(1 for s in report.sections if s is not section))
    for order, block in enumerate(blocks):
        part = parts.get(order)
        left.add(block, part.shown if part is not None and part.lines is not None else 0)
    for other in report.sections:
        for block in other.blocks if other is not section else []:
            left.add(block)
    body = _body(list(parts.values()))
    tail = _lines([RichText(left.line())], width)
    return [*head, "", *body, *([""] if body else []), *tail]


def render(report: Report, width: int) -> bytes:
    """The summary as text, one line per line, ending in a newline."""
    return ("\n".join(summary(report, width)) + "\n").encode("utf-8")
