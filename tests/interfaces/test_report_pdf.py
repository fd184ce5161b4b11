"""PDF renderer (torchscale.interfaces.report.render.pdf) and its static charts (svg_direct, the
HTML's too): the text of the PDF as poppler reads it back holds every section, value and hostile
string; nothing is cut off the page; charts are vector, greyscale-readable, and draw user strings
exactly as given; nothing is fetched from anywhere."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.report_sample import HOSTILE, HOSTILE_IMG, paired_chart, sample_report, with_findings
from torchscale.contracts.wording.spell import format_value
from torchscale.interfaces.api.report_generate import renderer
from torchscale.interfaces.formatting import inline_html, strip_code
from torchscale.interfaces.report.build import ReportOptions, build_report
from torchscale.interfaces.report.charts.palette import NO_DATA_COLOUR, PALETTE
from torchscale.interfaces.report.model import (
    Chart,
    Findings,
    Heatmap,
    KeyFigures,
    Report,
    Series,
    Table,
)
from torchscale.interfaces.report.render import pdf
from torchscale.interfaces.report.render.svg_direct import chart_svg
from torchscale.interfaces.report.short import shortened
from torchscale.interfaces.report.sources import read_sources

PDFTOTEXT = shutil.which("pdftotext")
PDFIMAGES = shutil.which("pdfimages")
needs_pdftotext = pytest.mark.skipif(
    PDFTOTEXT is None, reason="pdftotext (poppler-utils) is not installed"
)

# A4 in points, and the page margins of report.css (15 mm left and right)
PAGE_WIDTH_PT = 595.28
SIDE_MARGIN_PT = 15 / 25.4 * 72
WORD = re.compile(r'<word xMin="([\d.]+)" yMin="[\d.]+" xMax="([\d.]+)" yMax="[\d.]+">(.*?)</word>')


def _write_pdf(report: Report, path: Path, max_rows: int | None = pdf.PDF_MAX_ROWS) -> Path:
    path.write_bytes(pdf.render(report, max_rows=max_rows))
    return path


def _drawn(text: str, svg: str) -> bool:
    """`text` is drawn as an SVG text element (escaped, quotes too), exactly as given."""
    return re.search(r">\s*" + re.escape(html.escape(text)) + r"\s*</text>", svg) is not None


FETCHED: list[str] = []


def _recording_fetcher() -> Any:
    """The renderer's own fetcher, noting every URL WeasyPrint asks it for."""
    fetcher = ORIGINAL_FETCHER()
    fetch = getattr(fetcher, "fetch", fetcher)

    def spy(url: str, *args: Any) -> Any:
        FETCHED.append(url)
        return fetch(url, *args)

    if hasattr(fetcher, "fetch"):
        fetcher.fetch = spy
        return fetcher
    return spy


ORIGINAL_FETCHER = pdf.url_fetcher


@pytest.fixture(scope="module")
def sample_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pdf, "url_fetcher", _recording_fetcher)
        return _write_pdf(sample_report(), tmp_path_factory.mktemp("pdf") / "report.pdf")


@pytest.fixture(scope="module")
def large_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_pdf(
        sample_report(cells=200), tmp_path_factory.mktemp("pdf") / "large.pdf", max_rows=None
    )


