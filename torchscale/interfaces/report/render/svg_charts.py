"""Static vector charts (SVG) for the PDF report: the chart model's `Plot` drawn with matplotlib.

Why this shape:
- Nothing here decides what a chart looks like: series, colours, markers, hatches, axis
  ranges, ticks and their labels, legend entries and columns come from `report.charts.plot`,
  and are the HTML's too. What happens here is matplotlib's vocabulary and the page's
  geometry: inches, font sizes, and where category labels fit (measured after layout).
- `matplotlib.figure.Figure` is used directly, never pyplot: no global figure registry, no
  `matplotlib.use`, so importing this module cannot change the backend of anyone else in the
  process, and nothing is left open after a chart is drawn. Saving as SVG goes through
  matplotlib's own SVG backend (no Agg raster step): the PDF gets vector paths only.
- The plot area has a fixed height; the figure grows by the legend's rows (under the axes,
  never over the data) and by slanted labels, so a legend can never squeeze the plot away.
- Few SVG nodes, because WeasyPrint draws every node of every chart in Python: text as SVG
  text (`svg.fonttype: none`, not glyph outlines), no tick marks (the grid says it), grid
  lines on y only, an interval as one path per series (not a line and two caps per point).
- User strings (titles, series names, labels) are plain text: `$` is escaped so matplotlib's
  mathtext never interprets them.
"""

from __future__ import annotations

import contextlib
import html
import io
import itertools
import logging
import math
import textwrap
import time
from collections.abc import Sequence
from typing import Any, TypeVar

import matplotlib
import numpy as np
from matplotlib import cbook
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colors import LinearSegmentedColormap, to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, PathPatch
from matplotlib.path import Path
from matplotlib.text import Text
from matplotlib.ticker import FixedLocator, NullLocator
from matplotlib.typing import LineStyleType, RcKeyType

from torchscale.interfaces.formatting import heatmap_scale, is_dark, scale_colour
from torchscale.interfaces.report.charts import palette
from torchscale.interfaces.report.charts.axes import Axis
from torchscale.interfaces.report.charts.plot import (
    GROUP_WIDTH,
    INTERVAL_BAND_ALPHA,
    LegendEntry,
    Plot,
    PlotSeries,
    band_runs,
    bar_intervals,
    group_offset,
    plot,
)
from torchscale.interfaces.report.model import Chart

log = logging.getLogger(__name__)
T = TypeVar("T")

FIG_WIDTH_IN = 6.6  # fits an A4 portrait column (17 cm of text width) without scaling fonts
PLOT_HEIGHT_IN = 2.0  # the axes' own height, the same for every chart
# measured with constrained layout at these font sizes: level tick labels, the x axis title
# and the margins around the axes; a legend row at FONT_SIZE - 1 and the gap above a legend
DECORATION_IN = 0.40
LEGEND_ROW_IN = 0.152
LEGEND_GAP_IN = 0.12
FONT_SIZE = 8.0
SUBTITLE_LINE_IN = 0.13  # a line of the text under the title, at FONT_SIZE - 1
SUBTITLE_WRAP = 118  # characters of such a line across the figure
SUBTITLE_COLOUR = "#555555"
MARKERS = {
    "circle": "o",
    "square": "s",
    "triangle-up": "^",
    "diamond": "D",
    "triangle-down": "v",
    "cross": "P",
    "x": "X",
    "star": "*",
}
HATCHES = {"": "", "/": "//", "x": "xx", "\\": "\\\\", "-": "--", "|": "||", "+": "++"}
LINESTYLES: dict[str, LineStyleType] = {
    "solid": "-",
    "dashed": (0.0, (5.0, 2.5)),
    "dotted": (0.0, (1.2, 1.8)),
}
RECTANGLE_CODES = (Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY)
BOX_ALPHA = 0.35  # box fill, as the HTML's
BAND_ZORDER = 1.5  # a series' interval band: over the y bands (1), under every line (2, 3)
HEATMAP_HEIGHT_IN = 0.26  # per row, within PLOT_HEIGHT_IN and three times that
ROTATION = 50  # degrees, for category labels too many or too long to sit level
# the most the y axis' labels and title can take of the figure's width
Y_DECORATION_MAX_IN = 1.3
ROTATED_EXTRA_HEIGHT = 1.1  # inches
LABEL_GAP_PX = 8.0  # least room between two level tick labels (at the figure's 100 dpi)
SVG_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "path.simplify": True,
    "hatch.linewidth": 0.8,
}


