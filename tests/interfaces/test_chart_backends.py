"""Every chart drawn by both back-ends from one chart model: the HTML's plotly
figure and the PDF's matplotlib figure show the same series, in the same colours, with the
same legend and the same axis ranges and ticks. At 500 cells no chart draws more than 12
series, every PDF plot keeps its height with its legend under it and shorter than it, and
each chart's SVG stays small enough for WeasyPrint to draw quickly.

Charts come from the hand-made sample report, the fixture results (with a baseline), and the
500-cell results of benchmarks/report_scale.py (one chart of each kind)."""

from __future__ import annotations

import html
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from matplotlib.axes import Axes
from matplotlib.collections import QuadMesh
from matplotlib.colors import to_hex, to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, PathPatch

from tests.report_sample import paired_chart, sample_report
from tests.scale_sample import one_per_family, scale_report
from torchscale.interfaces.report.build import ReportOptions, build_report
from torchscale.interfaces.report.charts.limits import MAX_SERIES
from torchscale.interfaces.report.charts.plot import Plot, plot
from torchscale.interfaces.report.model import Band, Chart, Series
from torchscale.interfaces.report.render import svg_charts
from torchscale.interfaces.report.render.plotly_charts import figure
from torchscale.interfaces.report.render.svg_charts import row_major, series_id
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
        read_sources(FIXTURES / "results_v3"),
        ReportOptions(generated_at="2026-11-22T12:00:00Z"),
        read_sources(FIXTURES / "results_v1"),
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


def _drawn(chart: Chart) -> Figure:
    with warnings.catch_warnings():
        # "constrained_layout not applied because axes sizes collapsed to zero" (the 250-entry
        # legend of a 500-cell chart) must not happen again
        warnings.simplefilter("error")
        fig = svg_charts._figure(chart)
        fig.draw_without_rendering()
    return fig


def _hex(colour: Any) -> str:
    return to_hex(colour).lower()


def _plotly_colour(trace: dict[str, Any]) -> str:
    if trace["type"] == "box" or ("line" in trace and trace["type"] == "scatter"):
        return str(trace["line"]["color"]).lower()
    return str(trace["marker"]["color"]).lower()


def _artist_colour(artist: Any) -> str:
    if isinstance(artist, Line2D):
        return _hex(artist.get_color())
    face = to_rgba(artist.get_facecolor())
    return _hex(face if face[3] == 1 else artist.get_edgecolor())


def _plotly_range(axis: dict[str, Any]) -> list[float]:
    low, high = axis["range"]
    return [10**low, 10**high] if axis["type"] == "log" else [low, high]


def _text(label: str) -> str:
    """A label as drawn, without its escaping (plotly entities, matplotlib's `\\$`)."""
    return html.unescape(label).replace("\\$", "$")


def _legend(fig: Figure) -> tuple[list[str], list[str]]:
    if not fig.legends:
        return [], []
    legend = fig.legends[0]
    texts = [_text(t.get_text()) for t in legend.get_texts()]
    colours = []
    for handle in legend.legend_handles:
        if isinstance(handle, Line2D):
            colours.append(_hex(handle.get_color()))
        else:
            assert isinstance(handle, Patch)
            colours.append(_hex(to_rgba(handle.get_facecolor())[:3]))
    return texts, colours


def _assert_same_axes(p: Plot, layout: dict[str, Any], ax: Axes) -> None:
    for name, axis, limits, ticks, labels in (
        ("x", p.x, ax.get_xlim(), ax.get_xticks(), ax.get_xticklabels()),
        ("y", p.y, ax.get_ylim(), ax.get_yticks(), ax.get_yticklabels()),
    ):
        plotly_axis = layout[f"{name}axis"]
        if axis.range is None:
            continue
        assert _plotly_range(plotly_axis) == pytest.approx(list(limits), rel=1e-9), name
        assert plotly_axis["tickvals"] == list(axis.ticks)
        shown = [_text(t.get_text()) for t in labels]
        if axis.scale == "category":
            # the PDF thins or wraps labels that would overprint: a subset, never others
            assert set(float(t) for t in ticks) <= set(axis.ticks), name
            continue
        assert list(ticks) == pytest.approx(list(axis.ticks)), name
        assert [_text(t) for t in plotly_axis["ticktext"]] == shown == list(axis.tick_text)


def _assert_same_heatmap(p: Plot, data: list[dict[str, Any]], ax: Axes) -> None:
    if p.heatmap is None or p.heatmap.z_low is None:
        return
    (trace,) = data
    (mesh,) = [c for c in ax.collections if isinstance(c, QuadMesh)]
    assert mesh.get_clim() == (trace["zmin"], trace["zmax"]) == (p.heatmap.z_low, p.heatmap.z_high)
    assert [tuple(s) for s in trace["colorscale"]] == list(p.heatmap.stops)


