"""`plot(chart) -> Plot`: a report chart as both back-ends draw it. Everything a reader compares
between the HTML and the PDF is decided here, once (docs/reporting.md, "Formats": the charts and
their legend); the back-ends decide only pixel sizes, fonts and where a slanted label fits.

A chart cannot mislead by its drawing:
- an interval longer than the axis allows (`axes.clip_window`) is drawn to the axis' edge and
  marked there with a triangle (`PlotSeries.clips`) whose hover has the full interval;
- a bar's length is its value, so bars stand on a linear axis from zero; a bar chart that
  needs a log axis is drawn as dots (on a log axis a bar's length misstates the ratio);
- a series with nothing to draw is named in the chart (`Chart.absent`);
- a forecast's interval (`Series.interval == "band"`) is a shaded band along its line
  (`band_runs`); a point with no neighbour to span to keeps its bar (`bar_intervals`), as a
  one-point band has no width."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from torchscale.contracts.wording.spell import format_value, plain_times
from torchscale.interfaces.formatting import (
    BAND_COLOUR,
    SEVERITY_COLOUR,
    heatmap_scale,
    reference_label,
    reference_legend,
)
from torchscale.interfaces.report.charts import palette
from torchscale.interfaces.report.charts.axes import (
    CLIP_SPAN,
    Axis,
    category_axis,
    clip_window,
    linear_axis,
    log_axis,
    measured_log_axis,
    short,
    zero_based,
)
from torchscale.interfaces.report.charts.data import (
    categories,
    category_key,
    disjoint,
    finite_values,
)
from torchscale.interfaces.report.charts.limits import cap_chart
from torchscale.interfaces.report.charts.palette import Dash, Hatch, Marker
from torchscale.interfaces.report.model import Chart, Series, ValueFormat
from torchscale.offline.analysis.numbers import finite

# "dot": a bar chart on a log axis, drawn as dots (a bar's length means nothing there)
Kind = Literal["line", "bar", "stacked_bar", "box", "heatmap", "dot"]
BarMode = Literal["group", "overlay", "stack"]
EntryKind = Literal["line", "patch", "band", "marker"]
LEGEND_WIDTH_CHARS = 118  # what one legend row holds, in characters of the legend's font
LEGEND_HANDLE_CHARS = 8  # an entry's symbol and the gap after it
MAX_LEGEND_COLUMNS = 4
HEATMAP_VALUES_MAX = 120  # cells up to which each heatmap cell prints its value
HEATMAP_X_LABELS = 20
HEATMAP_Y_LABELS = 16
GROUP_WIDTH = 0.8  # of a category's slot, taken by its side-by-side bars or dots (as plotly's)
CLIP_UP = "▲"
CLIP_DOWN = "▼"
INTERVAL_BAND_ALPHA = 0.2  # a band's fill: its line, the grid and other series show through


@dataclass(frozen=True)
class Clip:
    """Where an interval was cut at the axis' edge: drawn as a triangle at (x, y), pointing
    `up` (the interval goes on above) or down; `text` is the hover, with the full interval."""

    x: float
    y: float
    up: bool
    text: str


@dataclass(frozen=True)
class PlotSeries:
    """One drawn series. `x` is numeric (raw units) on a value axis and the category position
    (0, 1, ...) on a category axis; `y`, `low`, `high` are aligned with it (None: a gap);
    `values` are a box's samples per x. `text` is each point's hover text."""

    name: str
    label: str
    colour: str
    marker: Marker | None
    dash: Dash
    hatch: Hatch
    reference: bool  # an ideal line: thin, no markers, shown and hidden with its series
    in_legend: bool
    x: tuple[float, ...]
    y: tuple[float | None, ...] = ()
    low: tuple[float | None, ...] | None = None
    high: tuple[float | None, ...] | None = None
    values: tuple[tuple[float, ...], ...] | None = None
    text: tuple[str, ...] = ()
    interval_colour: str = palette.TEXT_COLOUR
    clips: tuple[Clip, ...] = ()
    band: bool = False  # the interval as a shaded band along the line, not a bar per point


BandRun = tuple[tuple[float, float, float], ...]  # (x, low, high) of consecutive points


@dataclass(frozen=True)
class LegendEntry:
    label: str
    kind: EntryKind
    colour: str
    marker: Marker | None = None
    dash: Dash = "solid"
    hatch: Hatch = ""
    series: int | None = None  # index into Plot.series; None: the reference or a band entry


@dataclass(frozen=True)
class PlotBand:
    low: float
    high: float
    label: str
    colour: str = BAND_COLOUR


@dataclass(frozen=True)
class PlotHeatmap:
    x_labels: tuple[str, ...]
    y_labels: tuple[str, ...]
    z: tuple[tuple[float | None, ...], ...]  # rows padded to the same length
    z_label: str
    stops: tuple[tuple[float, str], ...]
    z_low: float | None
    z_high: float | None
    values: tuple[tuple[str, ...], ...] | None  # the text in each cell, when printed
    x_every: int
    y_every: int


@dataclass(frozen=True)
class Plot:
    id: str
    title: str
    kind: Kind
    x: Axis
    y: Axis
    series: tuple[PlotSeries, ...]
    legend: tuple[LegendEntry, ...]
    legend_columns: int
    bar_mode: BarMode | None = None
    bands: tuple[PlotBand, ...] = ()
    heatmap: PlotHeatmap | None = None
    # lines drawn in the chart under its title: the series not drawn and why, the intervals
    # cut at the axis' edge (the chart's caption is outside the picture)
    subtitle: tuple[str, ...] = ()

    @property
    def legend_rows(self) -> int:
        if len(self.legend) <= 1:
            return 0
        return math.ceil(len(self.legend) / self.legend_columns)

    @property
    def empty(self) -> bool:
        if self.kind == "heatmap":
            return self.heatmap is None or self.heatmap.z_low is None
        return not any(any(v is not None for v in s.y) or any(s.values or ()) for s in self.series)


# ------------------------------------------------------------------ series styles


def _styles(series: Sequence[Series]) -> list[tuple[str, Marker | None, Hatch]]:
    """(colour, marker, hatch) per series. Each series of its own gets the next palette slot
    (its colour, marker and hatch); a reference line takes its series' colour, an unattached
    one (one ideal for all) grey; a series standing for a verdict takes that verdict's
    colour, the same in every chart."""
    slots: dict[str, int] = {}
    for s in series:
        if s.reference_for is None and (s.style == "solid" or s.severity is not None):
            slots.setdefault(s.name, len(slots))
    styles: list[tuple[str, Marker | None, Hatch]] = []
    for s in series:
        if s.reference_for is not None:
            slot = slots.get(s.reference_for)
            colour = palette.colour(slot) if slot is not None else palette.REFERENCE_GREY
            styles.append((colour, None, ""))
            continue
        slot = slots.get(s.name)
        if slot is None:
            styles.append((palette.REFERENCE_GREY, None, ""))
            continue
        colour = SEVERITY_COLOUR[s.severity] if s.severity is not None else palette.colour(slot)
        styles.append((colour, palette.marker(slot), palette.hatch(slot)))
    return styles


def _hover(
    where: str | None,
    name: str,
    y: float | None,
    low: float | None,
    high: float | None,
    fmt: ValueFormat,
) -> str:
    """A point's hover text: '[category · ]series: value (interval low to high)', as the
    tables write values (the axis shows only ticks); a value is never shown bare where it
    has an interval (124 % may be linear within noise)."""
    if y is None:
        return ""
    text = f"{short(name, 80)}: {format_value(y, fmt)}"
    if low is not None and high is not None:
        text += f" (interval {format_value(low, fmt)} to {format_value(high, fmt)})"
    return f"{where} · {text}" if where else text


def _aligned(values: Sequence[float | None] | None, count: int) -> tuple[float | None, ...] | None:
    if values is None:
        return None
    return tuple(finite(values[i]) if i < len(values) else None for i in range(count))


def _plot_series(
    chart: Chart, kind: Kind, keys: dict[str, int] | None, labels: Sequence[str]
) -> list[PlotSeries]:
    out: list[PlotSeries] = []
    log_x = chart.x_log2 and keys is None
    marked = kind in ("line", "dot")
    for s, (colour, marker, hatch) in zip(chart.series, _styles(chart.series), strict=True):
        reference = s.reference_for is not None or (s.style != "solid" and marker is None)
        if keys is not None:
            xs = [float(keys[category_key(x)]) for x in s.x]
        else:
            xs = [float(x) if not isinstance(x, str) else math.nan for x in s.x]
        count = len(xs) if chart.kind == "box" else min(len(xs), len(s.y))
        keep = [i for i in range(count) if math.isfinite(xs[i]) and (not log_x or xs[i] > 0)]
        ys = _aligned(s.y, len(s.x)) or ()
        lows = _aligned(s.low, len(s.x))
        highs = _aligned(s.high, len(s.x))
        values = None
        if chart.kind == "box":
            samples = s.values or []
            values = tuple(
                tuple(finite_values(samples[i])) if i < len(samples) else () for i in keep
            )
        out.append(
            PlotSeries(
                name=s.name,
                label=short(s.name),
                colour=colour,
                marker=marker if marked and not reference else None,
                dash=s.style,
                hatch=hatch if kind in ("bar", "stacked_bar") else "",
                reference=reference,
                in_legend=s.reference_for is None,
                x=tuple(xs[i] for i in keep),
                y=tuple(ys[i] for i in keep) if chart.kind != "box" else (),
                low=tuple(lows[i] for i in keep) if lows is not None else None,
                high=tuple(highs[i] for i in keep) if highs is not None else None,
                values=values,
                text=tuple(
                    _hover(
                        labels[int(xs[i])] if keys is not None else None,
                        s.name,
                        ys[i],
                        lows[i] if lows is not None else None,
                        highs[i] if highs is not None else None,
                        chart.y_format,
                    )
                    for i in keep
                )
                if chart.kind != "box"
                else (),
                interval_colour=colour if marked else palette.TEXT_COLOUR,
                # only a line joins its points: across the categories of bars or dots a band
                # would claim values between them
                band=s.interval == "band" and kind == "line",
            )
        )
    return out


def _runs(series: PlotSeries) -> list[list[tuple[int, float, float, float]]]:
    """A band series' stretches of consecutive points with both interval ends, each point as
    (index, x, low, high); none for a series drawn with bars."""
    if not series.band or series.low is None or series.high is None:
        return []
    runs: list[list[tuple[int, float, float, float]]] = [[]]
    for i, (x, low, high) in enumerate(zip(series.x, series.low, series.high, strict=True)):
        if low is None or high is None:
            runs.append([])  # a missing end splits the band
        else:
            runs[-1].append((i, x, low, high))
    return [run for run in runs if run]


def band_runs(series: PlotSeries) -> list[BandRun]:
    """The shapes of a band series' interval: each stretch of two points or more, as
    (x, low, high) in the line's order (already cut to the axis, `_clipped`)."""
    return [
        tuple((x, low, high) for _, x, low, high in run) for run in _runs(series) if len(run) > 1
    ]


