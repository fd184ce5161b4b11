"""The whole report as terminal text (`report -f term --full`): rich tables, no colour.

Every user string goes into rich as a `Text` object and the console runs with markup, emoji
codes and highlighting off, so a model name such as `[bold]x[/]` or `:rocket:` prints exactly as
written. Charts cannot be drawn here: each is its title plus a one-line summary of its data
(first and last point of a line, the bars of a bar chart), values formatted by `format_value`.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Sequence
from typing import IO

from rich import box
from rich.console import Console, RenderableType
from rich.rule import Rule
from rich.table import Table as RichTable
from rich.text import Text as RichText

from torchscale.contracts.wording.spell import format_value, of
from torchscale.interfaces.console.fit import longest_word
from torchscale.interfaces.console.lines import hanging_prose
from torchscale.interfaces.formatting import is_figure, severity_prefix, strip_code
from torchscale.interfaces.report.model import (
    Block,
    Chart,
    Findings,
    KeyFigure,
    KeyFigures,
    Report,
    Series,
    Table,
    Text,
    Unavailable,
)

WIDTH = 100  # a report written to a file; printed, it takes the terminal's width
CHART_POINTS = 6
COLUMN_GAP = 2  # a blank divider and one space of padding
SEVERITY_STYLE = {"bad": "bold", "warn": "italic", "good": "", "info": ""}


def _text(text: str, style: str = "") -> RichText:
    return RichText(text, style=style)


def prose(text: str, style: str = "") -> RichText:
    """Report prose, whose `code` spans the HTML and PDF set in code type: here the backticks
    go (a terminal shows no markup)."""
    return _text(strip_code(text), style)


def what_ran(report: Report) -> list[str]:
    """The header's facts of the run: 'hardware: ...', 'measured: ...', 'description: ...'."""
    facts = (
        ("hardware", report.hardware),
        ("measured", report.measured),
        ("description", report.description),
    )
    return [f"{label}: {value}" for label, value in facts if value]


def _header(report: Report) -> Iterator[RenderableType]:
    yield _text(report.title, "bold")
    if report.headline is not None:
        yield prose(severity_prefix(report.headline.severity) + report.headline.text, "bold")
    if report.decision is not None:
        decision = report.decision
        for line in decision.conclusions():
            yield prose(f"  - {severity_prefix(line.severity)}{line.text}")
        if decision.actions:
            yield _text("What to do:", "bold")
            for number, action in enumerate(decision.actions, 1):
                yield prose(f"  {number}. {action.text}")
        if decision.by_model():
            yield _text(f"{decision.by_model_heading}:", "bold")
            for line in decision.by_model():
                yield prose(f"  - {severity_prefix(line.severity)}{line.text}")
    yield from map(_text, what_ran(report))
    yield _text(f"generated {report.generated_at} by torchscale {report.torchscale_version}")
    for source in report.sources:
        cells = f"{source.cells} cell{'' if source.cells == 1 else 's'}"
        yield _text(
            f"{source.role if source.role == 'baseline' else 'source'} {source.name} "
            f"({source.path}): {cells}, {source.ok} ok, "
            f"{source.failed} failed, {source.skipped} skipped, {source.profiles} profile(s)"
        )
    for item in report.skipped:
        yield _text(f"input not read: {item.path}: {item.reason}", "italic")
    yield from (_text(line, "bold") for line in baseline_verdicts(report))


def baseline_verdicts(report: Report, counted: bool = False) -> list[str]:
    """A header's baseline lines: the regressions, then nothing judged (`counted`: with the
    cells not judged) or the cells not judged."""
    said = []
    bad, warn = severity_prefix("bad"), severity_prefix("warn")
    if report.regressions:
        said.append(f"{bad}{report.regressions} regression(s) by the stated rule")
    if report.baseline_sources() and report.regressions is None:
        count = f" (not judged: {report.not_judged} cells)" if counted and report.not_judged else ""
        said.append(f"{warn}nothing judged against the baseline{count}")
    elif report.not_judged:
        said.append(f"{warn}{report.not_judged} cell(s) not judged against the baseline")
    return said


