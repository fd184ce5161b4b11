"""HTML report (torchscale.interfaces.report.render.html): well-formed, complete, self-contained,
every user string escaped in text, attributes, the charts' JSON and the text plotly draws."""

from __future__ import annotations

import base64
import hashlib
import importlib.resources
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import plotly.graph_objects as go
import pytest

from tests.report_sample import HOSTILE, HOSTILE_IMG, paired_chart, sample_report
from torchscale.contracts.wording.spell import format_value
from torchscale.interfaces.api.report_generate import renderer
from torchscale.interfaces.report.model import Chart, Heatmap, Report, Series, Text
from torchscale.interfaces.report.render import html as html_format
from torchscale.interfaces.report.render.html import environment, plotly_js, script_json
from torchscale.interfaces.report.render.plotly_charts import figure, plotly_text, title_text

VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "track",
    "wbr",
}


def render(report: Report) -> bytes:
    """The interactive page (plotly), what this module checks; the default page draws its
    charts as SVG (tests/interfaces/test_report_formats_short.py)."""
    return html_format.render(report, interactive=True)


PLOTLY_OPEN = '<script data-lib="plotly.js">'
PLOTLY_BANNER = re.compile(r"plotly\.js v\d+\.\d+\.\d+")
ESCAPED_HOSTILE = "&lt;script&gt;alert(1)&lt;/script&gt;"


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self) -> Iterator[Element]:
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.iter()

    def find_all(self, match: Callable[[Element], bool]) -> list[Element]:
        return [e for e in self.iter() if match(e)]

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class StrictTree(HTMLParser):
    """A DOM tree from the stdlib parser that fails on structure it can see is wrong: an end
    tag that does not close the innermost open element, an end tag for a void element, an
    element left open at the end. (The report writes every optional end tag.)"""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]
        self.doctype: str | None = None

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = [name for name, _ in attrs]
        assert len(names) == len(set(names)), f"repeated attribute in <{tag}> at {self.getpos()}"
        element = Element(tag, {name: value or "" for name, value in attrs})
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        assert tag in VOID, f"self-closing non-void <{tag}/> at {self.getpos()}"
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        assert tag not in VOID, f"end tag for void element </{tag}> at {self.getpos()}"
        open_tags = [e.tag for e in self.stack[1:]]
        assert open_tags and open_tags[-1] == tag, (
            f"unbalanced </{tag}> at {self.getpos()}; open: {open_tags[-5:]}"
        )
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(page: str) -> StrictTree:
    tree = StrictTree()
    tree.feed(page)
    tree.close()
    assert [e.tag for e in tree.stack[1:]] == [], "elements left open at the end"
    return tree


def outside_plotly(page: str) -> str:
    """The document without the inlined plotly.js (which has its own strings)."""
    before, found, rest = page.partition(PLOTLY_OPEN)
    assert found
    _, closed, after = rest.partition("</script>")
    assert closed
    return before + after


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


@pytest.fixture(scope="module")
def report() -> Report:
    return sample_report(4)


@pytest.fixture(scope="module")
def page(report: Report) -> str:
    return render(report).decode("utf-8")


@pytest.fixture(scope="module")
def tree(page: str) -> StrictTree:
    return parse(page)


@pytest.fixture(scope="module")
def root(tree: StrictTree) -> Element:
    return tree.root


def by_id(root: Element, element_id: str) -> Element:
    found = root.find_all(lambda e: e.attrs.get("id") == element_id)
    assert len(found) == 1, f"{len(found)} elements with id {element_id!r}"
    return found[0]


def test_renderer_interface_finds_html() -> None:
    assert renderer("html") is html_format.render


def test_document_is_balanced_html(tree: StrictTree, root: Element) -> None:
    assert tree.doctype is not None and tree.doctype.lower() == "doctype html"
    (html,) = root.find_all(lambda e: e.tag == "html")
    assert html.attrs.get("lang") == "en"
    assert len(root.find_all(lambda e: e.tag == "head")) == 1
    assert len(root.find_all(lambda e: e.tag == "body")) == 1
    assert root.find_all(lambda e: e.tag == "meta" and e.attrs.get("charset") == "utf-8")


