"""Every chart drawn by both back-ends from one chart model: the interactive HTML's plotly
figure and the static SVG (the PDF's and the plain HTML's) show the same series, in the same
colours, with the same legend and the same axis ranges and ticks. At 500 cells no chart draws
more than 12 series, every static plot keeps its height with its legend under it and shorter
than it, and each chart's SVG stays small enough for WeasyPrint to draw quickly.

Charts come from the hand-made sample report, the fixture results (with a baseline), and the
500-cell results of benchmarks/report_scale.py (one chart of each kind)."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.interfaces.test_svg_direct import NS, groups, legend_entries, parse, plot_box, texts
from tests.report_sample import paired_chart, sample_report
from tests.scale_sample import one_per_family, scale_report
from torchscale.interfaces.report.build import ReportOptions, build_report
from torchscale.interfaces.report.charts.limits import MAX_SERIES
from torchscale.interfaces.report.charts.plot import Plot, plot
from torchscale.interfaces.report.model import Band, Chart, Series
from torchscale.interfaces.report.render import svg_direct
from torchscale.interfaces.report.render.plotly_charts import figure
from torchscale.interfaces.report.render.svg_direct import series_id
from torchscale.interfaces.report.sources import read_sources

FIXTURES = Path(__file__).parents[1] / "fixtures"
MAX_SVG_NODES = 400  # per chart; the 500-cell strategies chart had 3,112, its box plots 826


def _collectives() -> Chart:
    sizes = [2.0**k for k in range(10, 28, 2)]
    return Chart(
        id="collectives-busbw",
        title="Bus bandwidth against message size",
        kind="line",
        x_label="message size S",
        y_label="busbw, GB/s",
        x_format="bytes",
        x_log2=True,
        y_log=True,
        series=[
            Series(name=op, x=sizes, y=[s / 2**20 * f for s in sizes])
            for op, f in (("all_reduce", 1.0), ("all_gather", 0.7))
        ],
    )


def _verdicts() -> Chart:
    cells: list[float | int | str] = ["a", "b", "c"]
    return Chart(
        id="verdicts",
        title="change",
        kind="bar",
        x_label="cell",
        y_label="change",
        y_format="change_pct",
        series=[
            Series(name="regression", x=cells, y=[-0.2, None, None], severity="bad"),
            Series(name="improvement", x=cells, y=[None, 0.1, None], severity="good"),
            Series(name="within noise", x=cells, y=[None, None, 0.01], severity="info"),
        ],
        bands=[Band(low=-0.05, high=0.05, label="noise band")],
    )


def _forecasts() -> Chart:
    """Measured throughput with its interval bars, and its forecast, dashed, with a band."""
    return Chart(
        id="forecasts",
        title="throughput, measured and forecast",
        kind="line",
        x_label="GPUs",
        y_label="samples/s",
        x_format="int",
        y_format="rate",
        x_log2=True,
        series=[
            Series(name="m", x=[1, 2], y=[10, 19], low=[9, 18], high=[11, 20]),
            Series(
                name="forecast (m)",
                x=[2, 4, 8],
                y=[19, 35, 60],
                low=[17, 31, 50],
                high=[21, 39, 70],
                style="dashed",
                interval="band",
                reference_for="m",
            ),
        ],
    )


def _step_times() -> Chart:
    """Step times of 75-92 ms: one format started this axis at 0, the other at 75 ms."""
    return Chart(
        id="steps",
        title="steps",
        kind="box",
        x_label="GPUs",
        y_label="step time",
        y_format="seconds",
        series=[
            Series(name=f"b{b}", x=["1", "2"], values=[[0.075, 0.08, 0.092]] * 2) for b in (16, 32)
        ],
    )


@pytest.fixture(scope="module")
def scale_charts(tmp_path_factory: pytest.TempPathFactory) -> list[Chart]:
    return scale_report(tmp_path_factory.mktemp("scale")).charts()


@pytest.fixture(scope="module")
def charts(scale_charts: list[Chart]) -> list[Chart]:
    fixture = build_report(
        read_sources(FIXTURES / "cpu_sweep_profile"),
        ReportOptions(generated_at="2026-11-22T12:00:00Z"),
        read_sources(FIXTURES / "cpu_crashes"),
    )
    return [
        *sample_report().charts(),
        paired_chart(),
        _collectives(),
        _verdicts(),
        _step_times(),
        _forecasts(),
        *one_per_family(fixture.charts()),
        *one_per_family(scale_charts),
    ]


def _drawn(chart: Chart) -> ET.Element:
    return parse(svg_direct.chart_svg(chart))


def _plotly_colour(trace: dict[str, Any]) -> str:
    if trace["type"] == "box" or ("line" in trace and trace["type"] == "scatter"):
        return str(trace["line"]["color"]).lower()
    return str(trace["marker"]["color"]).lower()


def _colours(group: ET.Element) -> set[str]:
    """The colours a series' group paints with (fills and strokes, no white, no pattern)."""
    paints = {p.get(k, "") for p in group.iter(f"{NS}path") for k in ("fill", "stroke")}
    return {c.lower() for c in paints if c.startswith("#") and c.lower() != "#ffffff"}