def plain(text: str) -> str:
    """A user string as literal matplotlib text: escape `$` so mathtext never kicks in."""
    # matplotlib counts `$` minus `\$`: with every `$` escaped the count is 0 (plain text), and
    # it then turns each `\$` back into `$`, so the text reads exactly as given
    return text.replace("$", r"\$")


def _no_data(ax: Axes) -> None:
    ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


# ------------------------------------------------------------------ axes


def _apply_axis(ax: Axes, axis: Axis, which: str) -> None:
    """The model's axis exactly: scale, range, ticks and their labels."""
    target = ax.xaxis if which == "x" else ax.yaxis
    if axis.scale == "log":
        (ax.set_xscale if which == "x" else ax.set_yscale)("log", nonpositive="mask")
        target.set_minor_locator(NullLocator())
    if axis.range is not None:
        (ax.set_xlim if which == "x" else ax.set_ylim)(*axis.range)
    target.set_major_locator(FixedLocator(list(axis.ticks)))
    target.set_ticks(list(axis.ticks), labels=[plain(t) for t in axis.tick_text])
    target.set_minor_locator(NullLocator())


# ------------------------------------------------------------------ series


def series_id(index: int, part: str = "") -> str:
    """The SVG id of a series' artist ('series-0', 'series-0-interval'): tests and readers
    of the SVG find each series' drawing by it."""
    return f"series-{index}" + (f"-{part}" if part else "")


def _band(ax: Axes, series: PlotSeries, index: int) -> None:
    """A band series' interval as one filled shape (a polygon per stretch: fill_between
    splits at the NaN between them), light in the series' colour, under every line."""
    xs: list[float] = []
    lows: list[float] = []
    highs: list[float] = []
    for run in band_runs(series):
        if xs:
            xs.append(math.nan)
            lows.append(math.nan)
            highs.append(math.nan)
        xs += [x for x, _, _ in run]
        lows += [low for _, low, _ in run]
        highs += [high for _, _, high in run]
    if xs:
        ax.fill_between(
            xs,
            lows,
            highs,
            facecolor=to_rgba(series.colour, INTERVAL_BAND_ALPHA),
            edgecolor="none",
            linewidth=0,
            zorder=BAND_ZORDER,
            gid=series_id(index, "interval"),
        )


def _interval(ax: Axes, xs: Any, series: PlotSeries, zorder: float, index: int) -> None:
    """The series' intervals as one path (segments split by NaN): one SVG node, not three
    per point. A band series' as its band (`_band`), and bars only where a point stands
    alone in it."""
    part = "interval"
    if series.band:
        _band(ax, series, index)
        series = bar_intervals(series)
        part = "interval-lone"  # the band has the series' "interval" id
    if series.low is None or series.high is None:
        return
    path_x: list[float] = []
    path_y: list[float] = []
    for x, low, high in zip(xs, series.low, series.high, strict=True):
        if low is None or high is None:
            continue
        path_x += [x, x, math.nan]
        path_y += [low, high, math.nan]
    if path_x:
        ax.plot(
            path_x,
            path_y,
            color=series.interval_colour,
            linewidth=1.0,
            solid_capstyle="butt",
            zorder=zorder,
            gid=series_id(index, part),
        )


def _draw_line(ax: Axes, p: Plot) -> None:
    for index, series in enumerate(p.series):
        ys = [math.nan if y is None else y for y in series.y]
        ax.plot(
            series.x,
            ys,
            color=series.colour,
            linestyle=LINESTYLES[series.dash],
            linewidth=1.0 if series.reference else 1.6,
            marker=MARKERS[series.marker] if series.marker else "None",
            markersize=4.5,
            markeredgewidth=0.0,
            zorder=2 if series.reference else 3,
            gid=series_id(index),
        )
        _interval(ax, series.x, series, zorder=2.5, index=index)