def bar_intervals(series: PlotSeries) -> PlotSeries:
    """The series with the intervals to draw as bars: all of them, or of a band series those
    of the points standing alone in it (no neighbour to span to: a band of one point would
    be invisible)."""
    if not series.band or series.low is None or series.high is None:
        return series
    lone = {run[0][0] for run in _runs(series) if len(run) == 1}
    return replace(
        series,
        low=tuple(v if i in lone else None for i, v in enumerate(series.low)),
        high=tuple(v if i in lone else None for i, v in enumerate(series.high)),
    )


def group_offset(index: int, count: int, bar_mode: BarMode | None) -> float:
    """Where the `index`-th of `count` series sits in its category's slot: side by side
    (GROUP_WIDTH shared, as plotly's grouped bars), or centred when bars overlay or stack."""
    if bar_mode != "group" or count <= 1:
        return 0.0
    return (index - (count - 1) / 2) * (GROUP_WIDTH / count)


# ------------------------------------------------------------------ intervals at the edge


def _clipped(series: PlotSeries, axis: Axis, offset: float) -> PlotSeries:
    """The series with its intervals cut to the axis' range and each cut marked (`Clip`) at
    the edge; its hover text keeps the full interval. On a log axis a low end <= 0 cannot be
    drawn: it is cut at the bottom."""
    if series.low is None or series.high is None or axis.range is None:
        return series
    bottom, top = axis.range
    lows: list[float | None] = []
    highs: list[float | None] = []
    clips: list[Clip] = []
    slack = (top - bottom) * 1e-9 if axis.scale == "linear" else 0.0
    for i, (x, low, high) in enumerate(zip(series.x, series.low, series.high, strict=True)):
        text = series.text[i] if i < len(series.text) else ""
        if low is not None and (low < bottom - slack or (axis.scale == "log" and low <= 0)):
            clips.append(Clip(x=x + offset, y=bottom, up=False, text=text))
            low = bottom
        if high is not None and high > top + slack:
            clips.append(Clip(x=x + offset, y=top, up=True, text=text))
            high = top
        lows.append(low)
        highs.append(high)
    if not clips:
        return series
    return replace(series, low=tuple(lows), high=tuple(highs), clips=tuple(clips))