def key_figures(figures: Sequence[KeyFigure]) -> RichTable:
    """Label, value and note, a row per figure."""
    table = RichTable(box=None, show_header=False, padding=(0, 2, 0, 0))
    table.add_column("label", overflow="fold")
    # a figure is never folded: label and note wrap between words around it
    table.add_column("value", justify="right", no_wrap=True, style="bold")
    table.add_column("note", overflow="fold")
    for figure in figures:
        table.add_row(
            _text(severity_prefix(figure.severity) + figure.label),
            _text(format_value(figure.value, figure.format)),
            prose(figure.note or ""),
        )
    return table


def _table(block: Table, width: int) -> Iterator[RenderableType]:
    """A table `width` columns wide at most, or when its columns cannot fit, one record per
    row (label: value), so that no number and no word is folded across lines."""
    yield _text(block.title, "bold")
    rows = []
    for row in block.rows:
        severity = row.get("_severity") or "info"
        cells = [format_value(row.get(c.key), c.format) for c in block.columns]
        if cells:
            cells[0] = severity_prefix(severity) + cells[0]
        rows.append((cells, SEVERITY_STYLE.get(severity, "")))
    # headers whole where they fit; broken after '/' and '-' only where the table needs it
    labels = [c.label for c in block.columns]
    widths = _widths(block, rows, width, labels)
    if widths is None:
        labels = [re.sub(r"([/-])(?=\w)", r"\1 ", label) for label in labels]
        widths = _widths(block, rows, width, labels)
    table = RichTable(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        show_header=widths is not None,
        padding=(0, 1, 0, 0),
        pad_edge=False,
    )
    if widths is None:
        table.add_column("field", style="bold", overflow="fold")
        table.add_column("value", overflow="fold")
        for number, (cells, style) in enumerate(rows):
            if number:
                table.add_section()
            for column, cell in zip(block.columns, cells, strict=True):
                table.add_row(_text(column.label), _text(cell), style=style)
    else:
        for column, label, width in zip(block.columns, labels, widths, strict=True):
            # fold: a long cell id or error message wraps, it is never cut with an ellipsis
            table.add_column(_text(label), justify=column.align, overflow="fold", width=width)
        for cells, style in rows:
            table.add_row(*(_text(cell) for cell in cells), style=style)
    yield table
    if block.note:
        yield prose(block.note)


