"""Static vector charts (SVG) for the PDF report, drawn with matplotlib.

Why this shape:
- `matplotlib.figure.Figure` is used directly, never pyplot: no global figure registry, no
  `matplotlib.use`, so importing this module cannot change the backend of anyone else in the
  process, and nothing is left open after a chart is drawn. Saving as SVG goes through
  matplotlib's own SVG backend (no Agg raster step): the PDF gets vector paths only.
- Print is often greyscale: series differ by marker shape, line style and bar hatch as well as
  by colour, and the heatmap colour scales (`formatting.HEATMAP_SCALES`, shared with the HTML
  charts so a colour means the same in both) have monotonic lightness with a colour bar.
- Legends sit under the axes, never over the data (an ideal line runs corner to corner, where
  matplotlib's "best" place would cover it); category labels that would collide are slanted,
  shortened and, if still too dense, thinned, checked against their measured extents.
- User strings (titles, series names, labels) are plain text: `$` is escaped so matplotlib's
  mathtext never interprets them.
- Tick labels come from `tick_labels` (the fewest decimals that tell ticks apart, 20k for
  20,000), so an axis reads like the tables next to it without "20,000.0".
"""

from __future__ import annotations

import io
import itertools
import logging
import math
import textwrap
import time
from collections.abc import Sequence
from typing import Any

import matplotlib
import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, PathPatch
from matplotlib.path import Path
from matplotlib.text import Text
from matplotlib.ticker import FixedLocator, Formatter, MaxNLocator, NullFormatter, NullLocator
from matplotlib.transforms import Transform
from matplotlib.typing import LineStyleType

from torchscale.report.model import Chart, Series, ValueFormat
from torchscale.report.render.formatting import (
    BAND_COLOUR,
    SEVERITY_COLOUR,
    format_value,
    heatmap_scale,
    is_dark,
    log_ticks,
    reference_label,
    reference_legend,
    scale_colour,
    thin_ticks,
    tick_labels,
)

log = logging.getLogger(__name__)

# width fits an A4 portrait column (17 cm of text width) without scaling the fonts much
FIGSIZE = (6.6, 2.7)
FONT_SIZE = 8.0
# Okabe-Ito (olive for its yellow, unreadable as a thin line on white): safe for colour-blind
# readers, and of distinct lightness for greyscale print
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999933")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
# line hatches only: a dot or circle hatch is ~70 KB of SVG per pattern and slow to lay out
HATCHES = ("", "//", "xx", "\\\\", "--", "||", "++", "///")
LINESTYLES: dict[str, LineStyleType] = {
    "solid": "-",
    "dashed": (0.0, (5.0, 2.5)),
    "dotted": (0.0, (1.2, 1.8)),
}
REFERENCE_GREY = "#555555"
MAX_HEATMAP_X_LABELS = 20
MAX_HEATMAP_Y_LABELS = 16
LABEL_WIDTH = 40
ROTATION = 50  # degrees, for category labels too many or too long to sit level
ROTATED_MAX = 34  # characters of a slanted label
ROTATED_EXTRA_HEIGHT = 1.1  # inches
LABEL_MAX = 90
LABEL_GAP_PX = 8.0  # least room between two level tick labels (at the figure's 100 dpi)
LEGEND_WIDTH_IN = FIGSIZE[0] - 0.4  # what a legend row under the axes may take
LEGEND_CHAR_IN = 0.052  # a legend character at FONT_SIZE - 1, plus the entry's handle below
LEGEND_HANDLE_IN = 0.5


def plain(text: str) -> str:
    """A user string as literal matplotlib text: escape `$` so mathtext never kicks in."""
    # matplotlib counts `$` minus `\$`: with every `$` escaped the count is 0 (plain text), and
    # it then turns each `\$` back into `$`, so the text reads exactly as given
    return text.replace("$", r"\$")


def _label(text: str) -> str:
    """A legend or tick label: wrapped and shortened so one long name cannot squeeze the axes."""
    if len(text) > LABEL_MAX:
        text = text[: LABEL_MAX - 1] + "…"
    return plain("\n".join(textwrap.wrap(text, LABEL_WIDTH)) or text)