def test_ids_are_unique(root: Element) -> None:
    ids = Counter(e.attrs["id"] for e in root.iter() if "id" in e.attrs)
    assert [i for i, n in ids.items() if n > 1] == []


def test_every_section_has_an_element_and_a_contents_link(root: Element, report: Report) -> None:
    (nav,) = root.find_all(lambda e: e.tag == "nav")
    links = [a.attrs["href"] for a in nav.find_all(lambda e: e.tag == "a")]
    assert links == [f"#section-{s.id}" for s in report.sections]
    for section in report.sections:
        element = by_id(root, f"section-{section.id}")
        assert element.tag == "section"
        assert element.attrs["data-section"] == section.id
        headings = [h.text() for h in element.find_all(lambda e: e.tag == "h2")]
        assert headings[0] == section.title


def test_every_chart_has_a_div_and_its_figure(root: Element, report: Report) -> None:
    figures = root.find_all(lambda e: e.tag == "figure" and "chart-figure" in e.classes())
    assert len(figures) == len(report.charts()) == 5
    for chart, fig in zip(report.charts(), figures, strict=True):
        div = by_id(root, chart.id)
        assert div.tag == "div" and "chart" in div.classes()
        assert div in fig.children
        (data,) = fig.find_all(lambda e: e.tag == "script" and "chart-data" in e.classes())
        assert data.attrs["type"] == "application/json"
        assert json.loads(data.text()) == json.loads(json.dumps(figure(chart)))
        assert fig.attrs["aria-label"] == chart.title  # the attribute keeps the exact text


def test_hostile_strings_never_appear_raw(page: str) -> None:
    rest = outside_plotly(page)
    assert HOSTILE not in rest
    assert "<img" not in rest.lower()
    assert "<script>alert" not in rest.lower()
    assert HOSTILE_IMG not in rest
    # the escaped text does appear: in HTML text ...
    assert ESCAPED_HOSTILE in rest
    assert "&#34;&gt;&lt;img src=x onerror=alert(2)&gt;" in rest
    # ... and in the charts' JSON, first as plotly entities then with <, >, & as \u escapes
    assert "\\u0026lt;script\\u0026gt;alert(1)\\u0026lt;/script\\u0026gt;" in rest


def test_parsed_document_has_no_injected_elements(root: Element, page: str) -> None:
    assert root.find_all(lambda e: e.tag in ("img", "iframe", "object", "embed", "link")) == []
    handlers = [(e.tag, a) for e in root.iter() for a in e.attrs if a.startswith("on")]
    assert handlers == []
    scripts = root.find_all(lambda e: e.tag == "script")
    code = [s for s in scripts if "type" not in s.attrs]
    data = [s for s in scripts if s.attrs.get("type") == "application/json"]
    assert len(code) == 4  # error recorder, table cues, plotly.js, chart drawing
    assert len(code) + len(data) == len(scripts)
    for script in data:
        assert not set("<>&") & set(script.text())
        json.loads(script.text())
    # the text a reader sees is the literal hostile string
    (h1,) = root.find_all(lambda e: e.tag == "h1")
    assert h1.text() == f"Scaling report {HOSTILE}"
    (title,) = root.find_all(lambda e: e.tag == "title")
    assert title.text() == f"Scaling report {HOSTILE}"


def test_chart_text_is_escaped_for_plotly(report: Report) -> None:
    """Plotly reads <...> in titles, names and labels as markup: no user text may reach it
    raw. Only the renderer's own line breaks and hover markup may be there."""
    own = ("<br>", "<extra></extra>")
    for chart in report.charts():
        for text in strings(figure(chart)):
            for markup in own:
                text = text.replace(markup, "")
            assert "<" not in text and ">" not in text, (chart.id, text)
    line = figure(report.charts()[0])
    assert line["layout"]["title"]["text"] == f"Throughput vs GPUs {ESCAPED_HOSTILE}"
    assert line["data"][0]["name"] == f"{ESCAPED_HOSTILE} b16"


