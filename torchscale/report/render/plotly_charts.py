"""Plotly figures from the report model's `Chart`, as plain JSON-ready dicts.

The HTML renderer embeds each figure as JSON and draws it with `Plotly.newPlot`; nothing here
computes a result. What happens here is presentation only: picking axis types and tick formats
for a `ValueFormat`, converting units for display (microseconds to seconds, bytes to a binary
unit), reshaping box samples into the flat arrays plotly wants, and escaping text.

Plotly draws titles, trace names, axis labels and category labels through its own pseudo-HTML
(`<b>`, `<br>`, `<a href=...>`), so every user string goes through `plotly_text`, which turns
`&`, `<` and `>` into entities that plotly decodes back to the literal characters.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

from torchscale.report.model import Chart, Series, ValueFormat
from torchscale.report.render.formatting import (
    ABBREVIATE_FROM,
    BAND_COLOUR,
    SEVERITY_COLOUR,
    format_value,
    heatmap_scale,
    log_ticks,
    reference_label,
    reference_legend,
    thin_ticks,
    tick_labels,
)

FONT_STACK = (
    'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", sans-serif'
)
# Okabe-Ito (distinguishable with the common colour-vision deficiencies), with olive in place of
# its yellow, which is unreadable as a thin line on white
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#999933",
    "#000000",
)
# a marker shape per series as well as a colour, so series stay apart in greyscale print; 7
# shapes against 8 colours, so the pair repeats only after 56 series
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "star")
_DASH = {"solid": "solid", "dashed": "dash", "dotted": "dot"}
_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_GRID = "#e3e6ea"
REFERENCE_GREY = "#555555"
REFERENCE_GROUP = "reference"
_NO_DATA = "#e3e6ea"
_TEXT = "#1f2328"
MANY_CATEGORIES = 12
MANY_CATEGORIES_EXTRA_PX = 160
TITLE_WRAP = 72  # characters per title line: fits beside the mode bar on a laptop screen

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


def _finite(value: float | int | None) -> float | int | None:
    """NaN and infinities are gaps: they are not JSON, and plotly draws None as a gap."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _scaled(values: Iterable[float | int | None], factor: float) -> list[float | int | None]:
    out: list[float | int | None] = []
    for value in values:
        finite = _finite(value)
        out.append(finite if finite is None or factor == 1.0 else finite * factor)
    return out


def _numbers(chart: Chart) -> list[float]:
    """Every finite y-side number of the chart (for choosing a display unit)."""
    found: list[float] = []
    for series in chart.series:
        groups: list[Sequence[float | None]] = [series.y, series.low or [], series.high or []]
        groups.extend(series.values or [])
        for group in groups:
            found.extend(float(v) for v in group if _finite(v) is not None and v is not None)
    return found


def _axis_format(fmt: ValueFormat, numbers: list[float]) -> tuple[float, dict[str, Any]]:
    """(display factor, plotly axis properties) for values in `fmt`: d3 tick and hover formats
    that read like `format_value`, and a unit conversion where plotly has no such format."""
    largest = max((abs(v) for v in numbers), default=0.0)
    if fmt in ("seconds", "us"):
        factor = 1e-6 if fmt == "us" else 1.0
        if largest * factor < 1000:
            # SI prefixes on seconds: 12.3ms, 450µs
            return factor, {"tickformat": "~s", "hoverformat": ".3~s", "ticksuffix": "s"}
        return factor, {"tickformat": ",~r", "hoverformat": ",.4~r", "ticksuffix": " s"}
    if fmt == "change_pts":  # a difference of shares, in percentage points
        return 100.0, {"tickformat": "+.1~f", "hoverformat": "+.1f", "ticksuffix": " pts"}
    if fmt == "bytes":
        unit = 0
        while largest >= 1024 and unit < len(_BYTE_UNITS) - 1:
            largest /= 1024
            unit += 1
        suffix = " " + _BYTE_UNITS[unit]
        return 1024.0**-unit, {"tickformat": ",.3~r", "hoverformat": ",.3~r", "ticksuffix": suffix}
    # d3 "~" trims trailing zeros: 20,000 and 0.5, never 20,000.0; an axis reaching
    # ABBREVIATE_FROM reads 20k, as `tick_labels` writes the PDF's ticks
    big = {"tickformat": "~s"} if largest >= ABBREVIATE_FROM else {}
    formats: dict[str, dict[str, Any]] = {
        "int": {"tickformat": ",~r", "hoverformat": ",.0f", **big},
        "float": {"tickformat": ",.3~r", "hoverformat": ",.3~r", **big},
        "ratio_pct": {"tickformat": ".1~%", "hoverformat": ".1%"},
        "pct": {"tickformat": ",.1~f", "hoverformat": ",.1f", "ticksuffix": " %"},
        "rate": {"tickformat": ",~r", "hoverformat": ",.1f", **big},
        "change_pct": {"tickformat": "+.1~%", "hoverformat": "+.1%"},
        "money": {"tickformat": "$,.2~f", "hoverformat": "$,.2f"},
    }
    return 1.0, dict(formats.get(fmt, {}))