def _clip_line(series: Sequence[PlotSeries]) -> str | None:
    """The line in the chart that says intervals were cut, with the marks it shows."""
    clips = [c for s in series for c in s.clips]
    if not clips:
        return None
    marks = "".join(
        mark for mark, up in ((CLIP_UP, True), (CLIP_DOWN, False)) if any(c.up == up for c in clips)
    )
    return (
        f"{marks} interval cut at the axis' edge: it runs past {plain_times(CLIP_SPAN)} the "
        "values' range (full interval in the hover and the table)"
    )


def coincide_line(chart: Chart) -> str | None:
    """The line in a line chart that names the series drawn on top of each other (the same
    y at the same x): one line where several were measured, said, never read as one series."""
    if chart.kind != "line":
        return None
    groups: dict[tuple[tuple[object, ...], tuple[object, ...]], list[str]] = {}
    for s in chart.series:
        if s.reference_for is None and s.y and any(v is not None for v in s.y):
            groups.setdefault((tuple(s.x), tuple(s.y)), []).append(s.name)
    said = [
        f"{len(names)} series coincide: {', '.join(short(n) for n in names)}"
        for names in groups.values()
        if len(names) > 1
    ]
    return "; ".join(said) or None


# ------------------------------------------------------------------ axes


def _intervals(series: Sequence[PlotSeries]) -> list[float]:
    """The ends of every interval: the axis holds them within its clip window."""
    numbers = [v for s in series for v in (*(s.low or ()), *(s.high or ())) if v is not None]
    return [v for v in numbers if math.isfinite(v)]


