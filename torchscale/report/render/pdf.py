"""PDF renderer: the report as print HTML (jinja2, autoescaped) laid out by WeasyPrint.

Why this shape:
- Charts are static vector SVGs from matplotlib (`svg_charts`), embedded as `data:` URIs: the
  PDF needs no JavaScript, stays sharp at any zoom, and every image is an isolated document.
- Nothing is fetched: the only URLs in the document are the chart `data:` URIs, and the URL
  fetcher refuses every other scheme (http, https, file), so a user string can never make the
  renderer reach the network or read a local file. Fonts are the system's (no web fonts).
- Templates and the print stylesheet are package data; autoescape is on, so user strings
  (titles, model names, error messages) are text, never markup.
- Layout decisions only (column widths, font size of wide tables); every number comes from
  the model and is formatted by `format_value`.
"""

from __future__ import annotations

import base64
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import jinja2

from torchscale.report.model import Chart, Column, Report, Table
from torchscale.report.render.formatting import SEVERITY_MARK, format_value, template_environment

log = logging.getLogger(__name__)

TEMPLATE_PACKAGE = "torchscale.report"
TEMPLATE_DIR = "templates/pdf"
STYLESHEET = "report.css"
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
# DejaVu Sans advance widths in em (regular; bold is about BOLD times wider); other letters:
# capitals 0.72 but for the narrow and wide ones, anything else 0.8
BOLD = 1.1
SAFETY = 1.07
_EM = {
    **dict.fromkeys("0123456789", 0.636),
    **dict.fromkeys("abdghnopqu", 0.63),
    **dict.fromkeys("ceksvxyz", 0.56),
    **dict.fromkeys("fjilt", 0.32),
    "r": 0.41,
    "m": 0.974,
    "w": 0.818,
    **dict.fromkeys(" .,:;'|!", 0.33),
    **dict.fromkeys("()[]{}/\\-", 0.37),
    **dict.fromkeys("IJ", 0.3),
    **dict.fromkeys("MW%@", 0.97),
    **dict.fromkeys("+=<>~", 0.84),
    "_": 0.5,
    "&": 0.78,
}


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
    env: jinja2.Environment = template_environment(
        TEMPLATE_DIR,
        severity_mark=SEVERITY_MARK,
        severity_word=SEVERITY_WORD,
        table_layout=table_layout,
    )
    return env


def stylesheet() -> str:
    """The print stylesheet (package data)."""
    path = resources.files(TEMPLATE_PACKAGE)
    for part in (*TEMPLATE_DIR.split("/"), STYLESHEET):
        path = path / part
    return path.read_text(encoding="utf-8")


def _cell_text(row: dict[str, Any], column: Column) -> str:
    return format_value(row.get(column.key), column.format)


def text_em(text: str) -> float:
    """About how wide `text` is in em of DejaVu Sans, the PDF's font (a table of advance
    widths, no font file read: this only shares a table's width out between its columns)."""
    return sum(_EM.get(char, 0.72 if char.isupper() else 0.8) for char in text)


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
    content: list[tuple[float, float]] = []  # (header word, longest value) in em
    for index, column in enumerate(table.columns):
        header = max((text_em(word) for word in column.label.split()), default=0.0)
        longest = max((text_em(_cell_text(row, column)) for row in table.rows), default=0.0)
        longest += 1.3 if marked and index == 0 else 0.0  # the severity mark and its space
        content.append((header, longest))

    def widths_at(limit: float, padding: float) -> list[float]:
        # headers are bold, and so are the rows marked bad: measure everything as bold
        return [
            padding + SAFETY * BOLD * max(1.0, header, min(longest, limit))
            for header, longest in content
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
    columns = [
        Column(key="name", label="Name", align="left"),
        Column(key="path", label="Path", align="left"),
        Column(key="cells", label="Cells", format="int"),
        Column(key="ok", label="OK", format="int"),
        Column(key="failed", label="Failed", format="int"),
        Column(key="skipped", label="Skipped", format="int"),
        Column(key="profiles", label="Profiles", format="int"),
        Column(key="schema", label="Schema"),
    ]
    rows = [
        {
            **source.model_dump(exclude={"schema_versions"}),
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
    return Table(id="report-skipped", title="Skipped inputs", columns=columns, rows=rows)


def _svg_uri(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def chart_uris(report: Report, draw: Callable[[Chart], str] | None = None) -> dict[str, str]:
    """Each chart id -> its SVG as a `data:` URI, or the error text (no `data:` prefix) when
    the chart could not be drawn: the PDF then says so in its place instead of failing whole.
    matplotlib is imported only here."""
    if draw is None:
        from torchscale.report.render.svg_charts import chart_svg

        draw = chart_svg
    uris = {}
    for chart in report.charts():
        try:
            uris[chart.id] = _svg_uri(draw(chart))
        except Exception as error:  # a chart is one figure: the rest of the report stands
            log.warning("chart %s could not be drawn: %r", chart.id, error)
            uris[chart.id] = f"{type(error).__name__}: {error}"
    return uris


def render_html(report: Report, charts: dict[str, str] | None = None) -> str:
    """The print HTML handed to WeasyPrint (public for debugging the layout in a browser)."""
    template = _environment().get_template("report.html.j2")
    return template.render(
        report=report,
        charts=chart_uris(report) if charts is None else charts,
        sources=sources_table(report),
        skipped=skipped_table(report),
    )


PDF_MAX_ROWS = 40  # per table: a stakeholder's PDF; the HTML and JSON keep every row


def shortened(report: Report, max_rows: int = PDF_MAX_ROWS) -> Report:
    """The report with each table cut to its first `max_rows` rows, saying how many more the
    HTML and JSON reports hold. WeasyPrint lays out about 60 table rows a second: the 3,400
    rows of a 500-cell sweep would take a minute and a hundred pages."""
    sections = []
    for section in report.sections:
        blocks = []
        for block in section.blocks:
            if isinstance(block, Table) and len(block.rows) > max_rows:
                more = len(block.rows) - max_rows
                note = f"first {max_rows} of {len(block.rows)} rows; {more} more in the HTML report"
                block = block.model_copy(
                    update={
                        "rows": block.rows[:max_rows],
                        "note": f"{block.note}; {note}" if block.note else note,
                    }
                )
            blocks.append(block)
        sections.append(section.model_copy(update={"blocks": blocks}))
    return report.model_copy(update={"sections": sections})


def render(report: Report, max_rows: int | None = PDF_MAX_ROWS) -> bytes:
    """The report as a PDF document, tables cut to `max_rows` rows (`shortened`; None: all)."""
    import weasyprint

    start = time.perf_counter()
    if max_rows is not None:
        report = shortened(report, max_rows)
    html = render_html(report)
    drawn = time.perf_counter()
    fetcher = url_fetcher()
    document = weasyprint.HTML(string=html, url_fetcher=fetcher)
    css = weasyprint.CSS(string=stylesheet(), url_fetcher=fetcher)
    pdf: bytes = document.write_pdf(stylesheets=[css])
    log.debug(
        "PDF: charts and HTML %.2f s, layout and PDF %.2f s",
        drawn - start,
        time.perf_counter() - drawn,
    )
    return pdf