def _is_categorical(chart: Chart) -> bool:
    return chart.kind in ("bar", "stacked_bar", "box") or any(
        isinstance(x, str) for series in chart.series for x in series.x
    )


def _x_values(series: Series, categorical: bool, factor: float) -> list[Any]:
    if categorical:
        return [plotly_text(str(x)) for x in series.x]
    return [plotly_text(x) if isinstance(x, str) else _scaled([x], factor)[0] for x in series.x]


def _x_axis(chart: Chart, categorical: bool) -> tuple[float, dict[str, Any]]:
    """(display factor for numeric x, x axis properties)."""
    axis: dict[str, Any] = {"title": {"text": plotly_text(chart.x_label)}}
    numbers = [
        x
        for series in chart.series
        for x in series.x
        if not isinstance(x, str) and _finite(x) is not None
    ]
    if categorical:
        axis.update(type="category")
        return 1.0, axis
    if chart.x_log2:
        # log axis with a tick at each value measured: 1, 2, 4, 8 GPUs evenly spaced
        ticks = thin_ticks(sorted({x for x in numbers if x > 0}))
        axis.update(
            type="log",
            tickmode="array",
            tickvals=ticks,
            ticktext=[plotly_text(format_value(t, chart.x_format)) for t in ticks],
        )
        return 1.0, axis
    factor, props = _axis_format(chart.x_format, [float(x) for x in numbers])
    axis.update(props)
    return factor, axis


def _error_y(series: Series, factor: float) -> dict[str, Any] | None:
    """The run-to-run interval as asymmetric error bars (plotly wants distances from y)."""
    if series.low is None and series.high is None:
        return None
    ys = _scaled(series.y, factor)
    lows = _scaled(series.low or [None] * len(ys), factor)
    highs = _scaled(series.high or [None] * len(ys), factor)
    above = [
        h - y if h is not None and y is not None else None for y, h in zip(ys, highs, strict=False)
    ]
    below = [
        y - lo if lo is not None and y is not None else None
        for y, lo in zip(ys, lows, strict=False)
    ]
    return {
        "type": "data",
        "symmetric": False,
        "array": above,
        "arrayminus": below,
        "thickness": 1.5,
        "width": 5,
    }


def _styles(series: Sequence[Series]) -> list[tuple[str, str]]:
    """(colour, marker symbol) per series: a palette slot per series of its own; a reference
    (an ideal line) takes its series' colour, so the pair reads as one."""
    own: dict[str, int] = {}
    for s in series:
        # an unattached reference (one ideal line for all series) is grey, as in the PDF
        if s.reference_for is None and (s.style == "solid" or s.severity is not None):
            own.setdefault(s.name, len(own))
    slots = [own.get(s.reference_for if s.reference_for is not None else s.name) for s in series]
    styles = [
        (PALETTE[slot % len(PALETTE)], SYMBOLS[slot % len(SYMBOLS)])
        if slot is not None
        else (REFERENCE_GREY, SYMBOLS[0])
        for slot in slots
    ]
    return [
        (SEVERITY_COLOUR[s.severity], symbol) if s.severity is not None else (colour, symbol)
        for s, (colour, symbol) in zip(series, styles, strict=True)
    ]


def _reference_legend(series: Sequence[Series]) -> list[dict[str, Any]]:
    """One legend entry for every attached reference line: clicking it shows or hides them all."""
    first = reference_legend(series)
    if first is None:
        return []
    return [
        {
            "type": "scatter",
            "mode": "lines",
            "x": [None],
            "y": [None],
            "name": plotly_text(reference_label(first)),
            "legendgroup": REFERENCE_GROUP,
            "line": {"color": REFERENCE_GREY, "width": 1.5, "dash": _DASH[first.style]},
            "hoverinfo": "skip",
        }
    ]