def _plotly_range(axis: dict[str, Any]) -> list[float]:
    low, high = axis["range"]
    return [10**low, 10**high] if axis["type"] == "log" else [low, high]


def _text(label: str) -> str:
    """A label as drawn, without plotly's entities."""
    return html.unescape(label)


def _assert_same_axes(p: Plot, layout: dict[str, Any], root: ET.Element) -> None:
    shown = set(texts(root))
    for name, axis in (("x", p.x), ("y", p.y)):
        plotly_axis = layout[f"{name}axis"]
        if axis.range is None:
            continue
        assert _plotly_range(plotly_axis) == pytest.approx(list(axis.range), rel=1e-9), name
        assert plotly_axis["tickvals"] == list(axis.ticks)
        assert [_text(t) for t in plotly_axis["ticktext"]] == list(axis.tick_text)
        if axis.scale != "category":  # the SVG thins or wraps category labels that would clash
            assert set(axis.tick_text) <= shown, name


def _assert_same_heatmap(p: Plot, data: list[dict[str, Any]], root: ET.Element) -> None:
    if p.heatmap is None or p.heatmap.z_low is None:
        return
    (trace,) = data
    assert (trace["zmin"], trace["zmax"]) == (p.heatmap.z_low, p.heatmap.z_high)
    assert [tuple(s) for s in trace["colorscale"]] == list(p.heatmap.stops)
    cells = [e for e in root.iter(f"{NS}path") if e.find(f"{NS}title") is not None]
    values = [v for row in p.heatmap.z for v in row]
    missing = None in values  # one shape for all the missing cells
    assert len(cells) == len([v for v in values if v is not None]) + missing


@pytest.mark.slow
def test_every_chart_is_the_same_in_plotly_and_svg(charts: list[Chart]) -> None:
    for chart in charts:
        p = plot(chart)
        plotly = figure(chart)
        root = _drawn(chart)
        if p.kind == "heatmap":
            _assert_same_heatmap(p, plotly["data"], root)
            continue
        if p.empty:
            continue
        # the legend: the same entries, in the same order and colours, in both
        in_legend = [t for t in plotly["data"] if t.get("showlegend")]
        labels = [e.label for e in p.legend]
        colours = [e.colour.lower() for e in p.legend]
        assert [_text(t["name"]) for t in in_legend] == labels, chart.id
        assert [_plotly_colour(t) for t in in_legend] == colours, chart.id
        assert legend_entries(root) == list(zip(labels, colours, strict=True)), chart.id
        # every series drawn in its colour in both
        # the series' traces, in order (a band's fill is drawn before them all, under them)
        traces = [t for t in plotly["data"] if not t.get("fill")][: len(p.series)]
        for index, (series, trace) in enumerate(zip(p.series, traces, strict=True)):
            assert _text(trace["name"]) == series.label
            assert _plotly_colour(trace) == series.colour.lower(), (chart.id, series.name)
            drawn = groups(root).get(series_id(p.id, index))
            if any(v is not None for v in series.y) or any(series.values or ()):
                assert drawn is not None, (chart.id, series.name)
                allowed = {series.colour.lower(), series.interval_colour.lower()}
                assert series.colour.lower() in _colours(drawn) <= allowed, (chart.id, series.name)
        _assert_same_axes(p, plotly["layout"], root)


