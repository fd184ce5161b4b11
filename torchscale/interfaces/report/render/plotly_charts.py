"""Plotly figures of the chart model's `Plot`, as plain JSON-ready dicts (the HTML back-end).

Every look is `report.charts.plot`'s, the PDF's too (docs/reporting.md, "Formats"); here only
plotly's vocabulary and pixel layout: trace types, a fixed plot height with the title and legend
above it, hover templates, and escaping text.

Plotly draws titles, trace names, axis labels and category labels through its own pseudo-HTML
(`<b>`, `<br>`, `<a href=...>`), so every user string goes through `plotly_text`, which turns
`&`, `<` and `>` into entities that plotly decodes back to the literal characters.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

from torchscale.interfaces.report.charts import palette
from torchscale.interfaces.report.charts.axes import Axis
from torchscale.interfaces.report.charts.plot import (
    CLIP_UP,
    INTERVAL_BAND_ALPHA,
    LegendEntry,
    Plot,
    PlotSeries,
    band_runs,
    bar_intervals,
    plot,
)
from torchscale.interfaces.report.model import Chart

FONT_STACK = (
    'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", sans-serif'
)
# the palette's marker and hatch names are plotly's own symbol and pattern names
_DASH = {"solid": "solid", "dashed": "dash", "dotted": "dot"}
REFERENCE_GROUP = "reference"
TITLE_WRAP = 72  # characters per title line: fits beside the mode bar on a laptop screen
PLOT_PX = 300  # the plot area's height, whatever the legend and labels take
TITLE_LINE_PX = 20
SUBTITLE_WRAP = 96  # characters per line of the smaller text under the title
SUBTITLE_FONT_PX = 12
SUBTITLE_COLOUR = "#555555"
CLIP_MARK_PX = 9
LEGEND_ROW_PX = 21
MARGIN_BOTTOM_PX = 56
CHAR_PX = 6.6  # a tick label character at 12 px
SLANT_DEGREES = 45
HEATMAP_ROW_PX = 26

# plotly.js config: same for every chart; the renderer writes it into the page once
CONFIG: dict[str, Any] = {
    "responsive": True,
    "displaylogo": False,  # the logo links to plotly.com: nothing in the page points outside
    "typesetMath": False,  # a user string between $ signs must not be read as LaTeX
    "modeBarButtonsToRemove": ["select2d", "lasso2d"],
}


def plotly_text(text: str) -> str:
    """A user string as plotly text that shows literally: plotly reads `<...>` as its own
    markup and decodes entities, so `&`, `<`, `>` become entities that it decodes back to the
    characters. Newlines, which plotly turns into spaces anyway, become spaces here."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("\r\n", " ")
        .replace("\n", " ")
    )


def title_text(title: str, width: int = TITLE_WRAP) -> tuple[str, int]:
    """A chart title as escaped plotly text, broken into lines at word boundaries (plotly
    never wraps a title, and a long one would run under the mode bar), and its line count."""
    lines = textwrap.wrap(title, width=width, break_long_words=True) or [""]
    return "<br>".join(plotly_text(line) for line in lines), len(lines)


def _axis(axis: Axis, grid: bool) -> dict[str, Any]:
    """The model's axis as plotly axis properties: its range and exactly its ticks."""
    props: dict[str, Any] = {
        "title": {"text": plotly_text(axis.title)},
        "type": "log" if axis.scale == "log" else "linear",
        "showgrid": grid,
        "zeroline": False,
        "automargin": True,
        "gridcolor": palette.GRID_COLOUR,
        "linecolor": palette.AXIS_COLOUR,
        "showline": True,
        "tickmode": "array",
        "tickvals": list(axis.ticks),
        "ticktext": [plotly_text(t) for t in axis.tick_text],
    }
    if axis.range is not None:
        low, high = axis.range
        props["range"] = [math.log10(low), math.log10(high)] if axis.scale == "log" else [low, high]
    if axis.slanted:
        props["tickangle"] = -SLANT_DEGREES
    return props