def _text(path: Path, *options: str) -> str:
    assert PDFTOTEXT is not None
    done = subprocess.run(
        [PDFTOTEXT, "-enc", "UTF-8", *options, str(path), "-"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    return done.stdout.decode("utf-8")


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.slow
def test_renderer_interface_gives_pdf_bytes(sample_pdf: Path) -> None:
    data = sample_pdf.read_bytes()
    assert data.startswith(b"%PDF-")
    assert renderer("pdf") is pdf.render


@pytest.mark.slow
def test_rendering_fetches_only_the_chart_data_uris(sample_pdf: Path) -> None:
    assert len(FETCHED) >= len(sample_report().charts())
    assert all(url.startswith("data:image/svg+xml;base64,") for url in FETCHED)


@pytest.mark.slow
@needs_pdftotext
def test_pdf_text_holds_sections_values_and_hostile_strings(sample_pdf: Path) -> None:
    report = sample_report()
    text = _flat(_text(sample_pdf))
    for section in report.sections:
        assert section.title in text
    for block in report.section("summary").blocks:  # type: ignore[union-attr]
        if isinstance(block, KeyFigures):
            for figure in block.figures:
                assert figure.label in text
                assert format_value(figure.value, figure.format) in text
    # autoescaped: the hostile strings are text in the PDF, exactly as written
    assert HOSTILE in text
    assert HOSTILE_IMG in text
    assert report.title in text
    assert "not valid JSON" in text  # skipped inputs, with their reason
    assert "balance the input pipeline of rank 1" in text  # finding recommendation
    assert "15.0 %" in text  # finding cost
    assert "CPU device: no peak FLOP/s is known for it" in text  # unavailable, with why


@pytest.mark.slow
@needs_pdftotext
def test_every_page_is_numbered_page_n_of_m(sample_pdf: Path) -> None:
    pages = _text(sample_pdf).split("\f")
    pages = [page for page in pages if page.strip()]
    total = len(pages)
    assert total >= 2
    for number, page in enumerate(pages, start=1):
        assert f"page {number} of {total}" in page


@pytest.mark.slow
def test_print_html_is_autoescaped() -> None:
    page = pdf.render_html(
        sample_report(), charts={c.id: "data:," for c in sample_report().charts()}
    )
    assert "<script>" not in page
    assert "<img src=x" not in page
    assert html.escape(HOSTILE, quote=False) in page


@pytest.mark.slow
def test_a_chart_that_cannot_be_drawn_is_named_not_fatal() -> None:
    def broken(chart: Chart) -> str:
        raise ValueError(f"cannot draw {chart.kind}")

    report = sample_report()
    page = pdf.render_html(report, charts=pdf.chart_uris(report, draw=broken))
    assert page.count("This chart could not be drawn (ValueError: cannot draw") == len(
        report.charts()
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "url", ["http://example.com/x.css", "https://example.com/font.woff2", "file:///etc/passwd"]
)
def test_url_fetcher_refuses_everything_but_data(url: str) -> None:
    fetcher = pdf.url_fetcher()
    fetch = getattr(fetcher, "fetch", fetcher)
    with pytest.raises(pdf.RefusedURL):
        fetch(url)


@pytest.mark.slow
def test_url_fetcher_serves_data_uris() -> None:
    fetcher = pdf.url_fetcher()
    fetch = getattr(fetcher, "fetch", fetcher)
    response = fetch("data:text/plain;base64,aGVsbG8=")
    body = response["string"] if isinstance(response, dict) else response.read()
    assert body == b"hello"


@pytest.mark.slow
@pytest.mark.skipif(PDFIMAGES is None, reason="pdfimages (poppler-utils) is not installed")
def test_pdf_holds_no_raster_image(sample_pdf: Path) -> None:
    assert PDFIMAGES is not None
    done = subprocess.run(
        [PDFIMAGES, "-list", str(sample_pdf)], capture_output=True, check=True, timeout=60
    )
    rows = done.stdout.decode().splitlines()[2:]  # two header lines
    assert rows == []


@pytest.mark.slow
@pytest.mark.parametrize("chart", sample_report().charts(), ids=lambda c: c.kind)
def test_chart_svgs_are_vector(chart: Chart) -> None:
    svg = chart_svg(chart)
    assert svg.startswith("<svg") and 'xmlns="http://www.w3.org/2000/svg"' in svg
    assert "<path" in svg
    assert "<image" not in svg  # no raster step (imshow, rasterized colour bars)


@pytest.mark.slow
def test_series_differ_by_marker_and_dash_not_colour_alone() -> None:
    chart = Chart(
        id="greyscale",
        title="greyscale",
        kind="line",
        x_label="GPUs",
        y_label="samples/s",
        x_log2=True,
        series=[
            Series(name="a", x=[1, 2, 4], y=[1.0, 2.0, 3.5]),
            Series(name="b", x=[1, 2, 4], y=[1.0, 1.8, 3.0]),
            Series(name="c", x=[1, 2, 4], y=[0.9, 1.6, 2.5]),
            Series(name="ideal", x=[1, 2, 4], y=[1.0, 2.0, 4.0], style="dashed"),
        ],
    )
    svg = chart_svg(chart)
    # each series' markers are one filled path; its first marker's outline, relative to its
    # first vertex, is the series' shape
    shapes = set()
    for d in re.findall(r'<path d="(M[^"]*)" fill="#[0-9A-Fa-f]{6}"/>', svg):
        numbers = [float(v) for v in re.findall(r"-?[\d.]+", d.split("Z")[0])]
        shapes.add(tuple(round(v - numbers[i % 2], 1) for i, v in enumerate(numbers)))
    assert len(shapes) >= 3
    assert "stroke-dasharray" in svg  # the reference series is dashed
    # log2 x axis: a tick at each value
    for tick in ("1", "2", "4"):
        assert _drawn(str(tick), svg)


@pytest.mark.slow
def test_ideal_lines_drawn_in_their_series_colour_with_one_legend_entry() -> None:
    chart = paired_chart()
    svg = chart_svg(chart)
    dashed = re.findall(r'stroke="(#[0-9A-Fa-f]{6})"[^>]*stroke-dasharray', svg)
    # each ideal line in its series' colour (the first two palette colours) + the legend key
    assert {c.lower() for c in dashed} >= {PALETTE[0].lower(), PALETTE[1].lower()}
    assert _drawn("ideal (dashed, in its series' colour)", svg)
    assert not _drawn("ideal (b8)", svg) and not _drawn("ideal (b16)", svg)


@pytest.mark.slow
def test_user_strings_are_drawn_exactly_as_given() -> None:
    name = "cost $5 per $GPU hour"
    chart = Chart(
        id="dollars",
        title=name,
        kind="bar",
        x_label="$x$",
        y_label="$y$",
        y_format="money",
        series=[
            Series(name=name, x=["a$", "$b$"], y=[1.0, 2.0]),
            Series(name="$\\frac{1}$ unbalanced", x=["a$", "$b$"], y=[1.5, 0.5]),
        ],
    )
    svg = chart_svg(chart)
    assert _drawn(name, svg) and _drawn("$\\frac{1}$ unbalanced", svg)  # no math, no markup


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["line", "bar", "stacked_bar", "box"])
def test_charts_survive_gaps_and_empty_series(
    kind: Literal["line", "bar", "stacked_bar", "box"],
) -> None:
    series = [
        Series(
            name="gaps",
            x=[1, 2, 4],
            y=[1.0, None, 3.0],
            low=[0.9, None, 2.8],
            high=[1.1, None, None],
        ),
        Series(name="empty"),
        Series(name="box", x=["1", "2"], values=[[1.0, 2.0, 3.0], []]),
    ]
    chart = Chart(
        id=kind,
        title=kind,
        kind=kind,
        x_label="x",
        y_label="y",
        x_log2=kind == "line",
        series=series,
    )
    assert "<image" not in chart_svg(chart)
    empty = Chart(id="e", title="e", kind=kind, x_label="x", y_label="y")
    assert "no data" in chart_svg(empty)


@pytest.mark.slow
def test_heatmap_has_colour_bar_and_marks_missing_cells() -> None:
    chart = Chart(
        id="h",
        title="h",
        kind="heatmap",
        x_label="step",
        y_label="rank",
        heatmap=Heatmap(
            x_labels=["0", "1"], y_labels=["0", "1"], z=[[1.0, None], [0.5, 2.0]], z_label="stall %"
        ),
    )
    svg = chart_svg(chart)
    assert "<image" not in svg
    assert _drawn("stall %", svg)  # colour bar label
    assert _drawn("grey: no data", svg)
    assert f'fill="{NO_DATA_COLOUR}"><title>no data' in svg  # the missing cell's shape
    # ragged, all-missing and long heatmaps draw too
    grids: list[list[list[float | None]]] = [
        [[1.0], [0.5, 2.0, None]],
        [[None, None]],
        [[float(i)] * 80 for i in range(20)],
    ]
    for z in grids:
        labels = [str(i) for i in range(max(len(row) for row in z))]
        chart.heatmap = Heatmap(x_labels=labels, y_labels=["r"] * len(z), z=z, z_label="z")
        assert "<image" not in chart_svg(chart)


@pytest.mark.slow
@needs_pdftotext
def test_large_tables_are_complete_and_never_cut_off(large_pdf: Path) -> None:
    text = _text(large_pdf)
    # every row of the 200-row scaling table is there (the model name wraps, its tail stays)
    assert text.count("gpt2-") == 200
    # the long unbreakable strings of the failures table wrap inside the page: all of them
    failures = text[text.index("Cells that did not succeed") :]
    failures = failures[: failures.index("Appendix")]
    assert failures.count("x") >= 150
    assert failures.count("y") >= 300
    # and no word lies outside the page's side margins (header/footer boxes included)
    words = WORD.findall(_text(large_pdf, "-bbox"))
    assert len(words) > 1000
    left, right = SIDE_MARGIN_PT - 1, PAGE_WIDTH_PT - SIDE_MARGIN_PT + 1
    outside = [w for w in words if float(w[0]) < left or float(w[1]) > right]
    assert outside == []


@pytest.fixture(scope="module")
def fixture_pdf(tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, Path]:
    """The PDF of the real fixture results (benchmark, profile, a version-1 baseline)."""
    fixtures = Path(__file__).parents[1] / "fixtures"
    report = build_report(
        read_sources(fixtures / "cpu_sweep_profile"),
        ReportOptions(generated_at="2026-01-01T00:00:00Z", cost_per_gpu_hour=2.5),
        read_sources(fixtures / "cpu_crashes"),
    )
    return report, _write_pdf(report, tmp_path_factory.mktemp("pdf") / "fixture.pdf")


@pytest.mark.slow
@needs_pdftotext
def test_no_table_header_word_is_broken(fixture_pdf: tuple[Report, Path]) -> None:
    """Column widths come from the font's own advance widths: "Steps per repeat" in a
    narrow column must not come out as "repea" over "t"."""
    report, path = fixture_pdf
    words = {html.unescape(w[2]) for w in WORD.findall(_text(path, "-bbox"))}
    tables = [b for s in report.sections for b in s.blocks if isinstance(b, Table)]
    assert len(tables) > 10
    tables.append(pdf.sources_table(report))  # the cover's table ("Skipped", "Comm runs")
    header_words = {word for t in tables for c in t.columns for word in c.label.split()}
    assert {"Steps", "repeat", "Samples/s"} <= header_words <= words
    # a broken word leaves a piece of it on a line of its own ("repea" over "t"): no word of
    # the PDF may be such a piece, unless the report says that word somewhere as a whole
    said = set(re.findall(r"[^\s\"]+", report.model_dump_json()))
    pieces = {
        piece
        for word in header_words
        for k in range(1, len(word))
        for piece in (word[:k], word[k:])
        # one letter is also a unit ("3 s") or a label; a number is also a chart tick ("50 %")
        if len(piece) >= 2 and not piece.isdigit()
    }
    assert sorted((words & pieces) - said - header_words) == []


@pytest.mark.slow
@needs_pdftotext
def test_table_header_repeats_on_every_page_of_a_long_table(large_pdf: Path) -> None:
    pages = _text(large_pdf).split("\f")
    with_rows = [page for page in pages if "gpt2-" in page]
    assert len(with_rows) >= 3
    for page in with_rows:
        assert "Samples/s" in page


@pytest.mark.slow
def test_pdf_findings_are_cut_to_the_costliest_with_a_note() -> None:
    report = shortened(with_findings(sample_report(), 40), pdf.PDF_MAX_ROWS, 15, pdf.PDF_REST)
    block = next(b for b in report.section("bottlenecks").blocks if isinstance(b, Findings))  # type: ignore[union-attr]
    assert [f.title for f in block.findings] == [f"finding {i}" for i in range(15)]
    assert block.note == "the 15 costliest of 40 findings; 25 more in the HTML report with --full"
    html = pdf.render_html(report, charts=pdf.chart_uris(report, draw=lambda chart: "<svg/>"))
    assert "the 15 costliest of 40 findings; 25 more in the HTML report with --full" in html


@pytest.mark.slow
def test_pdf_tables_are_shortened_with_a_note() -> None:
    report = shortened(sample_report(cells=200), 40, pdf.PDF_MAX_FINDINGS, pdf.PDF_REST)
    table = next(
        b for s in report.sections for b in s.blocks if getattr(b, "id", "") == "scaling-table"
    )
    assert len(table.rows) == 40
    assert (
        table.note is not None
        and "first 40 of 200 rows; 160 more in the HTML report with --full" in table.note
    )


@pytest.mark.slow
@needs_pdftotext
def test_the_cover_leads_with_the_verdict_and_the_config_is_brief(
    fixture_pdf: tuple[Report, Path],
) -> None:
    """Page 1 says what ran and how it scaled; the appendix holds only what the config set
    (the whole resolved config, nulls included, took pages)."""
    report, path = fixture_pdf
    assert report.headline is not None and report.hardware is not None
    cover = " ".join(_text(path, "-f", "1", "-l", "1").split())
    # the verdict first, its `code` set as code (no backticks in the PDF's text)
    assert " ".join(strip_code(report.headline.text).split()) in cover
    assert f"Hardware {report.hardware}" in cover and "Measured 2026-11-22" in cover
    text = _text(path)
    appendix = text[text.rindex("Config of v3_fixture") : text.rindex("How each figure")]
    assert "null" not in appendix and "backend" not in appendix
    assert len(appendix.splitlines()) < 40


def test_a_values_word_keeps_its_column_whole() -> None:
    """The environment table broke '2.11.0+cu130' as '2.11.0+cu13' over '0' in a column sized
    for short values: a value's word (up to WORD_EM) sets its column's least width."""
    from torchscale.interfaces.report.model import Column

    keys = ["host", "gpus", "driver", "cuda", "ram", "nccl", "torch", "python", "os", "cpu"]
    keys += ["numa", "nic", "disk"]
    columns = [Column(key=k, label=k.title(), align="left") for k in keys]
    row = dict.fromkeys(keys, "a few words of prose that wrap in their column, and then some more")
    row |= {"driver": "580.159.04", "torch": "2.11.0+cu130"}
    layout = pdf.table_layout(Table(id="env", title="Environment", columns=columns, rows=[row]))
    font = dict(pdf.TABLE_FONTS)[layout.css_class]
    for key, word in (("torch", "2.11.0+cu130"), ("driver", "580.159.04")):
        width_em = layout.widths[keys.index(key)] / 100 * pdf.TABLE_WIDTH_PT / font
        assert width_em >= pdf.text_em(word), (key, layout, width_em)


@pytest.mark.slow
@needs_pdftotext
def test_a_card_note_never_breaks_a_rate_unit(tmp_path: Path) -> None:
    """A card breaks a word anywhere when it must (`overflow-wrap: anywhere`), which split a
    note's 'tokens/s' after its slash. In a card narrower than its words, every rate unit of a
    note stays whole on one line (the rest may break); without the units' spans it does not."""
    import weasyprint

    note = "465 samples/s, 476k tokens/s, 3,013 GB/s at 689 TFLOP/s"
    css = weasyprint.CSS(string=pdf._template_file(pdf.STYLESHEET))

    def words_in_a_narrow_card(body: str) -> list[str]:
        card = f'<div class="kf" style="width: 28pt"><div class="kf-note">{body}</div></div>'
        path = tmp_path / "card.pdf"
        weasyprint.HTML(string=card).write_pdf(path, stylesheets=[css])
        return [html.unescape(w[2]).rstrip(",") for w in WORD.findall(_text(path, "-bbox"))]

    units = {"samples/s", "tokens/s", "GB/s", "TFLOP/s"}
    assert units <= set(words_in_a_narrow_card(inline_html(note)))
    assert not units & set(words_in_a_narrow_card(html.escape(note)))  # the control: broken