def _draw_dots(ax: Axes, p: Plot) -> None:
    """A bar chart on a log axis: a dot per value (already set apart in its category by
    the model), with its interval."""
    for index, series in enumerate(p.series):
        ys = [math.nan if y is None else y for y in series.y]
        ax.plot(
            series.x,
            ys,
            color=series.colour,
            linestyle="None",
            marker=MARKERS[series.marker or "circle"],
            markersize=5.0,
            markeredgewidth=0.0,
            zorder=3,
            gid=series_id(index),
        )
        _interval(ax, series.x, series, zorder=2.5, index=index)


def _clip_marks(ax: Axes, p: Plot) -> None:
    """A triangle where an interval was cut at the axis' edge, over the frame."""
    for index, series in enumerate(p.series):
        for up in (True, False):
            marks = [c for c in series.clips if c.up == up]
            if not marks:
                continue
            ax.plot(
                [c.x for c in marks],
                [c.y for c in marks],
                color=series.interval_colour,
                linestyle="None",
                marker="^" if up else "v",
                markersize=5.0,
                markeredgewidth=0.0,
                clip_on=False,
                zorder=5,
                gid=series_id(index, "clip-up" if up else "clip-down"),
            )


def _subtitle(ax: Axes, p: Plot) -> None:
    """The lines under the title (the title itself is the page's): what is not drawn, what
    was cut at the axis' edge."""
    lines = subtitle_lines(p)
    if lines:
        ax.set_title(
            plain("\n".join(lines)),
            loc="left",
            fontsize=FONT_SIZE - 1,
            color=SUBTITLE_COLOUR,
            pad=4,
        )


def subtitle_lines(p: Plot) -> list[str]:
    return [w for line in p.subtitle for w in textwrap.wrap(line, SUBTITLE_WRAP) or [""]]


def _rectangles(boxes: list[tuple[float, float, float, float]]) -> Path:
    """Rectangles (x0, x1, y0, y1) as one compound path: one SVG node for all of them."""
    vertices = [
        corner
        for x0, x1, y0, y1 in boxes
        for corner in ((x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0))
    ]
    codes = np.tile(np.array(RECTANGLE_CODES, dtype=Path.code_type), len(boxes))
    return Path(vertices, codes)


def _fill(
    ax: Axes, path: Path, colour: Any, edge: str, hatch: str, zorder: float, index: int
) -> None:
    """A series' shapes in one fill; its hatch as a separate transparent layer over it (a
    filled hatch pattern shows seams between its tiles in some PDF viewers, an unfilled one
    does not)."""
    ax.add_patch(
        PathPatch(
            path,
            facecolor=colour,
            edgecolor=edge,
            linewidth=0.6,
            zorder=zorder,
            gid=series_id(index),
        )
    )
    if hatch:
        ax.add_patch(
            PathPatch(
                path,
                facecolor="none",
                edgecolor="none",
                hatchcolor="white",
                linewidth=0,
                hatch=HATCHES[hatch],
                zorder=zorder + 0.1,
                gid=series_id(index, "hatch"),
            )
        )


def _draw_bars(ax: Axes, p: Plot) -> None:
    """Each series' bars as one shape (and one hatch layer): a 40-bar series is two SVG
    nodes, not eighty."""
    count = len(p.series)
    alone = p.bar_mode in ("stack", "overlay") or count == 1
    width = 0.7 if alone else GROUP_WIDTH / max(count, 1)
    tops: dict[float, float] = {}
    bottoms: dict[float, float] = {}
    for index, series in enumerate(p.series):
        offset = group_offset(index, count, p.bar_mode)
        boxes = []
        for x, y in zip(series.x, series.y, strict=True):
            if y is None:
                continue
            start = 0.0  # a bar's length is its value: never on a log axis (the model's dots)
            if p.bar_mode == "stack":
                stack = tops if y >= 0 else bottoms
                start = stack.get(x, 0.0)
                stack[x] = start + y
            boxes.append((x + offset - width / 2, x + offset + width / 2, start, start + y))
        if boxes:
            _fill(ax, _rectangles(boxes), series.colour, "white", series.hatch, 3, index)
        if p.bar_mode != "stack":
            _interval(ax, [x + offset for x in series.x], series, zorder=4, index=index)