def _line_or_bar_traces(
    chart: Chart, factor: float, x_factor: float, categorical: bool
) -> list[dict[str, Any]]:
    traces: list[dict[str, Any]] = []
    for series, (colour, symbol) in zip(chart.series, _styles(chart.series), strict=True):
        trace: dict[str, Any] = {
            "name": plotly_text(series.name),
            "x": _x_values(series, categorical, x_factor),
            "y": _scaled(series.y, factor),
        }
        if series.reference_for is not None:
            trace.update(legendgroup=REFERENCE_GROUP, showlegend=False)
        if chart.kind == "line" and (series.reference_for is not None or colour == REFERENCE_GREY):
            trace.update(
                type="scatter",
                mode="lines",
                connectgaps=False,
                line={"color": colour, "width": 1.5, "dash": _DASH[series.style]},
            )
        elif chart.kind == "line":
            trace.update(
                type="scatter",
                mode="lines+markers",
                connectgaps=False,
                line={"color": colour, "width": 2, "dash": _DASH[series.style]},
                marker={"color": colour, "size": 7, "symbol": symbol},
            )
        else:
            trace.update(type="bar", marker={"color": colour})
            if series.style != "solid":
                # a dashed/dotted series drawn as bars: hatched, so it reads as a reference
                trace["marker"]["pattern"] = {"shape": "/" if series.style == "dashed" else "."}
        error = _error_y(series, factor)
        if error is not None:
            error["color"] = colour if chart.kind == "line" else _TEXT
            trace["error_y"] = error
        traces.append(trace)
    return traces + _reference_legend(chart.series)


def disjoint(series: Sequence[Series]) -> bool:
    """Whether no x has a value in more than one series (one series per verdict): their bars
    are overlaid, each at full width, rather than grouped into thin slots."""
    seen: set[str] = set()
    for s in series:
        own = {str(x) for x, y in zip(s.x, s.y, strict=False) if _finite(y) is not None}
        if own & seen:
            return False
        seen |= own
    return len(series) > 1