def _value_numbers(
    chart: Chart, series: Sequence[PlotSeries], bar_mode: BarMode | None
) -> list[float]:
    """Every y-side number the value axis must show whole: values, box samples, bands,
    stack tops (not the intervals: `_intervals`)."""
    numbers: list[float] = []
    for s in series:
        numbers += [v for v in s.y if v is not None]
        for sample in s.values or ():
            numbers += sample
    if bar_mode == "stack":
        tops: dict[float, float] = {}
        bottoms: dict[float, float] = {}
        for s in series:
            for x, y in zip(s.x, s.y, strict=True):
                if y is not None:
                    stack = tops if y >= 0 else bottoms
                    stack[x] = stack.get(x, 0.0) + y
        numbers += [*tops.values(), *bottoms.values()]
    for band in chart.bands:
        numbers += [band.low, band.high]
    return [v for v in numbers if math.isfinite(v)]


def _y_axis(
    chart: Chart, kind: Kind, series: Sequence[PlotSeries], bar_mode: BarMode | None
) -> Axis:
    """The value axis over the values, and over the intervals as far as `clip_window` lets
    them stretch it."""
    points = _value_numbers(chart, series, bar_mode)
    numbers = points + _intervals(series)
    zero = zero_based(kind, chart.y_format)
    window = clip_window(points, zero and not chart.y_log, log=chart.y_log)
    if chart.y_log:
        return log_axis(chart.y_label, chart.y_format, numbers, window)
    return linear_axis(chart.y_label, chart.y_format, numbers, zero, window)


def _x_axis(chart: Chart, labels: list[str] | None) -> Axis:
    if labels is not None:
        return category_axis(chart.x_label, labels)
    numbers = [float(x) for s in chart.series for x in s.x if not isinstance(x, str)]
    numbers = [x for x in numbers if math.isfinite(x)]
    if chart.x_log2:
        return measured_log_axis(chart.x_label, chart.x_format, numbers)
    return linear_axis(chart.x_label, chart.x_format, numbers, zero=False)


# ------------------------------------------------------------------ legend


def _legend(chart: Chart, p_kind: Kind, series: Sequence[PlotSeries]) -> list[LegendEntry]:
    kind: EntryKind = "line" if p_kind == "line" else "marker" if p_kind == "dot" else "patch"
    entries = [
        LegendEntry(s.label, kind, s.colour, s.marker, s.dash, s.hatch, series=index)
        for index, s in enumerate(series)
        if s.in_legend
    ]
    attached = reference_legend(chart.series)
    if attached is not None:
        label = short(reference_label(attached))
        entries.append(LegendEntry(label, "line", palette.REFERENCE_GREY, dash=attached.style))
    entries += [LegendEntry(short(b.label), "band", BAND_COLOUR) for b in chart.bands]
    if len(entries) <= 1 and not chart.bands:
        return []  # one series: the title and axis say what it is
    return entries