def _draw_box(ax: Axes, p: Plot) -> None:
    """Boxes from the quartiles, whiskers to the farthest sample within 1.5 IQR, and the
    samples beyond as points (plotly's rule for the HTML's boxes): per series one shape for
    the boxes, one path for the whiskers, one for the medians, one for the outliers."""
    count = len(p.series)
    width = 0.7 / max(count, 1)
    for index, series in enumerate(p.series):
        offset = (index - (count - 1) / 2) * width
        boxes: list[tuple[float, float, float, float]] = []
        whiskers: list[float] = []
        whisker_y: list[float] = []
        medians: list[float] = []
        median_y: list[float] = []
        fliers_x: list[float] = []
        fliers_y: list[float] = []
        for x, samples in zip(series.x, series.values or (), strict=True):
            if not samples:
                continue
            (stats,) = cbook.boxplot_stats(np.asarray(samples, dtype=float), whis=1.5)
            middle = x + offset
            half = width * 0.85 / 2
            boxes.append((middle - half, middle + half, stats["q1"], stats["q3"]))
            whiskers += [middle, middle, math.nan, middle, middle, math.nan]
            whisker_y += [stats["whislo"], stats["q1"], math.nan, stats["q3"], stats["whishi"]]
            whisker_y.append(math.nan)
            medians += [middle - half, middle + half, math.nan]
            median_y += [stats["med"], stats["med"], math.nan]
            fliers_x += [middle] * len(stats["fliers"])
            fliers_y += [float(v) for v in stats["fliers"]]
        if not boxes:
            continue
        fill = to_rgba(series.colour, BOX_ALPHA)
        _fill(ax, _rectangles(boxes), fill, series.colour, "", 3, index)
        ax.plot(
            whiskers,
            whisker_y,
            color=series.colour,
            linewidth=1.0,
            zorder=3,
            gid=series_id(index, "whiskers"),
        )
        ax.plot(
            medians,
            median_y,
            color=series.colour,
            linewidth=1.6,
            zorder=3.2,
            gid=series_id(index, "medians"),
        )
        if fliers_x:
            ax.plot(
                fliers_x,
                fliers_y,
                linestyle="None",
                marker="o",
                markersize=2.5,
                markerfacecolor=series.colour,
                markeredgewidth=0.0,
                zorder=3,
                gid=series_id(index, "outliers"),
            )


def _legend(fig: Figure, p: Plot) -> None:
    """Under the axes, in the model's columns: never over the data."""
    if not p.legend:
        return
    fig.legend(
        handles=[_handle(entry) for entry in row_major(p.legend, p.legend_columns)],
        loc="outside lower center",
        ncols=p.legend_columns,
        frameon=False,
        fontsize=FONT_SIZE - 1,
        handlelength=2.2,
        columnspacing=1.2,
    )


def row_major(entries: Sequence[T], columns: int) -> list[T]:
    """`entries` in the order that makes matplotlib, which fills a legend column by column,
    show them row by row, as plotly's legend reads: the same order in both formats."""
    rows = math.ceil(len(entries) / columns) if entries else 0
    return [
        entries[row * columns + column]
        for column in range(columns)
        for row in range(rows)
        if row * columns + column < len(entries)
    ]