def _bands(chart: Chart, factor: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(shapes, legend-only traces) of the chart's y bands: a light rectangle across the plot
    behind the data, named in the legend."""
    shapes: list[dict[str, Any]] = []
    traces: list[dict[str, Any]] = []
    for band in chart.bands:
        shapes.append(
            {
                "type": "rect",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "yref": "y",
                "y0": band.low * factor,
                "y1": band.high * factor,
                "fillcolor": BAND_COLOUR,
                "opacity": 0.18,
                "line": {"width": 0},
                "layer": "below",
            }
        )
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": [None],
                "y": [None],
                "name": plotly_text(band.label),
                "marker": {"symbol": "square", "size": 14, "color": BAND_COLOUR, "opacity": 0.35},
                "hoverinfo": "skip",
            }
        )
    return shapes, traces


def _log_axis(chart: Chart, factor: float) -> dict[str, Any]:
    """A log y axis with the PDF's ticks (`log_ticks`, labelled by `tick_labels`)."""
    values = [v * factor for v in _numbers(chart) if v > 0]
    if not values:
        return {"type": "log"}
    ticks = log_ticks(min(values), max(values))
    return {
        "type": "log",
        "tickmode": "array",
        "tickvals": ticks,
        "ticktext": [plotly_text(t) for t in tick_labels(ticks, chart.y_format, log=True)],
    }


def _box_traces(chart: Chart, factor: float) -> list[dict[str, Any]]:
    """One box trace per series; plotly wants flat x/y, so each label repeats per sample."""
    traces: list[dict[str, Any]] = []
    for i, series in enumerate(chart.series):
        colour = PALETTE[i % len(PALETTE)]
        xs: list[str] = []
        ys: list[float | int | None] = []
        for label, samples in zip(series.x, series.values or [], strict=False):
            xs.extend([plotly_text(str(label))] * len(samples))
            ys.extend(_scaled(samples, factor))
        traces.append(
            {
                "type": "box",
                "name": plotly_text(series.name),
                "x": xs,
                "y": ys,
                "boxpoints": "outliers",
                "marker": {"color": colour, "size": 4},
                "line": {"color": colour, "width": 1.5},
            }
        )
    return traces


def _heatmap(chart: Chart) -> tuple[list[dict[str, Any]], dict[str, Any], int]:
    """The heatmap trace, its axes and a height that keeps rows readable."""
    heatmap = chart.heatmap
    if heatmap is None:
        return [], {}, 0
    z = [[_finite(v) for v in row] for row in heatmap.z]
    trace: dict[str, Any] = {
        "type": "heatmap",
        "x": [plotly_text(label) for label in heatmap.x_labels],
        "y": [plotly_text(label) for label in heatmap.y_labels],
        "z": z,
        # the scale the PDF uses too: high and worse dark red, high and better dark blue
        "colorscale": [[p, c] for p, c in heatmap_scale(heatmap.higher_is)],
        "hoverongaps": False,
        "xgap": 1,
        "ygap": 1,
        "colorbar": {"title": {"text": plotly_text(heatmap.z_label), "side": "right"}},
        "hovertemplate": "%{x}, %{y}: %{z:.3~r}<extra></extra>",
    }
    if len(heatmap.x_labels) * len(heatmap.y_labels) <= 120:
        # few cells: print the values, which also carries the chart through greyscale print
        trace["texttemplate"] = "%{z:.3~r}"
        trace["textfont"] = {"size": 11}
    axes = {
        "xaxis": {
            "type": "category",
            "showgrid": False,
            "title": {"text": plotly_text(chart.x_label)},
        },
        "yaxis": {
            "type": "category",
            "showgrid": False,
            "autorange": "reversed",  # first label on top, as in a table
            "title": {"text": plotly_text(chart.y_label)},
        },
    }
    height = min(900, max(300, 160 + 26 * len(heatmap.y_labels)))
    return [trace], axes, height


def _category_count(chart: Chart) -> int:
    return len({str(x) for series in chart.series for x in series.x})


def title_text(title: str, width: int = TITLE_WRAP) -> tuple[str, int]:
    """A chart title as escaped plotly text, broken into lines at word boundaries (plotly
    never wraps a title, and a long one would run under the mode bar), and its line count."""
    lines = textwrap.wrap(title, width=width, break_long_words=True) or [""]
    return "<br>".join(plotly_text(line) for line in lines), len(lines)


def figure(chart: Chart) -> dict[str, Any]:
    """The plotly figure (`{"data": [...], "layout": {...}}`) of one chart, JSON-ready: only
    dicts, lists, str, finite numbers and None; every user string through `plotly_text`."""
    title, title_lines = title_text(chart.title)
    # pixels above the plot taken by the title; the legend sits right under it, in container
    # coordinates, so however many rows it wraps to it pushes the plot down, not into the title
    title_px = 14 + 20 * title_lines
    entries = (
        sum(1 for s in chart.series if s.reference_for is None)
        + (reference_legend(chart.series) is not None)
        + len(chart.bands)
    )
    legend_rows = 0 if chart.kind == "heatmap" else max(1, math.ceil(entries / 3))
    height = 360 + 20 * legend_rows + 20 * (title_lines - 1)
    if chart.kind in ("bar", "stacked_bar") and _category_count(chart) > MANY_CATEGORIES:
        height += MANY_CATEGORIES_EXTRA_PX  # plotly turns their labels upright, under the axes
    layout: dict[str, Any] = {
        "title": {
            "text": title,
            "x": 0,
            "xanchor": "left",
            "xref": "paper",
            "y": 1,
            "yanchor": "top",
            "yref": "container",
            "pad": {"t": 12},
            "font": {"size": 15},
        },
        "font": {"family": FONT_STACK, "size": 12, "color": _TEXT},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "colorway": list(PALETTE),
        "margin": {"l": 64, "r": 24, "t": title_px + 8 + 22 * legend_rows, "b": 56},
        "height": height,
        "showlegend": chart.kind != "heatmap",
        "legend": {
            "orientation": "h",
            "x": 0,
            "xanchor": "left",
            "xref": "paper",
            "y": 1 - title_px / height,
            "yanchor": "top",
            "yref": "container",
            "font": {"size": 12},
        },
        "hovermode": "x unified" if chart.kind == "line" else "closest",
        "hoverlabel": {"font": {"family": FONT_STACK}},
    }
    if chart.kind == "heatmap":
        traces, axes, height = _heatmap(chart)
        layout.update(axes)
        layout["height"] = height + 20 * (title_lines - 1)
        layout["plot_bgcolor"] = _NO_DATA  # a cell without data reads as grey, not as zero
    else:
        factor, y_props = _axis_format(chart.y_format, _numbers(chart))
        categorical = _is_categorical(chart)
        x_factor, layout["xaxis"] = _x_axis(chart, categorical)
        if chart.kind == "box":
            traces = _box_traces(chart, factor)
            layout["boxmode"] = "group"
        else:
            traces = _line_or_bar_traces(chart, factor, x_factor, categorical)
            if chart.kind != "line":
                layout["barmode"] = (
                    "stack"
                    if chart.kind == "stacked_bar"
                    else "overlay"
                    if disjoint(chart.series)
                    else "group"
                )
        shapes, band_traces = _bands(chart, factor)
        if shapes:
            layout["shapes"] = shapes
            traces += band_traces
        layout["yaxis"] = {"title": {"text": plotly_text(chart.y_label)}, **y_props}
        if chart.y_log:
            # plotly leaves values <= 0 out on a log axis
            layout["yaxis"].update(_log_axis(chart, factor))
            layout["yaxis"].pop("tickformat", None)
        elif chart.kind != "line" or chart.y_format in ("seconds", "us", "bytes", "ratio_pct"):
            layout["yaxis"]["rangemode"] = "tozero"
    for name in ("xaxis", "yaxis"):
        axis = layout.get(name)
        if axis is not None:
            axis.setdefault("automargin", True)
            axis.setdefault("gridcolor", _GRID)
            axis.setdefault("zerolinecolor", "#c4c9d0")
            axis.setdefault("linecolor", "#c4c9d0")
    return {"data": traces, "layout": layout}