def _error_y(series: PlotSeries) -> dict[str, Any] | None:
    """The interval as asymmetric error bars (plotly wants distances from y)."""
    if series.low is None or series.high is None:
        return None
    points = list(zip(series.y, series.low, series.high, strict=True))
    above = [h - y if h is not None and y is not None else None for y, _, h in points]
    below = [y - lo if lo is not None and y is not None else None for y, lo, _ in points]
    if all(v is None for v in above + below):
        return None
    return {
        "type": "data",
        "symmetric": False,
        "array": above,
        "arrayminus": below,
        "thickness": 1.5,
        "width": 4,
        "color": series.interval_colour,
    }


def _trace(p: Plot, series: PlotSeries) -> dict[str, Any]:
    trace: dict[str, Any] = {
        "name": plotly_text(series.label),
        "x": list(series.x),
        "showlegend": series.in_legend and bool(p.legend),
    }
    if p.kind == "box":
        boxes = list(zip(series.x, series.values or (), strict=True))
        trace.update(
            type="box",
            x=[x for x, samples in boxes for _ in samples],
            y=[v for _, samples in boxes for v in samples],
            boxpoints="outliers",
            marker={"color": series.colour, "size": 4},
            line={"color": series.colour, "width": 1.5},
            fillcolor=series.colour + "59",  # 35 % opaque, as the PDF's box fill
        )
        return trace
    trace.update(
        y=list(series.y),
        text=[plotly_text(t) for t in series.text],
        hovertemplate="%{text}<extra></extra>",
    )
    if series.reference:
        trace.update(legendgroup=REFERENCE_GROUP)
    if p.kind == "dot":
        marker = {"color": series.colour, "size": 8, "symbol": series.marker or "circle"}
        trace.update(type="scatter", mode="markers", marker=marker)
    elif p.kind == "line":
        line = {
            "color": series.colour,
            "width": 1.5 if series.reference else 2,
            "dash": _DASH[series.dash],
        }
        trace.update(type="scatter", connectgaps=False, line=line)
        if series.marker is None:
            trace["mode"] = "lines"
        else:
            trace.update(
                mode="lines+markers",
                marker={"color": series.colour, "size": 7, "symbol": series.marker},
            )
    else:
        marker = {"color": series.colour, "line": {"color": "#ffffff", "width": 0.5}}
        if series.hatch:
            marker["pattern"] = {
                "shape": series.hatch,
                "bgcolor": series.colour,  # else transparent: the bar would be white lines
                "fgcolor": "#ffffff",
                "fgopacity": 0.9,
                "size": 7,
            }
        # the text is the hover's, never printed on the bars
        trace.update(type="bar", marker=marker, textposition="none")
    error = _error_y(bar_intervals(series))
    if error is not None:
        trace["error_y"] = error
    return trace