def _handle(entry: LegendEntry) -> Artist:
    label = plain(entry.label)
    if entry.kind == "marker":
        return Line2D(
            [],
            [],
            color=entry.colour,
            linestyle="None",
            marker=MARKERS[entry.marker or "circle"],
            markersize=4.5,
            markeredgewidth=0.0,
            label=label,
        )
    if entry.kind == "line":
        return Line2D(
            [],
            [],
            color=entry.colour,
            linestyle=LINESTYLES[entry.dash],
            linewidth=1.4,
            marker=MARKERS[entry.marker] if entry.marker else "None",
            markersize=4.5,
            markeredgewidth=0.0,
            label=label,
        )
    if entry.kind == "band":
        return Patch(facecolor=to_rgba(entry.colour, 0.35), edgecolor="none", label=label)
    return Patch(
        facecolor=entry.colour,
        edgecolor="none",
        hatchcolor="white",
        hatch=HATCHES[entry.hatch],
        label=label,
    )


def _bands(ax: Axes, p: Plot) -> None:
    for band in p.bands:
        ax.axhspan(band.low, band.high, facecolor=band.colour, alpha=0.18, linewidth=0, zorder=1)


# ------------------------------------------------------------------ heatmap


def heatmap_cmap(higher_is: str | None) -> LinearSegmentedColormap:
    """The shared colour scale (`heatmap_scale`) as a matplotlib colormap."""
    return LinearSegmentedColormap.from_list(
        f"torchscale-{higher_is or 'neutral'}", list(heatmap_scale(higher_is))
    )


def _draw_heatmap(fig: Figure, ax: Axes, p: Plot) -> None:
    heat = p.heatmap
    if heat is None or heat.z_low is None or heat.z_high is None:
        _no_data(ax)
        return
    z = np.ma.masked_invalid(
        np.array([[math.nan if v is None else v for v in row] for row in heat.z], dtype=float)
    )
    rows, cols = z.shape
    cmap = LinearSegmentedColormap.from_list("torchscale-heat", list(heat.stops)).with_extremes(
        bad=(1.0, 1.0, 1.0, 0.0)
    )
    # pcolormesh, not imshow: one vector quad per cell (imshow embeds a raster image)
    image = ax.pcolormesh(
        np.arange(cols + 1) - 0.5,
        np.arange(rows + 1) - 0.5,
        z,
        cmap=cmap,
        vmin=heat.z_low,
        vmax=heat.z_high,
        shading="flat",
    )
    ax.set_xlim(-0.5, cols - 0.5)
    ax.set_ylim(rows - 0.5, -0.5)  # first row on top, as the table of z reads
    # masked (no data) cells show the hatched axes background through the transparent colour
    ax.patch.set_facecolor("none")
    ax.patch.set_hatch("xx")
    ax.patch.set_edgecolor("#999999")
    colourbar = fig.colorbar(image, ax=ax, pad=0.02)
    if colourbar.solids is not None:
        colourbar.solids.set_rasterized(False)  # matplotlib rasterizes long colour bars
    colourbar.set_label(plain(heat.z_label), fontsize=FONT_SIZE)
    colourbar.ax.tick_params(labelsize=FONT_SIZE - 1)
    ax.set_xticks(
        range(0, cols, heat.x_every), labels=[plain(x) for x in heat.x_labels[:: heat.x_every]]
    )
    ax.set_yticks(
        range(0, rows, heat.y_every), labels=[plain(y) for y in heat.y_labels[:: heat.y_every]]
    )
    ax.grid(False)
    if heat.values is not None:
        span = (heat.z_high - heat.z_low) or 1.0
        for i, j in itertools.product(range(rows), range(cols)):
            value = heat.z[i][j]
            if value is None:
                continue
            dark = is_dark(scale_colour(heat.stops, (value - heat.z_low) / span))
            ax.text(
                j,
                i,
                plain(heat.values[i][j]),
                ha="center",
                va="center",
                fontsize=FONT_SIZE - 1,
                color="white" if dark else "black",
            )
    if heat.missing:
        ax.text(
            1.0,
            -0.16,
            "hatched: no data",
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=FONT_SIZE - 1,
        )


# ------------------------------------------------------------------ the figure


