"""PDF renderer: the report as print HTML (jinja2, autoescaped) laid out by WeasyPrint.

- Charts are the HTML's SVGs (`svg_direct`) embedded as `data:` URIs: no JavaScript, sharp at
  any zoom, every image an isolated document.
- Nothing is fetched: the URL fetcher refuses every scheme but the charts' `data:`, so a user
  string can never make the renderer reach the network or read a local file.
- Layout decisions only (column widths, font size of wide tables); every number comes from
  the model and is formatted by `format_value`."""

from __future__ import annotations

import base64
import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import jinja2

from torchscale.contracts.wording.spell import format_value
from torchscale.interfaces.formatting import SEVERITY_MARK, template_environment
from torchscale.interfaces.report.model import Chart, Column, Report, Table
from torchscale.interfaces.report.progress import OnStep, Step, ignore
from torchscale.interfaces.report.render.svg_direct import ChartError, chart_svg, drawn_charts
from torchscale.interfaces.report.short import shortened

log = logging.getLogger(__name__)

TEMPLATE_PACKAGE = "torchscale.interfaces.report"
TEMPLATE_DIR = "templates/pdf"
STYLESHEET = "report.css"
WIDTHS = "dejavu-sans-bold-widths.json"
# greyscale-safe severity cue: a glyph and bold text, with colour only as a bonus
SEVERITY_WORD = {"bad": "problem", "warn": "warning", "good": "good", "info": ""}
# table layout of report.css: A4 less two 15 mm margins, 3 pt of padding each side of a cell,
# and the font sizes a table may get (CSS class -> pt), largest first: a table gets the largest
# at which its headers and short values fit the page width without breaking a word
TABLE_WIDTH_PT = (210 - 2 * 15) / 25.4 * 72
CELL_PADDING_PT = 6.0
TABLE_FONTS = (("", 8.0), ("wide", 7.0), ("very-wide", 6.2), ("tiny", 5.5))
# a value up to this wide (em) never wraps: numbers, units, short names; a longer text asks
# for up to LONG_TEXT_EM and wraps within it
SHORT_TEXT_EM = 6.5
LONG_TEXT_EM = 18.0
SAFETY = 1.05  # rounding, kerning and fallback fonts
WORD_EM = 9.0  # a value's word up to this wide keeps its column (a version, a clock reason)
MISSING_GLYPH_EM = 1.0  # a character DejaVu Sans lacks: another font draws it, as wide as this
PDF_MAX_ROWS = 30  # per table: a stakeholder's PDF; the HTML and JSON --full keep every row
PDF_MAX_FINDINGS = 15  # the costliest; each takes a fifth of a page
PDF_REST = "the HTML report with --full"  # where what the PDF cuts is


class RefusedURL(ValueError):
    """A URL other than `data:` was asked for while rendering the PDF."""


def _check_url(url: str) -> None:
    if not url.startswith("data:"):
        raise RefusedURL(f"the PDF renderer fetches nothing: refused {url[:80]!r}")


def url_fetcher() -> Any:
    """A WeasyPrint URL fetcher that serves `data:` URIs and refuses everything else."""
    import weasyprint

    base = getattr(weasyprint, "URLFetcher", None)
    if base is None:  # WeasyPrint < 68: a fetcher is a function returning a dict

        def fetch(url: str) -> Any:
            _check_url(url)
            return weasyprint.default_url_fetcher(url)

        return fetch

    class DataOnlyFetcher(base):  # type: ignore[misc, valid-type]
        def fetch(self, url: str, headers: Any = None) -> Any:
            _check_url(url)
            return super().fetch(url, headers)

    return DataOnlyFetcher(allowed_protocols={"data"})


@cache
def _environment() -> jinja2.Environment:
    return template_environment(  # type: ignore[no-any-return]
        TEMPLATE_DIR,
        severity_mark=SEVERITY_MARK,
        severity_word=SEVERITY_WORD,
        table_layout=table_layout,
    )