def _widths(
    block: Table, rows: Sequence[tuple[list[str], str]], width: int, labels: Sequence[str]
) -> list[int] | None:
    """Column widths that add up to `width` at most (rich would otherwise size a column by
    its longest word and crop the last columns off the console). Figures (right-aligned
    columns, and a text column's cells that are figures: '0.3 % ±0.1 %') keep their whole
    width; text and headers (`labels`) wrap between words, never inside one; text columns
    share what is left. None: the columns cannot fit so."""
    count = len(block.columns)
    texts = [i for i, column in enumerate(block.columns) if column.align != "right"]
    widths = []
    natural = []
    for i in range(count):
        cells = [cells[i] for cells, _ in rows]
        longest = max((len(cell) for cell in cells), default=1)
        header_word = max(1, longest_word(labels[i]))
        if i in texts:
            # the narrowest a text cell can be: a figure whole, other text its longest word
            narrowest = (len(cell) if is_figure(cell) else longest_word(cell) for cell in cells)
            widths.append(max([header_word, *narrowest]))
            natural.append(max(longest, len(labels[i])))
        else:
            widths.append(max(header_word, longest))
            natural.append(widths[-1])
    budget = width - COLUMN_GAP * (count - 1) - sum(widths)
    if budget < 0:
        return None
    # text columns grow toward their longest cell, narrowest first, the rest shared evenly
    for n, i in enumerate(sorted(texts, key=lambda i: natural[i])):
        grown = max(widths[i], min(natural[i], widths[i] + budget // (len(texts) - n)))
        budget -= grown - widths[i]
        widths[i] = grown
    return widths


def _x(x: float | int | str, chart: Chart) -> str:
    return x if isinstance(x, str) else format_value(x, chart.x_format)


def _line_point(series: Series, i: int, chart: Chart) -> str:
    """'52.6 % at 2', with the point's interval where the series draws one (a point is never
    shown without the interval drawn around it)."""
    text = format_value(series.y[i], chart.y_format)
    low = series.low[i] if series.low is not None and i < len(series.low) else None
    high = series.high[i] if series.high is not None and i < len(series.high) else None
    if low is not None and high is not None:
        text += (
            f" (interval {format_value(low, chart.y_format)} to "
            f"{format_value(high, chart.y_format)})"
        )
    return f"{text} at {_x(series.x[i], chart)}"


def chart_summary(chart: Chart) -> str:
    """One line saying what a chart shows, from its data as given (nothing derived)."""
    if chart.kind == "heatmap":
        heatmap = chart.heatmap
        if heatmap is None:
            return "no data"
        return (
            f"{of(len(heatmap.y_labels), len(heatmap.x_labels))} grid of {heatmap.z_label} "
            f"({chart.y_label} by {chart.x_label})"
        )
    parts = []
    for series in chart.series:
        if chart.kind == "line":
            known = [i for i, y in enumerate(series.y) if y is not None and i < len(series.x)]
            if not known:
                parts.append(f"{series.name}: no data")
                continue
            first = _line_point(series, known[0], chart)
            parts.append(f"{series.name}: {first} → {_line_point(series, known[-1], chart)}")
        elif chart.kind == "box":
            labels = [_x(x, chart) for x in series.x]
            parts.append(
                f"{series.name}: {len(series.values or [])} distributions over "
                f"{chart.x_label} {', '.join(labels[:CHART_POINTS])}"
                + (" …" if len(labels) > CHART_POINTS else "")
            )
        else:
            points = [
                f"{_x(x, chart)}={format_value(y, chart.y_format)}"
                for x, y in zip(series.x, series.y, strict=False)
            ]
            more = f" … ({len(points) - CHART_POINTS} more)" if len(points) > CHART_POINTS else ""
            parts.append(f"{series.name}: {', '.join(points[:CHART_POINTS])}{more}")
    return "; ".join(parts) or "no data"


def _block(block: Block, width: int) -> Iterator[RenderableType]:
    if isinstance(block, Text):
        yield prose(severity_prefix(block.severity) + block.text, SEVERITY_STYLE[block.severity])
    elif isinstance(block, KeyFigures):
        yield key_figures(block.figures)
    elif isinstance(block, Table):
        yield from _table(block, width)
    elif isinstance(block, Chart):
        yield _text(f"Chart: {block.title} (see the HTML/PDF report)", "bold")
        yield _text(f"  {chart_summary(block)}")
        if block.absent:
            yield _text(f"  {block.absent_text()}")
    elif isinstance(block, Findings):
        for number, finding in enumerate(block.findings, start=1):
            cost = (
                f", {format_value(finding.cost_pct, 'pct')} of cycle/step time"
                if finding.cost_pct is not None
                else ""
            )
            yield prose(
                f"{severity_prefix(finding.severity)}{number}. {finding.title}",
                SEVERITY_STYLE[finding.severity] or "bold",
            )
            yield _text(f"   source: {finding.source}{cost}")
            if finding.caveat:
                yield prose(
                    f"   {severity_prefix('warn')}caveat: {finding.caveat}", SEVERITY_STYLE["warn"]
                )
            for item in finding.evidence:
                yield prose(f"   evidence: {item}")
            if finding.recommendation:
                yield prose(f"   recommendation: {finding.recommendation}")
    elif isinstance(block, Unavailable):
        yield _text("Not available here:", "bold")
        for what, why in block.items.items():
            yield prose(f"  - {what}: {why}")


def renderables(report: Report, width: int = WIDTH) -> list[RenderableType]:
    """The report as rich renderables `width` columns wide, for printing with styles."""
    items: list[RenderableType] = list(_header(report))
    for section in report.sections:
        items += [_text(""), Rule(_text(section.title, "bold"), align="left")]
        for block in section.blocks:
            items.extend(_block(block, width))
            items.append(_text(""))
    # a paragraph's later rows under its first word (a list item stays one)
    return [hanging_prose(item, width) for item in items]


def console(file: IO[str] | None = None, width: int | None = WIDTH) -> Console:
    """A console that interprets nothing in the text it prints (no markup, emoji, highlight)."""
    return Console(
        file=file,
        record=file is not None,
        width=width,
        force_terminal=False,
        markup=False,
        emoji=False,
        highlight=False,
    )


def render(report: Report, width: int = WIDTH) -> bytes:
    """The whole report as plain text, `width` columns wide at most (no figure and no word
    is cut to fit it)."""
    out = console(io.StringIO(), width)
    for item in renderables(report, width):
        out.print(item)
    return out.export_text(styles=False).encode("utf-8")