def figure_height(p: Plot) -> float:
    """Inches: the fixed plot height plus what is drawn around it."""
    height = PLOT_HEIGHT_IN
    if p.kind == "heatmap" and p.heatmap is not None:
        rows = len(p.heatmap.y_labels)
        height = min(3 * PLOT_HEIGHT_IN, max(PLOT_HEIGHT_IN, HEATMAP_HEIGHT_IN * rows))
    if p.legend_rows:
        height += LEGEND_GAP_IN + LEGEND_ROW_IN * p.legend_rows
    return height + DECORATION_IN + SUBTITLE_LINE_IN * len(subtitle_lines(p))


def _figure(chart: Chart | Plot) -> Figure:
    p = chart if isinstance(chart, Plot) else plot(chart)
    fig = Figure(figsize=(FIG_WIDTH_IN, figure_height(p)), layout="constrained")
    ax = fig.add_subplot()
    # no tick marks (the grid says where a tick is) and no white background rectangles: SVG
    # nodes WeasyPrint would draw for nothing
    ax.tick_params(labelsize=FONT_SIZE, bottom=False, left=False, pad=3)
    fig.patch.set_visible(False)
    if p.kind != "heatmap":  # a heatmap's axes background shows its missing cells
        ax.patch.set_visible(False)
    ax.set_xlabel(plain(p.x.title), fontsize=FONT_SIZE)
    ax.set_ylabel(plain(p.y.title), fontsize=FONT_SIZE)
    ax.spines[["top", "right"]].set_visible(False)
    for spine in ax.spines.values():
        spine.set_color(palette.AXIS_COLOUR)
    if p.kind == "heatmap":
        _draw_heatmap(fig, ax, p)
        if p.heatmap is not None and p.heatmap.z_low is not None:
            fit_x_labels(fig, ax, slanted=False)
        return fig
    if p.empty:
        _no_data(ax)
        return fig
    ax.grid(axis="y", color=palette.GRID_COLOUR, linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)
    _bands(ax, p)
    if p.kind == "line":
        _draw_line(ax, p)
    elif p.kind in ("bar", "stacked_bar"):
        _draw_bars(ax, p)
    elif p.kind == "box":
        _draw_box(ax, p)
    elif p.kind == "dot":
        _draw_dots(ax, p)
    _clip_marks(ax, p)
    _subtitle(ax, p)
    _apply_axis(ax, p.x, "x")
    _apply_axis(ax, p.y, "y")
    _legend(fig, p)
    if p.x.scale == "category":
        fit_x_labels(fig, ax, p.x.slanted)
    return fig


# ------------------------------------------------------------------ category labels


def _visible_ticks(ax: Axes) -> list[tuple[float, str]]:
    """(position, label text) of the x ticks inside the axes that carry a label."""
    low, high = sorted(ax.get_xlim())
    return [
        (float(tick), label.get_text())
        for tick, label in zip(ax.get_xticks(), ax.get_xticklabels(), strict=False)
        if label.get_text() and low <= tick <= high
    ]


def _labels(ax: Axes) -> list[Text]:
    return [label for label in ax.get_xticklabels() if label.get_visible() and label.get_text()]


def fit_x_labels(fig: Figure, ax: Axes, slanted: bool) -> None:
    """Category labels that must not overprint each other. Slanted ones (the model's choice:
    many or long labels) are set at ROTATION degrees straight away, every n-th where the
    slots are narrower than a line's height across the slant (from the planned axes width:
    no layout pass). Level ones are measured after layout; where they collide they are
    wrapped to their slot's width on up to three lines, else slanted after all."""
    ticks = _visible_ticks(ax)
    if len(ticks) < 2:
        return
    if not slanted:
        fig.draw_without_rendering()
        if _apart(ax):
            _freeze(fig)
            return
        # first try the labels on up to three lines, each as wide as a category's slot
        chars = int(_pitch_px(fig, ax, ticks) / (FONT_SIZE / 72 * fig.dpi * 0.62))
        texts = [text.replace("\n", " ") for _, text in ticks]
        wrapped = [textwrap.wrap(text, max(chars, 4)) for text in texts]
        if chars >= 6 and all(len(lines) <= 3 for lines in wrapped):
            ax.set_xticks([x for x, _ in ticks], labels=["\n".join(w) for w in wrapped])
            fig.draw_without_rendering()
            if _apart(ax):
                _freeze(fig)
                return
    _slant(fig, ax, ticks)