def test_one_colour_per_series_in_both_formats() -> None:
    """b32 was yellow in the interactive HTML and vermillion in the PDF."""
    chart = Chart(
        id="batches",
        title="batches",
        kind="line",
        x_label="GPUs",
        y_label="samples/s",
        x_log2=True,
        series=[Series(name=f"b{b}", x=[1, 2], y=[b, 1.8 * b]) for b in (8, 16, 32, 64)],
    )
    plotly = {t["name"]: _plotly_colour(t) for t in figure(chart)["data"]}
    drawn = groups(_drawn(chart))
    svg = {s.name: _colours(drawn[series_id(chart.id, i)]) for i, s in enumerate(chart.series)}
    assert {name: {colour} for name, colour in plotly.items()} == svg
    assert len(set(plotly.values())) == 4


def test_a_step_time_axis_starts_at_zero_in_both() -> None:
    chart = _step_times()
    low, high = _plotly_range(figure(chart)["layout"]["yaxis"])
    assert low == 0.0
    assert plot(chart).y.range == pytest.approx((0.0, high))
    assert "0 ms" in texts(_drawn(chart))


@pytest.mark.slow  # over 2 s on 2 cores
def test_the_500_cell_charts_stay_readable(scale_charts: list[Chart]) -> None:
    """A 250-entry legend covered the 500-cell PDF's plot and stood 1,000 px tall over a
    100 px plot in the HTML."""
    for chart in scale_charts:
        assert len(chart.series) <= MAX_SERIES, chart.id
    for chart in one_per_family(scale_charts):
        p = plot(chart)
        root = _drawn(chart)
        _, top, _, bottom = plot_box(root)
        assert bottom - top == pytest.approx(svg_direct.PLOT_HEIGHT), chart.id
        if p.legend:
            (legend,) = [g for g in root.iter(f"{NS}g") if g.get("class") == "legend"]
            rows = [float(t.attrib["y"]) for t in legend.iter(f"{NS}text")]
            assert p.legend_rows * svg_direct.LEGEND_ROW <= bottom - top, chart.id
            assert min(rows) - svg_direct.SMALL > bottom, chart.id  # under the plot, not over
        # the HTML: the legend's rows above a plot of fixed height
        layout = figure(chart)["layout"]
        plot_px = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
        assert plot_px == 300
        assert 21 * p.legend_rows <= plot_px


@pytest.mark.slow
def test_chart_svgs_stay_small_at_500_cells(scale_charts: list[Chart]) -> None:
    """WeasyPrint draws each SVG node in Python: nodes, not cells, make the PDF slow."""
    for chart in one_per_family(scale_charts):
        svg = svg_direct.chart_svg(chart)
        nodes = len(re.findall(r"<[a-zA-Z]", svg))
        assert nodes <= MAX_SVG_NODES, (chart.id, nodes)
        assert "<text" in svg  # text as text, not glyph outlines
        # every series' drawing is findable by its id
        for index, series in enumerate(plot(chart).series):
            if any(v is not None for v in series.y) or any(series.values or ()):
                assert f'id="{series_id(chart.id, index)}"' in svg, (chart.id, series.name)


def test_bars_are_one_shape_per_series() -> None:
    chart = Chart(
        id="many",
        title="many",
        kind="bar",
        x_label="cell",
        y_label="spread",
        series=[Series(name="s", x=[f"cell {i}" for i in range(40)], y=[1.0] * 40)],
    )
    (group,) = [g for gid, g in groups(_drawn(chart)).items() if "-series-" in gid]
    assert len([p for p in group.iter(f"{NS}path") if p.get("stroke") == "white"]) == 1