def _template_file(name: str) -> str:
    """A file beside the PDF's templates (package data): the stylesheet, the font's widths."""
    path = resources.files(TEMPLATE_PACKAGE)
    for part in (*TEMPLATE_DIR.split("/"), name):
        path = path / part
    return path.read_text(encoding="utf-8")


@cache
def _widths() -> dict[int, float]:
    """Code point -> advance width in em of DejaVu Sans Bold (the PDF's font), read from the
    font file's metrics once and shipped as package data (`WIDTHS`): no font file needed."""
    data = json.loads(_template_file(WIDTHS))
    em = float(data["units_per_em"])
    return {
        first + offset: width / em
        for first, widths in data["blocks"]
        for offset, width in enumerate(widths)
    }


def text_em(text: str) -> float:
    """How wide `text` is in em of DejaVu Sans Bold (headers and the rows marked bad are bold,
    so everything is measured as bold; a character the font lacks counts MISSING_GLYPH_EM).
    Only shares a table's width out between its columns."""
    widths = _widths()
    return sum(widths.get(ord(char), MISSING_GLYPH_EM) for char in text)


@dataclass(frozen=True)
class TableLayout:
    css_class: str
    widths: list[float]  # percent of the table width, per column


def table_layout(table: Table) -> TableLayout:
    """Font size and percent column widths for `table-layout: fixed`. Every column first gets
    what it needs so that its header words and short values (numbers, units) never break
    mid-word, at the largest font where that fits; long text columns (names, paths, errors)
    share what is left and wrap."""
    marked = any(SEVERITY_MARK.get(row.get("_severity") or "info") for row in table.rows)
    # (header word, longest value, longest word of a value) in em
    content: list[tuple[float, float, float]] = []
    for index, column in enumerate(table.columns):
        header = max((text_em(word) for word in column.label.split()), default=0.0)
        values = [format_value(row.get(column.key), column.format) for row in table.rows]
        longest = max((text_em(value) for value in values), default=0.0)
        word = max((text_em(w) for value in values for w in value.split()), default=0.0)
        longest += 1.3 if marked and index == 0 else 0.0  # the severity mark and its space
        content.append((header, longest, min(word, WORD_EM)))

    def widths_at(limit: float, padding: float) -> list[float]:
        # headers are bold, and so are the rows marked bad: everything is measured as bold;
        # a value's word up to WORD_EM is never broken ('2.11.0+cu13|0' was)
        return [
            padding + SAFETY * max(1.0, header, word, min(longest, limit))
            for header, longest, word in content
        ]

    def fits(font: float, limit: float) -> bool:
        return sum(widths_at(limit, CELL_PADDING_PT / font)) <= TABLE_WIDTH_PT / font

    # a step down in size where that keeps long text on fewer lines (fewer pages for a long
    # table), else the largest size at which no header word or number breaks
    css_class, font = next(
        (f for f in TABLE_FONTS[:2] if fits(f[1], LONG_TEXT_EM)),
        next((f for f in TABLE_FONTS if fits(f[1], SHORT_TEXT_EM)), TABLE_FONTS[-1]),
    )
    capacity = TABLE_WIDTH_PT / font
    padding = CELL_PADDING_PT / font
    # need: no header word or short value breaks; want: long text gets up to LONG_TEXT_EM;
    # full: long text on one line. Each step is granted in full while the width lasts.
    widths = widths_at(SHORT_TEXT_EM, padding)
    for limit in (LONG_TEXT_EM, math.inf):
        target = widths_at(limit, padding)
        spare = capacity - sum(widths)
        extra = [t - w for t, w in zip(target, widths, strict=True)]
        if spare <= 0 or sum(extra) <= 0:
            continue
        share = min(1.0, spare / sum(extra))
        widths = [w + e * share for w, e in zip(widths, extra, strict=True)]
    total = sum(widths) or 1.0
    return TableLayout(css_class, [round(100 * w / total, 2) for w in widths])