def test_plotly_text() -> None:
    assert plotly_text(HOSTILE) == ESCAPED_HOSTILE
    assert plotly_text("&lt; stays literal") == "&amp;lt; stays literal"
    assert plotly_text('<a href="javascript:x">y</a>') == '&lt;a href="javascript:x"&gt;y&lt;/a&gt;'
    assert plotly_text("two\nlines") == "two lines"
    text, lines = title_text("word " * 40 + HOSTILE)
    assert lines > 1 and text.count("<br>") == lines - 1
    assert HOSTILE not in text


def test_script_json_cannot_close_its_element() -> None:
    text = str(script_json({"a": "</script><!--<script>&\u2028"}))
    assert not set("<>&\u2028") & set(text)
    assert json.loads(text) == {"a": "</script><!--<script>&\u2028"}
    with pytest.raises(ValueError):
        script_json({"a": math.nan})


def test_plotly_js_is_embedded_once(page: str, root: Element) -> None:
    assert len(PLOTLY_BANNER.findall(page)) == 1
    assert PLOTLY_BANNER.findall(outside_plotly(page)) == []
    assert page.count(PLOTLY_OPEN) == 1
    (lib,) = root.find_all(lambda e: e.attrs.get("data-lib") == "plotly.js")
    assert lib.text() == plotly_js()
    assert len(lib.text()) > 3_000_000