def _band(series: PlotSeries, group: str) -> dict[str, Any] | None:
    """A band series' interval as one filled trace, a closed shape per stretch (plotly's
    `toself` closes each part between gaps on its own), in the series' colour, light; hidden
    with its series, and silent on hover (the line's hover has the interval)."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    for run in band_runs(series):
        if xs:
            xs.append(None)
            ys.append(None)
        xs += [x for x, _, _ in run] + [x for x, _, _ in reversed(run)]
        ys += [high for _, _, high in run] + [low for _, low, _ in reversed(run)]
    if not xs:
        return None
    return {
        "type": "scatter",
        "mode": "lines",
        "x": xs,
        "y": ys,
        "fill": "toself",
        "fillcolor": series.colour + palette.hex_byte(INTERVAL_BAND_ALPHA),
        "line": {"width": 0, "color": series.colour},
        "hoverinfo": "skip",
        "showlegend": False,
        "legendgroup": group,
        "name": plotly_text(f"{series.label}: interval"),
    }


def _clip_marks(series: PlotSeries, group: str) -> dict[str, Any]:
    """The triangles where the series' intervals were cut at the axis' edge: drawn over the
    frame (not clipped by it), hidden with their series, each hover with the full interval."""
    return {
        "type": "scatter",
        "mode": "markers",
        "x": [c.x for c in series.clips],
        "y": [c.y for c in series.clips],
        "marker": {
            "color": series.interval_colour,
            "size": CLIP_MARK_PX,
            "symbol": ["triangle-up" if c.up else "triangle-down" for c in series.clips],
        },
        "text": [plotly_text(c.text) for c in series.clips],
        "hovertemplate": "%{text}<extra></extra>",
        "cliponaxis": False,
        "showlegend": False,
        "legendgroup": group,
        "name": plotly_text(f"{series.label}: {CLIP_UP} cut"),
    }


def subtitle_text(lines: tuple[str, ...], width: int = SUBTITLE_WRAP) -> tuple[str, int]:
    """The lines under a chart's title as escaped plotly text in a smaller, muted font, to
    follow the title in its own text (where plotly stacks the lines: an annotation would
    have to guess where the title ends), wrapped, and their count."""
    wrapped = [w for line in lines for w in textwrap.wrap(line, width=width) or [""]]
    style = f"font-size:{SUBTITLE_FONT_PX}px;color:{SUBTITLE_COLOUR}"
    text = "".join(f'<br><span style="{style}">{plotly_text(w)}</span>' for w in wrapped)
    return text, len(wrapped)


def _legend_only(entry: LegendEntry, group: str | None) -> dict[str, Any]:
    """A legend entry without data: the one for every reference line, or a band's."""
    trace: dict[str, Any] = {
        "type": "scatter",
        "x": [None],
        "y": [None],
        "name": plotly_text(entry.label),
        "hoverinfo": "skip",
        "showlegend": True,
    }
    if entry.kind == "band":
        trace.update(
            mode="markers",
            marker={"symbol": "square", "size": 14, "color": entry.colour, "opacity": 0.35},
        )
    else:
        trace.update(
            mode="lines", line={"color": entry.colour, "width": 1.5, "dash": _DASH[entry.dash]}
        )
    if group is not None:
        trace["legendgroup"] = group
    return trace


def _bands(p: Plot) -> list[dict[str, Any]]:
    """The y bands: a light rectangle across the plot behind the data."""
    return [
        {
            "type": "rect",
            "xref": "paper",
            "x0": 0,
            "x1": 1,
            "yref": "y",
            "y0": band.low,
            "y1": band.high,
            "fillcolor": band.colour,
            "opacity": 0.18,
            "line": {"width": 0},
            "layer": "below",
        }
        for band in p.bands
    ]


def _heatmap(p: Plot) -> tuple[list[dict[str, Any]], dict[str, Any], int]:
    """The heatmap trace, its axes and a height that keeps rows readable."""
    heat = p.heatmap
    if heat is None:
        return [], {}, PLOT_PX
    x = [plotly_text(label) for label in heat.x_labels]
    y = [plotly_text(label) for label in heat.y_labels]
    trace: dict[str, Any] = {
        "type": "heatmap",
        "x": x,
        "y": y,
        "z": [list(row) for row in heat.z],
        "zmin": heat.z_low,
        "zmax": heat.z_high,
        "colorscale": [[position, colour] for position, colour in heat.stops],
        "hoverongaps": False,
        "xgap": 1,
        "ygap": 1,
        "colorbar": {"title": {"text": plotly_text(heat.z_label), "side": "right"}},
        "hovertemplate": "%{x}, %{y}: %{z:.3~r}<extra></extra>",
    }
    if heat.values is not None:
        trace["text"] = [list(row) for row in heat.values]
        trace["texttemplate"] = "%{text}"
        trace["textfont"] = {"size": 11}
    axes = {
        "xaxis": _heatmap_axis(p.x, x[:: heat.x_every]),
        "yaxis": _heatmap_axis(p.y, y[:: heat.y_every], top_down=True),
    }
    height = min(900, max(PLOT_PX, 80 + HEATMAP_ROW_PX * len(heat.y_labels)))
    return [trace], axes, height