class TickFormatter(Formatter):
    """Tick labels by `tick_labels`: decided for all the ticks of an axis at once, so that
    they share their decimals (20,000 and 22,500 -> 20k and 22.5k; 0 and 0.5 -> 0 and 0.5)."""

    def __init__(self, fmt: ValueFormat, log: bool = False) -> None:
        self.fmt = fmt
        self.log = log

    def format_ticks(self, values: Any) -> list[str]:
        return [plain(t) for t in tick_labels(list(values), self.fmt, log=self.log)]

    def __call__(self, x: float, pos: int | None = None) -> str:
        return plain(tick_labels([x], self.fmt, log=self.log)[0])


def _lighten(colour: str, amount: float = 0.45) -> tuple[float, float, float]:
    """A lighter fill so the black hatch on top of it stays visible."""
    rgb = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    return (
        rgb[0] + (1 - rgb[0]) * amount,
        rgb[1] + (1 - rgb[1]) * amount,
        rgb[2] + (1 - rgb[2]) * amount,
    )


def _num(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _categories(series: Sequence[Series]) -> list[str]:
    """The x labels of categorical charts, in order of first appearance across series."""
    seen: dict[str, None] = {}
    for s in series:
        for x in s.x:
            seen.setdefault(str(x), None)
    return list(seen)


def _x_text(x: float | int | str, fmt: ValueFormat) -> str:
    return x if isinstance(x, str) else format_value(x, fmt)


def _numeric_x(series: Sequence[Series]) -> bool:
    return all(not isinstance(x, str) for s in series for x in s.x)


def _no_data(ax: Axes) -> None:
    ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _legend(ax: Axes, handles: list[Artist]) -> None:
    """Under the axes (beneath the x axis title), in as many columns as fit the width: never
    over the data, where an ideal line or a bar would be hidden by it. One entry: none."""
    if len(handles) <= 1:
        return
    longest = max(len(str(h.get_label()).split("\n")[0]) for h in handles)
    columns = int(LEGEND_WIDTH_IN // (longest * LEGEND_CHAR_IN + LEGEND_HANDLE_IN))
    figure = ax.get_figure()
    assert isinstance(figure, Figure)
    figure.legend(
        handles=handles,
        loc="outside lower center",
        ncols=max(1, min(len(handles), columns, 4)),
        frameon=False,
        fontsize=FONT_SIZE - 1,
    )


def _bands(ax: Axes, chart: Chart) -> list[Artist]:
    """The chart's y bands behind the data, and their legend entries."""
    handles: list[Artist] = []
    for band in chart.bands:
        ax.axhspan(band.low, band.high, facecolor=BAND_COLOUR, alpha=0.18, linewidth=0, zorder=1)
        handles.append(
            Patch(facecolor=_lighten(BAND_COLOUR, 0.82), edgecolor="none", label=_label(band.label))
        )
    return handles


def _handle(name: str, colour: str, hatch: str) -> Patch:
    """A legend entry showing both the fill and the hatch of a series."""
    return Patch(
        facecolor=_lighten(colour),
        edgecolor="black",
        hatch=hatch,
        linewidth=0.6,
        label=_label(name),
    )


def _hatch_overlay(path: Path, transform: Transform, hatch: str) -> PathPatch:
    """The hatch drawn as a separate transparent layer over a plain fill: a filled hatch
    pattern shows seams between its tiles in some PDF viewers, an unfilled one does not."""
    return PathPatch(
        path,
        transform=transform,
        facecolor="none",
        edgecolor="black",
        linewidth=0,
        hatch=hatch,
        zorder=3.1,
    )


def _line_colours(series: Sequence[Series]) -> list[str]:
    """A palette colour per measured series; a reference series (its ideal line) takes the
    colour of the series it belongs to, an unattached one (one ideal for all) dark grey."""
    own: dict[str, str] = {}
    for s in series:
        if s.severity is not None:
            own.setdefault(s.name, SEVERITY_COLOUR[s.severity])
        elif s.reference_for is None and s.style == "solid":
            own.setdefault(s.name, PALETTE[len(own) % len(PALETTE)])
    return [
        own.get(s.reference_for, REFERENCE_GREY)
        if s.reference_for is not None
        else own.get(s.name, REFERENCE_GREY)
        for s in series
    ]


def _draw_line(ax: Axes, chart: Chart) -> None:
    numeric = _numeric_x(chart.series)
    log2 = chart.x_log2 and numeric
    categories = [] if numeric else _categories(chart.series)
    ticks: dict[float, float | int | str] = {}
    colours = _line_colours(chart.series)
    marker_index = 0
    for index, s in enumerate(chart.series):
        count = min(len(s.x), len(s.y))
        xs = [float(x) if numeric else float(categories.index(str(x))) for x in s.x[:count]]
        ys = [_num(y) for y in s.y[:count]]
        # log2 needs positive x; points at x <= 0 cannot be drawn on it
        keep = [i for i, x in enumerate(xs) if x > 0 or not log2]
        for i in keep:
            ticks.setdefault(xs[i], s.x[i])  # label a tick with the value as given: 4, not 4.0
        xs, ys = [xs[i] for i in keep], [ys[i] for i in keep]
        reference = s.style != "solid"
        colour = colours[index]
        marker = "None" if reference else MARKERS[marker_index % len(MARKERS)]
        if not reference:
            marker_index += 1
        ax.plot(
            xs,
            ys,
            # references attached to a series share one legend entry, added below
            label="_nolegend_" if s.reference_for is not None else _label(s.name),
            color=colour,
            linestyle=LINESTYLES[s.style],
            linewidth=1.0 if reference else 1.6,
            marker=marker,
            markersize=5,
            markerfacecolor="white" if marker_index % 2 == 0 else colour,
            markeredgecolor=colour,
            zorder=2 if reference else 3,
        )
        if s.low is not None and s.high is not None:
            low = [_num(s.low[i]) if i < len(s.low) else math.nan for i in keep]
            high = [_num(s.high[i]) if i < len(s.high) else math.nan for i in keep]
            below = [
                y - lo if not (math.isnan(y) or math.isnan(lo)) else 0.0
                for y, lo in zip(ys, low, strict=False)
            ]
            above = [
                hi - y if not (math.isnan(y) or math.isnan(hi)) else 0.0
                for y, hi in zip(ys, high, strict=False)
            ]
            ax.errorbar(
                xs,
                ys,
                yerr=[below, above],
                fmt="none",
                ecolor=colour,
                elinewidth=0.9,
                capsize=3,
                zorder=2,
            )
    if chart.y_log:
        _log_y(ax, chart)
    if log2 and ticks:
        ax.set_xscale("log", base=2)
        where = thin_ticks(sorted(ticks))
        ax.set_xticks(where, labels=[plain(_x_text(ticks[x], chart.x_format)) for x in where])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlim(min(ticks) / 1.25, max(ticks) * 1.25)
    elif not numeric:
        ax.set_xticks(range(len(categories)), labels=[_label(c) for c in categories])
    else:
        ax.xaxis.set_major_formatter(TickFormatter(chart.x_format))
        if chart.x_format == "int":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    handles, _ = ax.get_legend_handles_labels()
    attached = reference_legend(chart.series)
    if attached is not None:
        handles.append(
            Line2D(
                [],
                [],
                color=REFERENCE_GREY,
                linestyle=LINESTYLES[attached.style],
                linewidth=1.0,
                label=_label(reference_label(attached)),
            )
        )
    _legend(ax, [*handles, *_bands(ax, chart)])


def _log_y(ax: Axes, chart: Chart) -> None:
    """A log y axis with 1-2-5 ticks labelled like the linear ones (2k, not 2x10^3): the same
    ticks as the HTML chart (`log_ticks`)."""
    ax.set_yscale("log", nonpositive="mask")  # values <= 0 cannot be drawn on it
    values = [
        v
        for s in chart.series
        for group in (s.y, s.low or [], s.high or [])
        for v in group
        if v is not None and math.isfinite(v) and v > 0
    ]
    if values:
        ax.yaxis.set_major_locator(FixedLocator(log_ticks(min(values), max(values))))
    ax.yaxis.set_major_formatter(TickFormatter(chart.y_format, log=True))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _draw_bars(ax: Axes, chart: Chart, stacked: bool) -> None:
    categories = [_x_text(x, chart.x_format) for x in _category_values(chart.series)]
    keys = _category_keys(chart.series)
    positions = np.arange(len(keys), dtype=float)
    count = len(chart.series)
    # series that never share a category (one per verdict) each take the full slot
    alone = stacked or disjoint(chart.series)
    width = 0.7 if alone else 0.8 / max(count, 1)
    bottoms = np.zeros(len(keys))
    handles: list[Artist] = []
    for index, s in enumerate(chart.series):
        heights = np.full(len(keys), np.nan)
        low = np.full(len(keys), np.nan)
        high = np.full(len(keys), np.nan)
        for i, x in enumerate(s.x):
            if i < len(s.y):
                heights[keys.index(_key(x))] = _num(s.y[i])
            if s.low is not None and s.high is not None and i < len(s.low):
                low[keys.index(_key(x))] = _num(s.low[i])
                high[keys.index(_key(x))] = _num(s.high[i])
        offset = 0.0 if alone else (index - (count - 1) / 2) * width
        colour = SEVERITY_COLOUR[s.severity] if s.severity else PALETTE[index % len(PALETTE)]
        hatch = HATCHES[index % len(HATCHES)]
        where = positions + offset
        height = np.nan_to_num(heights) if stacked else heights
        bottom = bottoms if stacked else None
        ax.bar(
            where,
            height,
            width=width,
            bottom=bottom,
            color=_lighten(colour),
            edgecolor="black",
            linewidth=0.6,
            zorder=3,
        )
        if hatch:
            ax.bar(
                where,
                height,
                width=width,
                bottom=bottom,
                facecolor="none",
                edgecolor="black",
                linewidth=0,
                hatch=hatch,
                zorder=3.1,
            )
        handles.append(_handle(s.name, colour, hatch))
        if not stacked and not np.all(np.isnan(low)):
            ax.errorbar(
                where,
                heights,
                yerr=[np.nan_to_num(heights - low), np.nan_to_num(high - heights)],
                fmt="none",
                ecolor="black",
                elinewidth=0.8,
                capsize=2.5,
                zorder=4,
            )
        if stacked:
            bottoms = bottoms + np.nan_to_num(heights)
    if _rotated(categories):
        # one line each, slanted: wrapped labels of 40 bars would overprint each other
        ax.set_xticks(
            positions,
            labels=[plain(_short(c)) for c in categories],
            rotation=ROTATION,
            ha="right",
            rotation_mode="anchor",
            fontsize=FONT_SIZE - 1.5,
        )
    else:
        ax.set_xticks(positions, labels=[_label(c) for c in categories])
    ax.set_xlim(-0.6, len(keys) - 0.4)
    ax.grid(axis="x", visible=False)
    _legend(ax, [*handles, *_bands(ax, chart)])


def disjoint(series: Sequence[Series]) -> bool:
    """Whether no category has a value in more than one series (a bar chart coloured by
    verdict: one series per verdict), so each bar can take its category's full width."""
    seen: set[str] = set()
    for s in series:
        own = {_key(x) for x, y in zip(s.x, s.y, strict=False) if y is not None}
        if own & seen:
            return False
        seen |= own
    return len(series) > 1


def _short(text: str) -> str:
    return text if len(text) <= ROTATED_MAX else text[: ROTATED_MAX - 1] + "…"


def _rotated(categories: Sequence[str]) -> bool:
    """Whether category labels are slanted: many of them, or long ones that would collide."""
    widest = max((len(c) for c in categories), default=0)
    return len(categories) > 12 or widest * len(categories) > 110


def _key(x: float | int | str) -> str:
    return x if isinstance(x, str) else repr(float(x))


def _category_keys(series: Sequence[Series]) -> list[str]:
    return list(dict.fromkeys(_key(x) for s in series for x in s.x))


def _category_values(series: Sequence[Series]) -> list[float | int | str]:
    first: dict[str, float | int | str] = {}
    for s in series:
        for x in s.x:
            first.setdefault(_key(x), x)
    return list(first.values())


def _draw_box(ax: Axes, chart: Chart) -> None:
    series = [s for s in chart.series if s.values]
    keys = _category_keys(series)
    labels = [_x_text(x, chart.x_format) for x in _category_values(series)]
    count = len(series)
    width = 0.7 / max(count, 1)
    handles: list[Artist] = []
    for index, s in enumerate(series):
        values = s.values or []
        pairs = [(keys.index(_key(x)), v) for x, v in zip(s.x, values, strict=False) if v]
        if not pairs:
            continue
        offset = (index - (count - 1) / 2) * width
        colour = PALETTE[index % len(PALETTE)]
        parts: dict[str, Any] = ax.boxplot(
            [v for _, v in pairs],
            positions=[p + offset for p, _ in pairs],
            widths=width * 0.85,
            patch_artist=True,
            manage_ticks=False,
            medianprops={"color": "black", "linewidth": 1.4},
            flierprops={"marker": MARKERS[index % len(MARKERS)], "markersize": 3},
        )
        hatch = HATCHES[index % len(HATCHES)]
        for box in parts["boxes"]:
            box.set_facecolor(_lighten(colour))
            box.set_edgecolor("black")
            if hatch:
                ax.add_patch(_hatch_overlay(box.get_path(), box.get_transform(), hatch))
        handles.append(_handle(s.name, colour, hatch))
    ax.set_xticks(range(len(keys)), labels=[_label(c) for c in labels])
    ax.set_xlim(-0.6, len(keys) - 0.4)
    ax.grid(axis="x", visible=False)
    _legend(ax, handles)


def _draw_heatmap(fig: Figure, ax: Axes, chart: Chart) -> None:
    heatmap = chart.heatmap
    if heatmap is None or not heatmap.z:
        _no_data(ax)
        return
    width = max(len(row) for row in heatmap.z)  # ragged rows: the missing cells have no data
    grid = [[_num(v) for v in row] + [math.nan] * (width - len(row)) for row in heatmap.z]
    z = np.ma.masked_invalid(np.array(grid, dtype=float))
    missing = np.ma.getmaskarray(z)
    if z.size == 0 or missing.all():
        _no_data(ax)
        return
    cmap = _cmap(heatmap.higher_is)
    rows, cols = z.shape
    # pcolormesh, not imshow: one vector quad per cell (imshow embeds a raster image)
    image = ax.pcolormesh(
        np.arange(cols + 1) - 0.5, np.arange(rows + 1) - 0.5, z, cmap=cmap, shading="flat"
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
    colourbar.set_label(plain(heatmap.z_label), fontsize=FONT_SIZE)
    colourbar.ax.yaxis.set_major_formatter(TickFormatter("float"))
    # every label while they fit, else every n-th: 60 step labels would overprint each other
    x_every = math.ceil(cols / MAX_HEATMAP_X_LABELS)
    y_every = math.ceil(rows / MAX_HEATMAP_Y_LABELS)
    x_labels = [*heatmap.x_labels, *[""] * cols][:cols]
    y_labels = [*heatmap.y_labels, *[""] * rows][:rows]
    ax.set_xticks(range(0, cols, x_every), labels=[_label(x) for x in x_labels[::x_every]])
    ax.set_yticks(range(0, rows, y_every), labels=[_label(y) for y in y_labels[::y_every]])
    ax.grid(False)
    if rows * cols <= 150:
        low, high = float(z.min()), float(z.max())
        span = (high - low) or 1.0
        for i in range(rows):
            for j in range(cols):
                if missing[i, j]:
                    continue
                value = float(z[i, j])
                dark = is_dark(scale_colour(heatmap_scale(heatmap.higher_is), (value - low) / span))
                ax.text(
                    j,
                    i,
                    plain(format_value(value, "float")),
                    ha="center",
                    va="center",
                    fontsize=FONT_SIZE - 1,
                    color="white" if dark else "black",
                )
    if missing.any():
        ax.text(
            1.0,
            -0.16,
            "hatched: no data",
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=FONT_SIZE - 1,
        )


def heatmap_cmap(higher_is: str | None) -> LinearSegmentedColormap:
    """The shared colour scale (`heatmap_scale`) as a matplotlib colormap."""
    return LinearSegmentedColormap.from_list(
        f"torchscale-{higher_is or 'neutral'}", list(heatmap_scale(higher_is))
    )


def _cmap(higher_is: str | None) -> Any:
    return heatmap_cmap(higher_is).with_extremes(bad=(1.0, 1.0, 1.0, 0.0))


def _figure(chart: Chart) -> Figure:
    size = FIGSIZE
    if chart.kind in ("bar", "stacked_bar") and _rotated(
        [_x_text(x, chart.x_format) for x in _category_values(chart.series)]
    ):
        size = (FIGSIZE[0], FIGSIZE[1] + ROTATED_EXTRA_HEIGHT)  # room under the axes
    fig = Figure(figsize=size, layout="constrained")
    ax = fig.add_subplot()
    ax.tick_params(labelsize=FONT_SIZE)
    ax.set_xlabel(plain(chart.x_label), fontsize=FONT_SIZE)
    ax.set_ylabel(plain(chart.y_label), fontsize=FONT_SIZE)
    ax.spines[["top", "right"]].set_visible(False)
    if chart.kind != "heatmap":
        ax.grid(True, color="#dddddd", linewidth=0.6, zorder=0)
        ax.set_axisbelow(True)
        ax.yaxis.set_major_formatter(TickFormatter(chart.y_format))
        if chart.y_format == "int":  # no 0.5 ticks reading "0" and "1"
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    has_data = any(s.y or s.values for s in chart.series)
    if chart.kind == "heatmap":
        _draw_heatmap(fig, ax, chart)
    elif not has_data:
        _no_data(ax)
    elif chart.kind == "line":
        _draw_line(ax, chart)
    elif chart.kind == "bar":
        _draw_bars(ax, chart, stacked=False)
        if chart.y_log:
            _log_y(ax, chart)
    elif chart.kind == "stacked_bar":
        _draw_bars(ax, chart, stacked=True)
    elif chart.kind == "box":
        _draw_box(ax, chart)
    if chart.kind != "heatmap" or chart.heatmap is not None:
        fit_x_labels(fig, ax)
    return fig


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


def fit_x_labels(fig: Figure, ax: Axes) -> None:
    """Category labels that would overprint each other, measured after layout: wrapped to
    their slot's width on up to three lines where that parts them, else slanted and shortened
    to one line; if the slanted ones still lie closer than a line's height, only every n-th is
    kept. Numeric axes place their own few ticks and are left alone."""
    if ax.xaxis.get_scale() != "linear" or isinstance(ax.xaxis.get_major_locator(), MaxNLocator):
        return
    ticks = _visible_ticks(ax)
    if len(ticks) < 2:
        return
    fig.draw_without_rendering()
    slanted = any(label.get_rotation() != 0 for label in _labels(ax))
    if not slanted:
        if _apart(ax):
            return
        # first try the labels on up to three lines, each as wide as a category's slot
        chars = int(_pitch_px(fig, ax, ticks) / (FONT_SIZE / 72 * fig.dpi * 0.62))
        texts = [text.replace("\n", " ") for _, text in ticks]
        wrapped = [textwrap.wrap(text, max(chars, 4)) for text in texts]
        if chars >= 6 and all(len(lines) <= 3 for lines in wrapped):
            ax.set_xticks([x for x, _ in ticks], labels=["\n".join(w) for w in wrapped])
            fig.draw_without_rendering()
            if _apart(ax):
                return
        width, height = fig.get_size_inches()
        fig.set_size_inches(width, height + ROTATED_EXTRA_HEIGHT)  # room under the axes
    # slanted labels are parallel strips: apart when the distance between neighbours across
    # the slant is at least a line's height
    pitch = _pitch_px(fig, ax, ticks)
    line_px = (FONT_SIZE - 1.5) / 72 * fig.dpi * 1.3
    across = pitch * math.sin(math.radians(ROTATION))
    every = 1 if across >= line_px else math.ceil(line_px / max(across, 1e-6))
    kept = ticks[::every]
    ax.set_xticks(
        [x for x, _ in kept],
        labels=[plain(_short(text.replace("\n", " ").replace("\\$", "$"))) for _, text in kept],
        rotation=ROTATION,
        ha="right",
        rotation_mode="anchor",
        fontsize=FONT_SIZE - 1.5,
    )


def _apart(ax: Axes) -> bool:
    """Whether level x labels leave at least LABEL_GAP_PX between neighbours."""
    boxes = sorted((label.get_window_extent() for label in _labels(ax)), key=lambda b: b.x0)
    return all(b.x0 - a.x1 >= LABEL_GAP_PX for a, b in itertools.pairwise(boxes))


def _pitch_px(fig: Figure, ax: Axes, ticks: list[tuple[float, str]]) -> float:
    """The least distance between neighbouring ticks, in pixels, after layout."""
    fig.draw_without_rendering()
    where = sorted(ax.transData.transform([(x, 0.0) for x, _ in ticks])[:, 0])
    return float(min(b - a for a, b in itertools.pairwise(where)))


def chart_svg(chart: Chart) -> str:
    """One chart as a standalone SVG document (vector paths only; no raster image)."""
    start = time.perf_counter()
    fig = _figure(chart)
    try:
        buffer = io.StringIO()
        # text as SVG text, not outlines: WeasyPrint lays a chart out ~40 % faster, and the
        # PDF's chart labels can be searched and copied
        with matplotlib.rc_context({"svg.fonttype": "none"}):
            fig.savefig(buffer, format="svg", metadata={"Date": None})
    finally:
        fig.clear()
    log.debug("chart %s (%s): %.3f s", chart.id, chart.kind, time.perf_counter() - start)
    return buffer.getvalue()