def test_nothing_is_fetched_from_the_network(page: str, root: Element) -> None:
    for element in root.iter():
        for name in ("src", "href", "action", "data"):
            value = element.attrs.get(name)
            if value is not None:
                assert value.startswith("#"), (element.tag, name, value)
    rest = outside_plotly(page)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", rest, re.IGNORECASE)
    assert "@import" not in rest and "url(" not in rest and "@font-face" not in rest
    (csp,) = root.find_all(lambda e: e.attrs.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp.attrs["content"]
    assert "connect-src" not in csp.attrs["content"]  # falls back to default-src 'none'


def test_csp_allows_exactly_the_inline_scripts(root: Element) -> None:
    (csp,) = root.find_all(lambda e: e.attrs.get("http-equiv") == "Content-Security-Policy")
    (script_src,) = [d for d in csp.attrs["content"].split(";") if "script-src" in d]
    allowed = set(script_src.split()[1:])
    code = root.find_all(lambda e: e.tag == "script" and "type" not in e.attrs)
    hashes = {
        "'sha256-"
        + base64.b64encode(hashlib.sha256(s.text().encode("utf-8")).digest()).decode()
        + "'"
        for s in code
    }
    assert allowed == hashes
    assert "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in script_src


def test_size_grows_sublinearly() -> None:
    small = len(render(sample_report(4)))
    large = len(render(sample_report(400)))
    assert large < 1.5 * small


def test_deterministic(report: Report, page: str) -> None:
    again = render(report.model_copy(deep=True))
    assert again == page.encode("utf-8")


def test_tables(root: Element, report: Report) -> None:
    table = by_id(root, "scaling-table")
    assert table.find_all(lambda e: e.tag == "caption")[0].text() == f"Strong scaling {HOSTILE}"
    headers = [th.text() for th in table.find_all(lambda e: e.tag == "th")]
    assert headers[1:] == [
        "Model",
        "GPUs",
        "Batch/GPU",
        "Samples/s",
        "Speed-up",
        "Efficiency",
        "Step p50",
        "Peak memory",
        "vs baseline",
    ]
    (tbody,) = table.find_all(lambda e: e.tag == "tbody")
    rows = [c for c in tbody.children if isinstance(c, Element)]
    assert len(rows) == 4
    flagged = rows[1]
    assert "sev-bad" in flagged.classes()
    cells = [c for c in flagged.children if isinstance(c, Element)]
    assert "\u2716" in cells[0].text() and "bad" in cells[0].text()  # colour and a text cue
    source_row = report.sections[1].blocks[0].rows[1]  # type: ignore[union-attr]
    assert [c.text() for c in cells[1:]] == [
        format_value(source_row["model"], "text"),
        "2",
        "16",
        "192.0",
        "1.92",
        "96.0 %",
        "13.3 ms",
        "1.15 GiB",
        "-5.2 %",
    ]
    failures = by_id(root, "failures-table")
    assert "x" * 150 in failures.text()
    assert "y" * 300 in failures.text()


def test_styles_keep_tables_and_print_in_shape(root: Element) -> None:
    (style,) = root.find_all(lambda e: e.tag == "style")
    css = style.text()
    assert "overflow-wrap: anywhere" in css
    # on screen a cell never breaks a word that fits its line ("SwPowerC|ap"): its table scrolls
    assert re.search(r"\nth, td \{[^}]*overflow-wrap: break-word", css)
    assert re.search(r"\.table-scroll \{[^}]*overflow-x: auto", css)
    assert "max-width: 1320px" in css
    assert "system-ui" in css
    media = css[css.index("@media print") :]
    assert "nav.toc" in media and "display: none" in media
    assert "break-inside: avoid" in media


def test_header(root: Element, report: Report) -> None:
    (header,) = root.find_all(lambda e: e.tag == "header")
    text = header.text()
    # the first screen names what was read; paths, schemas and the date come after the sections
    assert f"{HOSTILE}: 5 cells (4 ok, 1 failed)" in text
    assert header.find_all(lambda e: e.tag == "table") == []
    (footer,) = root.find_all(lambda e: e.tag == "footer")
    assert report.generated_at in footer.text()
    (box,) = root.find_all(lambda e: e.attrs.get("id") == "sources")
    assert f"/results/{HOSTILE_IMG}" in box.text()
    (sources,) = box.find_all(lambda e: e.tag == "table")
    row = sources.find_all(lambda e: e.tag == "tbody")[0].find_all(lambda e: e.tag == "td")
    # cells, ok, failed, not run, unreadable, profiles, comm runs, schema
    expected = [HOSTILE, f"/results/{HOSTILE_IMG}", "5", "4", "1", "0", "0", "1", "0", "3"]
    assert [c.text() for c in row] == expected
    skipped = header.find_all(lambda e: "skipped" in e.classes())[0].text()
    assert f"/results/{HOSTILE}.json" in skipped and "not valid JSON" in skipped
    (banner,) = header.find_all(lambda e: "banner" in e.classes())
    assert "1 regression against the baseline" in banner.text()


def test_no_regression_banner_when_none() -> None:
    quiet = parse(render(sample_report(4).model_copy(update={"regressions": 0})).decode())
    assert quiet.root.find_all(lambda e: "banner" in e.classes()) == []


def test_header_leads_with_the_verdict_hardware_date_and_description() -> None:
    headline = Text(text=f"On 8 x H100, {HOSTILE} scales at 92-96 % of linear", severity="bad")
    facts = {"hardware": HOSTILE_IMG, "measured": "2026-11-20", "description": HOSTILE}
    report = sample_report(4).model_copy(update={"headline": headline, **facts})
    page = render(report).decode()
    assert "<script>alert" not in page and "<img src=x" not in page
    (header,) = parse(page).root.find_all(lambda e: e.tag == "header")
    (verdict,) = header.find_all(lambda e: "headline" in e.classes())
    assert "sev-bad" in verdict.classes()
    assert f"On 8 x H100, {HOSTILE} scales at 92-96 % of linear" in verdict.text()
    (facts_list,) = header.find_all(lambda e: e.tag == "dl")
    text = facts_list.text()
    assert "Hardware" in text and HOSTILE_IMG in text and "2026-11-20" in text and HOSTILE in text
    # the verdict comes before the sources table
    assert page.index('class="headline') < page.index("<caption>Sources</caption>")


def test_key_figures_findings_unavailable(root: Element) -> None:
    cards = root.find_all(lambda e: "card" in e.classes())
    assert len(cards) == 3
    assert "704.0" in cards[0].text() and "\u2714" in cards[0].text()
    assert "88.0 %" in cards[1].text()
    assert "no-value" in cards[2].classes()
    assert "-" in cards[2].text() and "no --cost-per-gpu-hour given" in cards[2].text()

    findings = root.find_all(lambda e: "finding" in e.classes())
    assert len(findings) == 2
    first = findings[0].text()
    assert f"all_reduce: rank 1 finishes backward late {HOSTILE}" in first
    assert "15.0 %" in first and HOSTILE_IMG in first
    (evidence_list,) = findings[0].find_all(lambda e: "evidence" in e.classes())
    evidence = evidence_list.find_all(lambda e: e.tag == "li")
    assert [e.text() for e in evidence] == ["rank 1 last at 98 % of collectives", HOSTILE]
    assert "balance the input pipeline of rank 1" in first
    assert "4.2 %" in findings[1].text() and "Recommendation" not in findings[1].text()

    (unavailable,) = root.find_all(lambda e: "unavailable" in e.classes() and e.tag == "div")
    items = [li.text() for li in unavailable.find_all(lambda e: e.tag == "li")]
    assert items == [
        "MFU — CPU device: no peak FLOP/s is known for it",
        f"{HOSTILE} — {HOSTILE_IMG}",
    ]


def test_page_reports_errors_and_charts_drawn(root: Element) -> None:
    (body,) = root.find_all(lambda e: e.tag == "body")
    first = next(c for c in body.children if isinstance(c, Element))
    assert first.tag == "script"  # before anything else can fail
    assert "data-js-errors" in first.text() and 'addEventListener("error"' in first.text()
    last = [c for c in body.children if isinstance(c, Element)][-1]
    assert last.tag == "script" and "data-charts-rendered" in last.text()


def test_templates_are_package_data() -> None:
    templates = importlib.resources.files("torchscale.interfaces.report") / "templates" / "html"
    for name in ("report.html.j2", "blocks.html.j2", "style.css.j2"):
        assert (templates / name).is_file()
    env = environment()
    assert env.autoescape is True
    assert env.from_string("{{ x }}").render(x=HOSTILE) == ESCAPED_HOSTILE


# --- figures ------------------------------------------------------------------------------


def chart(**overrides: Any) -> Chart:
    fields: dict[str, Any] = {
        "id": "c",
        "title": "t",
        "kind": "line",
        "x_label": "x",
        "y_label": "y",
        "series": [Series(name="s", x=[1, 2, 4, 8], y=[1.0, 2.0, 3.5, 6.0])],
    }
    fields.update(overrides)
    return Chart(**fields)


def test_figures_are_valid_plotly(report: Report) -> None:
    extra = [
        chart(y_format="bytes", kind="bar", series=[Series(name="m", x=["1"], y=[3e9])]),
        chart(y_format="us", x_format="us"),
        chart(y_format="money", series=[Series(name="d", x=[1, 2], y=[0.5, 1.0], style="dotted")]),
        chart(kind="bar", series=[Series(name="ref", x=["a"], y=[1.0], style="dashed")]),
    ]
    for item in [*report.charts(), *extra]:
        go.Figure(figure(item))  # raises on any property plotly does not know


def test_line_chart_log2_interval_and_ideal(report: Report) -> None:
    line = figure(report.charts()[0])
    xaxis = line["layout"]["xaxis"]
    assert xaxis["type"] == "log"
    assert xaxis["tickvals"] == [1, 2, 4, 8]
    assert xaxis["ticktext"] == ["1", "2", "4", "8"]
    measured, ideal = line["data"]
    assert measured["type"] == "scatter"
    error = measured["error_y"]
    series = report.charts()[0].series[0]
    assert series.high is not None and series.low is not None
    assert error["array"] == pytest.approx(
        [h - y for h, y in zip(series.high, series.y, strict=True)]
    )
    assert error["arrayminus"] == pytest.approx(
        [y - lo for y, lo in zip(series.y, series.low, strict=True)]
    )
    assert ideal["line"]["dash"] == "dash"
    assert "error_y" not in ideal
    yaxis = line["layout"]["yaxis"]
    assert yaxis["tickvals"] and len(yaxis["ticktext"]) == len(yaxis["tickvals"])
    low, high = yaxis["range"]
    assert low <= min(series.low) and high >= max(series.high)  # the whole interval shows


def test_axis_formats_follow_the_value_format(report: Report) -> None:
    """Ticks are labelled like the tables (the PDF's `tick_labels`) and chosen round in the
    unit they show; the data stays raw, its hover text formatted."""
    efficiency, box, stacked = (figure(c) for c in report.charts()[1:4])
    assert all(t.endswith(" %") for t in efficiency["layout"]["yaxis"]["ticktext"])
    assert efficiency["layout"]["xaxis"]["ticktext"] == ["1", "2", "4", "8"]  # categories
    assert all(t.endswith(" ms") for t in box["layout"]["yaxis"]["ticktext"])
    assert stacked["layout"]["barmode"] == "stack"
    assert [t["type"] for t in stacked["data"]] == ["bar"] * 3
    gib = figure(chart(kind="bar", y_format="bytes", series=[Series(name="m", x=["1"], y=[3e9])]))
    axis = gib["layout"]["yaxis"]
    assert all(t.endswith(" GiB") for t in axis["ticktext"])
    # round in GiB: 0, 0.5, 1, ... never 2.861023 GiB
    assert [v / 1024**3 for v in axis["tickvals"]] == pytest.approx([0.5 * i for i in range(6)])
    assert gib["data"][0]["y"] == [3e9]
    assert gib["data"][0]["text"] == ["1 · m: 2.79 GiB"]
    micro = figure(chart(y_format="us", series=[Series(name="k", x=[1, 2], y=[150.0, 900.0])]))
    assert micro["data"][0]["y"] == [150.0, 900.0]
    assert micro["layout"]["yaxis"]["ticktext"][-1].endswith(" µs")


def test_box_and_heatmap(report: Report) -> None:
    box = figure(report.charts()[2])
    (trace,) = box["data"]
    assert trace["type"] == "box"
    assert len(trace["x"]) == len(trace["y"]) == 4 * 20
    assert trace["x"][:20] == [0.0] * 20  # category positions, labelled by the axis
    assert box["layout"]["xaxis"]["ticktext"][0] == "1"
    heat = figure(report.charts()[4])
    (trace,) = heat["data"]
    assert trace["type"] == "heatmap"
    assert trace["z"][0][3] is None
    assert trace["colorbar"]["title"]["text"] == "stall % of step"
    big = Heatmap(x_labels=["a"], y_labels=["0", "1"], z=[[math.nan], [math.inf]], z_label="z")
    gaps = figure(chart(kind="heatmap", series=[], heatmap=big))
    assert gaps["data"][0]["z"] == [[None], [None]]


def test_non_finite_values_are_gaps() -> None:
    fig = figure(chart(series=[Series(name="s", x=[1, 2], y=[math.nan, math.inf])]))
    assert fig["data"][0]["y"] == [None, None]
    json.dumps(fig, allow_nan=False)


def test_ideal_lines_take_their_series_colour_and_share_one_legend_entry() -> None:
    data = figure(paired_chart())["data"]
    by_name = {trace["name"]: trace for trace in data}
    for name in ("b8", "b16"):
        ideal = by_name[f"ideal ({name})"]
        assert ideal["line"]["color"] == by_name[name]["line"]["color"]
        assert ideal["line"]["dash"] == "dash" and ideal["mode"] == "lines"
        assert ideal["showlegend"] is False and ideal["legendgroup"] == "reference"
    assert by_name["b8"]["line"]["color"] != by_name["b16"]["line"]["color"]
    in_legend = [t["name"] for t in data if t.get("showlegend", True)]
    assert in_legend == ["b8", "b16", "ideal (dashed, in its series' colour)"]
    (entry,) = [t for t in data if t["name"].startswith("ideal (dashed")]
    assert entry["legendgroup"] == "reference"  # clicking it shows or hides every ideal line
    go.Figure(figure(paired_chart()))


def test_long_tables_scroll_in_a_box_of_their_own_and_print_whole() -> None:
    from torchscale.interfaces.report.render.html import TALL_TABLE_ROWS

    page = render(sample_report(cells=TALL_TABLE_ROWS + 1)).decode("utf-8")
    assert '<div class="table-scroll tall">\n<table id="scaling-table">' in page
    short = render(sample_report(cells=TALL_TABLE_ROWS)).decode("utf-8")
    assert '<div class="table-scroll">\n<table id="scaling-table">' in short
    printed = page[page.index("@media print") :]
    assert ".table-scroll.tall { overflow: visible; max-height: none; }" in printed