def sources_table(report: Report) -> Table:
    """The report's sources as a table block, laid out like every other table."""
    counts = {"cells": "Cells", "ok": "OK", "failed": "Failed", "skipped": "Skipped"}
    if any(source.unfinished for source in report.sources):  # a stopped sweep's unrun cells
        counts["unfinished"] = "Planned, no result"
    counts |= {"unreadable": "Unreadable", "profiles": "Profiles", "comm_runs": "Comm runs"}
    columns = [
        Column(key="name", label="Name", align="left"),
        Column(key="path", label="Path", align="left"),
        *(Column(key=key, label=label, format="int") for key, label in counts.items()),
        Column(key="schema", label="Schema"),
    ]
    rows = [
        {
            **source.model_dump(exclude={"schema_versions"}),
            "name": f"{source.name} (baseline)" if source.role == "baseline" else source.name,
            "schema": ", ".join(str(v) for v in source.schema_versions),
        }
        for source in report.sources
    ]
    return Table(id="report-sources", title="Sources", columns=columns, rows=rows)


def skipped_table(report: Report) -> Table:
    columns = [
        Column(key="path", label="Input", align="left"),
        Column(key="reason", label="Why it was left out", align="left"),
    ]
    rows = [item.model_dump() for item in report.skipped]
    title = f"Skipped inputs ({len(rows)}, left out of every figure)"
    return Table(id="report-skipped", title=title, columns=columns, rows=rows)


def _svg_uri(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def chart_uris(
    report: Report, draw: Callable[[Chart], str] = chart_svg, on_step: OnStep = ignore
) -> dict[str, str]:
    """Each chart id -> its SVG (`svg_direct`, the HTML's drawing) as a `data:` URI, or the
    error text (no `data:` prefix, logged) when the chart could not be drawn."""
    uris: dict[str, str] = {}
    for chart_id, result in drawn_charts(report.charts(), on_step, draw).items():
        if isinstance(result, ChartError):
            log.warning("chart %s could not be drawn: %s", chart_id, result)
        uris[chart_id] = str(result) if isinstance(result, ChartError) else _svg_uri(result)
    return uris


def render_html(
    report: Report, charts: dict[str, str] | None = None, on_step: OnStep = ignore
) -> str:
    """The print HTML handed to WeasyPrint (public for debugging the layout in a browser)."""
    template = _environment().get_template("report.html.j2")
    return template.render(
        report=report,
        charts=chart_uris(report, on_step=on_step) if charts is None else charts,
        sources=sources_table(report),
        skipped=skipped_table(report),
    )


def render(
    report: Report,
    max_rows: int | None = PDF_MAX_ROWS,
    max_findings: int = PDF_MAX_FINDINGS,
    on_step: OnStep = ignore,
) -> bytes:
    """The report as a PDF document, tables and findings cut as `shortened` says (max_rows
    None: nothing cut). `on_step` hears where the work stands: charts drawn, the layout, the
    pages written (`progress.Step`)."""
    import weasyprint

    start = time.perf_counter()
    if max_rows is not None:
        report = shortened(report, max_rows, max_findings, PDF_REST)
    html = render_html(report, on_step=on_step)
    drawn = time.perf_counter()
    fetcher = url_fetcher()
    document = weasyprint.HTML(string=html, url_fetcher=fetcher)
    css = weasyprint.CSS(string=_template_file(STYLESHEET), url_fetcher=fetcher)
    on_step(Step("layout", 0, 1))
    laid_out = document.render(stylesheets=[css])  # what write_pdf does, in two steps
    on_step(Step("layout", 1, 1))
    pages = len(laid_out.pages)
    on_step(Step("pages", 0, pages))
    pdf: bytes = laid_out.write_pdf()
    on_step(Step("pages", pages, pages))
    laid = time.perf_counter() - drawn
    log.debug("PDF: charts and HTML %.2f s, layout and PDF %.2f s", drawn - start, laid)
    return pdf