@pytest.mark.slow
def test_every_chart_is_the_same_in_html_and_pdf(charts: list[Chart]) -> None:
    for chart in charts:
        p = plot(chart)
        plotly = figure(chart)
        fig = _drawn(chart)
        ax = fig.axes[0]
        if p.kind == "heatmap":
            _assert_same_heatmap(p, plotly["data"], ax)
            continue
        if p.empty:
            continue
        # the legend: the same entries, in the same order and colours, in both
        in_legend = [t for t in plotly["data"] if t.get("showlegend")]
        labels = [e.label for e in p.legend]
        colours = [e.colour.lower() for e in p.legend]
        assert [_text(t["name"]) for t in in_legend] == labels, chart.id
        assert [_plotly_colour(t) for t in in_legend] == colours, chart.id
        texts, handle_colours = _legend(fig)
        assert texts == row_major(labels, p.legend_columns), chart.id
        assert handle_colours == row_major(colours, p.legend_columns), chart.id
        # every series drawn in its colour in both
        # the series' traces, in order (a band's fill is drawn before them all, under them)
        traces = [t for t in plotly["data"] if not t.get("fill")][: len(p.series)]
        for index, (series, trace) in enumerate(zip(p.series, traces, strict=True)):
            assert _text(trace["name"]) == series.label
            assert _plotly_colour(trace) == series.colour.lower(), (chart.id, series.name)
            drawn = [a for a in ax.get_children() if a.get_gid() == series_id(index)]
            if any(v is not None for v in series.y) or any(series.values or ()):
                assert drawn, (chart.id, series.name)
            for artist in drawn:
                assert _artist_colour(artist) == series.colour.lower(), (chart.id, series.name)
        _assert_same_axes(p, plotly["layout"], ax)


def test_one_colour_per_series_in_both_formats() -> None:
    """b32 was yellow in the HTML and vermillion in the PDF."""
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
    ax = _drawn(chart).axes[0]
    pdf = {
        s.name: _artist_colour(next(a for a in ax.lines if a.get_gid() == series_id(i)))
        for i, s in enumerate(chart.series)
    }
    assert plotly == pdf
    assert len(set(pdf.values())) == 4


def test_a_step_time_axis_starts_at_zero_in_both() -> None:
    chart = _step_times()
    low, high = _plotly_range(figure(chart)["layout"]["yaxis"])
    assert low == 0.0
    assert _drawn(chart).axes[0].get_ylim() == pytest.approx((0.0, high))


def test_the_500_cell_charts_stay_readable(scale_charts: list[Chart]) -> None:
    """A 250-entry legend covered the 500-cell PDF's plot (matplotlib: "axes sizes collapsed
    to zero") and stood 1,000 px tall over a 100 px plot in the HTML."""
    for chart in scale_charts:
        assert len(chart.series) <= MAX_SERIES, chart.id
    for chart in one_per_family(scale_charts):
        p = plot(chart)
        fig = _drawn(chart)  # no layout warning
        plot_box = fig.axes[0].get_window_extent()
        height_in = plot_box.height / fig.dpi
        assert height_in == pytest.approx(svg_charts.PLOT_HEIGHT_IN, rel=0.1), chart.id
        if fig.legends:
            legend_box = fig.legends[0].get_window_extent()
            assert legend_box.height <= plot_box.height, chart.id
            assert legend_box.y1 <= plot_box.y0, chart.id  # under the plot, never over it
        # the HTML: the legend's rows above a plot of fixed height
        layout = figure(chart)["layout"]
        plot_px = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
        assert plot_px == 300
        assert 21 * p.legend_rows <= plot_px


@pytest.mark.slow
def test_chart_svgs_stay_small_at_500_cells(scale_charts: list[Chart]) -> None:
    """WeasyPrint draws each SVG node in Python: nodes, not cells, make the PDF slow."""
    for chart in one_per_family(scale_charts):
        svg = svg_charts.chart_svg(chart)
        nodes = len(re.findall(r"<[a-zA-Z]", svg))
        assert nodes <= MAX_SVG_NODES, (chart.id, nodes)
        assert "<text" in svg  # text as text, not glyph outlines
        # every series' drawing is findable by its id
        for index, series in enumerate(plot(chart).series):
            if any(v is not None for v in series.y) or any(series.values or ()):
                assert f'id="{series_id(index)}"' in svg, (chart.id, series.name)


def test_bars_are_one_shape_per_series() -> None:
    chart = Chart(
        id="many",
        title="many",
        kind="bar",
        x_label="cell",
        y_label="spread",
        series=[Series(name="s", x=[f"cell {i}" for i in range(40)], y=[1.0] * 40)],
    )
    ax = _drawn(chart).axes[0]
    assert len([p for p in ax.patches if isinstance(p, PathPatch)]) == 1
