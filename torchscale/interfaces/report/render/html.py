"""The HTML report: one self-contained file that works offline (docs/reporting.md, "Formats";
why its charts are `svg_direct`'s SVG by default, plotly only with `interactive`: "Formats and
sizes"). Templates only lay out (Jinja2, autoescape on, every value by `format_value`); a
figure's JSON is escaped so no user string can close its <script>, and a Content-Security-Policy
allows only the page's own scripts (by hash) and no network, so a string that escaped escaping
still could not run or fetch.

The page records its JavaScript errors (`data-js-errors` on <body>), the charts drawn
(`data-charts-rendered`) and each table wider than its box (`data-overflows`), so a headless
browser can check it from the DOM alone."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, get_args

from jinja2 import Environment
from markupsafe import Markup, escape

from torchscale.interfaces.formatting import SEVERITY_MARK, template_environment
from torchscale.interfaces.report.model import Block, Chart, Report, Severity, Table
from torchscale.interfaces.report.parts.words import GLOSSARY
from torchscale.interfaces.report.progress import OnStep, ignore
from torchscale.interfaces.report.short import HTML_FINDINGS, HTML_REST, HTML_ROWS, shortened

TEMPLATE = "html/report.html.j2"
_SEVERITIES: tuple[str, ...] = get_args(Severity)
# table cell class by (column align, numeric format): short, as a big report has many cells;
# r: right-aligned, n: a formatted number (kept on one line, tabular figures)
CELL_CLASS = {
    ("left", False): Markup(""),
    ("left", True): Markup(' class="n"'),
    ("right", False): Markup(' class="r"'),
    ("right", True): Markup(' class="r n"'),
}
_SCRIPT_ESCAPES = {char: "\\u" + ord(char).to_bytes(2, "big").hex() for char in "<>&\u2028\u2029"}
_SCRIPT_UNSAFE = re.compile("[<>&\u2028\u2029]")
# a table longer than this scrolls inside a box of its own (header kept in view), so that the
# charts after a 500-row table are not 500 rows down the page; print shows every row
TALL_TABLE_ROWS = 25


@functools.lru_cache(maxsize=1)
def environment() -> Environment:
    """The Jinja2 environment (`template_environment`: package templates, autoescape on,
    undefined names are errors) with the HTML renderer's filters and globals."""
    env: Environment = template_environment(
        "templates",
        severity_of=severity_of,
        flagged=flagged,
        severity_mark=SEVERITY_MARK,
        cell_class=CELL_CLASS,
        tall_table_rows=TALL_TABLE_ROWS,
        grouped=grouped,
    )
    env.filters |= {"figure_json": figure_json, "glossed": glossed}
    return env


@functools.lru_cache(maxsize=1)
def _glossary() -> tuple[re.Pattern[str], dict[str, str]]:
    """A pattern of every glossary term as a whole word (longest first, so 'exposed
    communication' is one term, not a shorter one inside it), and each term's meaning by its
    lower case. A term in lower case matches in any case (a heading capitalises 'Sync stall');
    one with a capital only as written, so the acronym 'DDP' is explained where it is used and
    the layout 'ddp' in a configuration's name ('b32 x2 fp32 ddp') is left alone."""
    terms = sorted(GLOSSARY, key=len, reverse=True)
    alternatives = "|".join(
        re.escape(term) if term != term.lower() else f"(?i:{re.escape(term)})" for term in terms
    )
    pattern = re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])")
    return pattern, {term.lower(): meaning for term, meaning in GLOSSARY.items()}


def glossed(text: str | None) -> Markup:
    """`text` escaped, each technical term of the glossary (`words.GLOSSARY`) in it wrapped in
    <abbr title="its meaning">: a heading or a card's label keeps its short term ('Step p50',
    'CV') and a hover explains it, the same words as the report's Glossary section."""
    if not text:
        return Markup("")
    pattern, meanings = _glossary()
    parts: list[Markup] = []
    at = 0
    for match in pattern.finditer(text):
        parts.append(escape(text[at : match.start()]))
        term = match.group(0)
        parts.append(Markup('<abbr title="{}">{}</abbr>').format(meanings[term.lower()], term))
        at = match.end()
    parts.append(escape(text[at:]))
    return Markup("").join(parts)