def _heatmap_axis(axis: Axis, ticks: list[str], top_down: bool = False) -> dict[str, Any]:
    props: dict[str, Any] = {"type": "category", "showgrid": False}
    if top_down:
        props["autorange"] = "reversed"  # first label on top, as in a table
    title = {"text": plotly_text(axis.title)}
    return {**props, "title": title, "tickmode": "array", "tickvals": ticks, "automargin": True}


def _top_left(y: float) -> dict[str, Any]:
    """Anchored at its top left: at the plot's left edge, `y` of the whole figure's height."""
    return dict(x=0, xanchor="left", xref="paper", y=y, yanchor="top", yref="container")


def figure(chart: Chart | Plot) -> dict[str, Any]:
    """The plotly figure (`{"data": [...], "layout": {...}}`) of one chart, JSON-ready: only
    dicts, lists, str, finite numbers and None; every user string through `plotly_text`."""
    p = chart if isinstance(chart, Plot) else plot(chart)
    title, title_lines = title_text(p.title)
    # the title, then the legend, sit above the plot in container pixels: the plot keeps its
    # height however many rows the legend takes
    title_px = 14 + TITLE_LINE_PX * title_lines
    subtitle, subtitle_lines = subtitle_text(p.subtitle)
    title += subtitle
    title_px += TITLE_LINE_PX * subtitle_lines  # plotly spaces the lines by the title's font
    legend_px = LEGEND_ROW_PX * p.legend_rows
    top = title_px + 8 + legend_px
    bottom = MARGIN_BOTTOM_PX
    plot_px = PLOT_PX
    layout: dict[str, Any] = {
        "title": {"text": title, **_top_left(1), "pad": {"t": 12}, "font": {"size": 15}},
        "font": {"family": FONT_STACK, "size": 12, "color": palette.TEXT_COLOUR},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "colorway": list(palette.PALETTE),
        "showlegend": bool(p.legend),
        "hovermode": "x unified" if p.kind == "line" else "closest",
        "hoverlabel": {"font": {"family": FONT_STACK}},
    }
    if p.kind == "heatmap":
        traces, axes, plot_px = _heatmap(p)
        layout.update(axes)
        layout["plot_bgcolor"] = palette.NO_DATA_COLOUR  # no data reads as grey, not as zero
    else:
        traces = [_trace(p, s) for s in p.series]
        bands = []
        for index, series in enumerate(p.series):
            if not (series.clips or series.band):
                continue
            # clip marks and a band hide with their line: in its group (a reference, such as
            # a forecast, keeps the group its legend entry hides), or one of their own
            group = traces[index].setdefault("legendgroup", f"series-{index}")
            if series.clips:
                traces.append(_clip_marks(series, group))
            if series.band and (band := _band(series, group)) is not None:
                bands.append(band)
        # the bands first: plotly draws traces in order, so each lies under every line
        traces = bands + traces
        reference = next((e for e in p.legend if e.series is None and e.kind == "line"), None)
        if reference is not None:
            traces.append(_legend_only(reference, REFERENCE_GROUP))
        traces += [_legend_only(e, None) for e in p.legend if e.kind == "band"]
        if p.bands:
            layout["shapes"] = _bands(p)
        layout["xaxis"] = _axis(p.x, grid=False)
        layout["yaxis"] = _axis(p.y, grid=True)
        if p.kind == "box":
            layout["boxmode"] = "group"
        elif p.bar_mode is not None:
            layout["barmode"] = p.bar_mode
            layout["bargap"] = 0.2 if p.bar_mode == "group" else 0.3
        if p.x.slanted:
            longest = max((len(c) for c in p.x.categories), default=0)
            bottom += int(CHAR_PX * longest * math.sin(math.radians(SLANT_DEGREES)))
    layout["margin"] = {"l": 64, "r": 24, "t": top, "b": bottom}
    layout["height"] = plot_px + top + bottom
    layout["legend"] = {
        "orientation": "h",
        **_top_left(1 - title_px / layout["height"]),
        "font": {"size": 12},
        "traceorder": "normal",
        "entrywidth": 1 / p.legend_columns,
        "entrywidthmode": "fraction",
    }
    return {"data": traces, "layout": layout}