def legend_columns(entries: Sequence[LegendEntry]) -> int:
    """As many columns as the longest label leaves room for, at most MAX_LEGEND_COLUMNS."""
    longest = max((len(e.label) for e in entries), default=0)
    fit = LEGEND_WIDTH_CHARS // (longest + LEGEND_HANDLE_CHARS)
    return max(1, min(MAX_LEGEND_COLUMNS, fit, len(entries) or 1))


# ------------------------------------------------------------------ heatmap


def _heatmap(chart: Chart) -> PlotHeatmap | None:
    heatmap = chart.heatmap
    if heatmap is None:
        return None
    width = max((len(row) for row in heatmap.z), default=0)
    width = max(width, len(heatmap.x_labels)) if heatmap.z else 0
    rows = [tuple(finite(v) for v in row) + (None,) * (width - len(row)) for row in heatmap.z]
    present = [v for row in rows for v in row if v is not None]
    cells = len(rows) * width
    x_labels = tuple(short(x) for x in [*heatmap.x_labels, *[""] * width][:width])
    y_labels = tuple(short(y) for y in [*heatmap.y_labels, *[""] * len(rows)][: len(rows)])
    return PlotHeatmap(
        x_labels=x_labels,
        y_labels=y_labels,
        z=tuple(rows),
        z_label=heatmap.z_label,
        stops=heatmap_scale(heatmap.higher_is),
        z_low=min(present) if present else None,
        z_high=max(present) if present else None,
        values=tuple(
            tuple("" if v is None else format_value(v, "float") for v in row) for row in rows
        )
        if present and cells <= HEATMAP_VALUES_MAX
        else None,
        x_every=max(1, math.ceil(width / HEATMAP_X_LABELS)),
        y_every=max(1, math.ceil(len(rows) / HEATMAP_Y_LABELS)),
    )


# ------------------------------------------------------------------ the plot


def plot(chart: Chart) -> Plot:
    """The chart as both back-ends draw it (see the module docstring). Pure and
    deterministic: the same chart gives the same plot in every process."""
    chart = cap_chart(chart)
    if chart.kind == "heatmap":
        heat = _heatmap(chart)
        return Plot(
            id=chart.id,
            title=chart.title,
            kind="heatmap",
            x=category_axis(chart.x_label, heat.x_labels if heat else (), slant=False),
            y=category_axis(chart.y_label, heat.y_labels if heat else (), slant=False),
            series=(),
            legend=(),
            legend_columns=1,
            heatmap=heat,
        )
    kind: Kind = "dot" if chart.kind == "bar" and chart.y_log else chart.kind
    categorical = chart.kind in ("bar", "stacked_bar", "box") or any(
        isinstance(x, str) for s in chart.series for x in s.x
    )
    every = categories(chart.series) if categorical else []
    keys = {category_key(x): i for i, x in enumerate(every)} if categorical else None
    labels = [short(x if isinstance(x, str) else format_value(x, chart.x_format)) for x in every]
    series = _plot_series(chart, kind, keys, labels)
    bar_mode: BarMode | None = "stack" if chart.kind == "stacked_bar" else None
    if chart.kind == "bar":
        bar_mode = "overlay" if disjoint(chart.series) else "group"
    if kind == "dot":  # side by side in their category, as grouped bars would stand
        series = [
            replace(s, x=tuple(x + group_offset(i, len(series), bar_mode) for x in s.x))
            for i, s in enumerate(series)
        ]
    y = _y_axis(chart, kind, series, bar_mode)
    series = [
        _clipped(s, y, group_offset(i, len(series), bar_mode) if kind == "bar" else 0.0)
        for i, s in enumerate(series)
    ]
    legend = _legend(chart, kind, series)
    return Plot(
        id=chart.id,
        title=chart.title,
        kind=kind,
        x=_x_axis(chart, labels if categorical else None),
        y=y,
        series=tuple(series),
        legend=tuple(legend),
        legend_columns=legend_columns(legend),
        bar_mode=bar_mode,
        bands=tuple(PlotBand(low=b.low, high=b.high, label=short(b.label)) for b in chart.bands),
        subtitle=tuple(
            line
            for line in ("; ".join(chart.absent), _clip_line(series), coincide_line(chart))
            if line
        ),
    )