def script_json(value: Any) -> Markup:
    """`value` as compact JSON safe inside a <script> element: `<`, `>` and `&` are written as
    \\u escapes (the same string to JSON.parse), so `</script>` or `<!--` in a user string
    cannot end or confuse the element. NaN is refused: it is not JSON."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    # safe: no <, > or & is left, so nothing in it is markup or can end the element
    return Markup(_SCRIPT_UNSAFE.sub(lambda m: _SCRIPT_ESCAPES[m.group(0)], text))  # noqa: S704


def figure_json(chart: Chart) -> Markup:
    """The plotly figure of `chart` as script-safe JSON."""
    from torchscale.interfaces.report.render.plotly_charts import figure

    return script_json(figure(chart))


def static_charts(report: Report, on_step: OnStep) -> tuple[dict[str, Markup], dict[str, str]]:
    """Chart id -> its SVG element (`svg_direct`), and chart id -> why it could not be drawn
    (text, escaped where it is shown): one chart that fails is said in its place."""
    from torchscale.interfaces.report.render.svg_direct import ChartError, drawn_charts

    drawn = drawn_charts(report.charts(), on_step)
    errors = {k: str(v) for k, v in drawn.items() if isinstance(v, ChartError)}
    # safe: svg_direct escapes every string it writes; its ids carry the chart's id
    svgs = {k: Markup(v) for k, v in drawn.items() if not isinstance(v, ChartError)}  # noqa: S704
    return svgs, errors


@dataclass(frozen=True)
class Alike:
    """Charts after the first of a run of charts with the same kind and axes (one per model
    or run): drawn in a closed <details>, so five models' copies take one chart's height."""

    charts: list[Chart]
    type: str = "alike"

    def names(self) -> str:
        """What tells the charts apart: each title's part before ': ' (its model or run)."""
        return ", ".join(
            c.title.partition(": ")[0] if ": " in c.title else c.title for c in self.charts
        )


def _axes(block: Block) -> tuple[str, ...] | None:
    if not isinstance(block, Chart):
        return None
    return (block.kind, block.x_label, block.y_label, block.x_format, block.y_format)


def grouped(blocks: list[Block]) -> list[Block | Alike]:
    """`blocks` with each run of charts alike (`Alike`) after its first chart."""
    out: list[Block | Alike] = []
    for block in blocks:
        last = out[-1] if out else None
        axes = _axes(block)
        if isinstance(last, Alike) and axes == _axes(last.charts[0]):
            last.charts.append(block)  # type: ignore[arg-type]
        elif axes is not None and last is not None and axes == _axes(last):  # type: ignore[arg-type]
            out.append(Alike([block]))  # type: ignore[list-item]
        else:
            out.append(block)
    return out


def severity_of(row: dict[str, Any]) -> str:
    """A table row's `_severity`, or 'info' when absent or not a known severity (it becomes a
    class name, so only the four known words get through)."""
    value = row.get("_severity", "info")
    return value if isinstance(value, str) and value in _SEVERITIES else "info"


def flagged(table: Table) -> bool:
    """Whether a table needs its severity marker column (some row is not plain info)."""
    return any(severity_of(row) != "info" for row in table.rows)


@functools.lru_cache(maxsize=1)
def plotly_js() -> str:
    """plotly.js, to inline once per page. A `</script` inside it would end the element early;
    plotly.js has none, but should a release add one in a string it is escaped as `<\\/`."""
    from plotly.offline import get_plotlyjs

    source = str(get_plotlyjs())
    return re.sub(r"</(script)", r"<\\/\1", source, flags=re.IGNORECASE)


@functools.lru_cache(maxsize=8)
def _csp_hash(script: str) -> str:
    """A script's CSP source hash; cached, as plotly.js (4.6 MB) is hashed for every page."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def render(
    report: Report, interactive: bool = False, on_step: OnStep = ignore, full: bool = False
) -> bytes:
    """The report as one HTML file (UTF-8): charts as SVG, or with `interactive` drawn by
    plotly; every row and finding with `full`, else each table's first `HTML_ROWS` rows and the
    costliest `HTML_FINDINGS` findings (`short.shortened`). Deterministic: the same report gives
    the same bytes (the only time in it is the report's own `generated_at`). `on_step` hears
    the SVG charts drawn."""
    if not full:
        report = shortened(report, HTML_ROWS, HTML_FINDINGS, HTML_REST)
    env = environment()
    record_errors = env.get_template("html/record_errors.js.j2").render()
    table_cues = env.get_template("html/table_cues.js.j2").render()
    scripts = [_csp_hash(record_errors), _csp_hash(table_cues)]
    draw_charts = ""
    charts: dict[str, Markup] = {}
    chart_errors: dict[str, str] = {}
    if interactive:
        from torchscale.interfaces.report.render.plotly_charts import CONFIG

        draw_charts = env.get_template("html/draw_charts.js.j2").render(config=script_json(CONFIG))
        scripts += [_csp_hash(plotly_js()), _csp_hash(draw_charts)]
    else:
        charts, chart_errors = static_charts(report, on_step)
    csp = (
        f"default-src 'none'; script-src {' '.join(scripts)}; style-src 'unsafe-inline'; "
        "img-src data: blob:; font-src data:; base-uri 'none'; form-action 'none'"
    )
    # the scripts are the package's own code (no user string in them), inlined verbatim so
    # that their CSP hashes match
    page = env.get_template(TEMPLATE).render(
        report=report,
        csp=csp,
        interactive=interactive,
        charts=charts,
        chart_errors=chart_errors,
        charts_drawn=len(charts),
        record_errors=Markup(record_errors),  # noqa: S704
        table_cues=Markup(table_cues),  # noqa: S704
        plotly_js=Markup(plotly_js()) if interactive else "",  # noqa: S704
        draw_charts=Markup(draw_charts),  # noqa: S704
    )
    return page.encode("utf-8")