def _slant(fig: Figure, ax: Axes, ticks: list[tuple[float, str]]) -> None:
    """Slanted labels are parallel strips: apart when the distance between neighbours across
    the slant is at least a line's height. The pitch is taken from the narrowest the axes can
    be (the figure less the widest y labels), so the thinning errs towards fewer labels."""
    width, height = fig.get_size_inches()
    fig.set_size_inches(width, height + ROTATED_EXTRA_HEIGHT)  # room under the axes
    low, high = sorted(ax.get_xlim())
    pitch = (width - Y_DECORATION_MAX_IN) * fig.dpi / max(high - low, 1e-9)
    line_px = (FONT_SIZE - 1.5) / 72 * fig.dpi * 1.3
    across = pitch * math.sin(math.radians(ROTATION))
    every = 1 if across >= line_px else math.ceil(line_px / max(across, 1e-6))
    kept = ticks[::every]
    ax.set_xticks(
        [x for x, _ in kept],
        labels=[text.replace("\n", " ") for _, text in kept],
        rotation=ROTATION,
        ha="right",
        rotation_mode="anchor",
        fontsize=FONT_SIZE - 1.5,
    )


def _freeze(fig: Figure) -> None:
    """Keep the layout just computed: saving the figure need not lay it out again."""
    with contextlib.suppress(RuntimeError):  # an engine a colour bar depends on stays
        fig.set_layout_engine("none")


def _apart(ax: Axes) -> bool:
    """Whether level x labels leave at least LABEL_GAP_PX between neighbours."""
    boxes = sorted((label.get_window_extent() for label in _labels(ax)), key=lambda b: b.x0)
    return all(b.x0 - a.x1 >= LABEL_GAP_PX for a, b in itertools.pairwise(boxes))


def _pitch_px(fig: Figure, ax: Axes, ticks: list[tuple[float, str]]) -> float:
    """The least distance between neighbouring ticks, in pixels, after layout."""
    fig.draw_without_rendering()
    y = float(np.mean(ax.get_ylim()))  # any y on the axes: 0 is not on a log axis
    where = sorted(ax.transData.transform([(x, y) for x, _ in ticks])[:, 0])
    return float(min(b - a for a, b in itertools.pairwise(where)))


def hover_titles(svg: str, p: Plot) -> str:
    """`svg` with a `<title>` in each series' group, its points' hover text one per line (and
    in each cut-interval mark's, the full intervals): a browser shows it on hover where the
    SVG is embedded in a page; a PDF ignores it."""
    for index, series in enumerate(p.series):
        texts = [t for t in series.text if t] or [series.name]
        parts = {
            series_id(index): texts,
            series_id(index, "clip-up"): [c.text for c in series.clips if c.up],
            series_id(index, "clip-down"): [c.text for c in series.clips if not c.up],
        }
        for gid, lines in parts.items():
            if not lines:
                continue
            opening = f'<g id="{gid}">'
            title = f"<title>{html.escape(chr(10).join(lines), quote=False)}</title>"
            svg = svg.replace(opening, opening + title, 1)
    return svg


def chart_svg(chart: Chart | Plot) -> str:
    """One chart as a standalone SVG document (vector paths only; no raster image), with
    hover titles on its series (`hover_titles`)."""
    start = time.perf_counter()
    p = chart if isinstance(chart, Plot) else plot(chart)
    with matplotlib.rc_context(SVG_RC):
        fig = _figure(p)
        try:
            buffer = io.StringIO()
            # text as SVG text, not outlines: WeasyPrint lays a chart out ~40 % faster, and
            # the PDF's chart labels can be searched and copied
            fig.savefig(buffer, format="svg", metadata={"Date": None})
        finally:
            fig.clear()
    log.debug("chart %s (%s): %.3f s", chart.id, chart.kind, time.perf_counter() - start)
    return hover_titles(buffer.getvalue(), p)
