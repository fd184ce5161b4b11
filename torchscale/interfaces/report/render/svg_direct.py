"""The report's static charts, HTML and PDF alike: the chart model's `Plot` written as SVG text.

- One writer for both formats: the HTML inlines each SVG, the PDF embeds it as a `data:` image.
  Only SVG that WeasyPrint draws is used (paths, text with `text-anchor`, `rotate`, `tspan`,
  dashes, opacity, `<pattern>` hatches); it ignores `<title>`.
- Nothing here decides what a chart shows (`report.charts.plot` does); only the page's geometry
  (px of a 660 px wide picture; text widths estimated from character counts, so margins and
  label thinning err on the roomy side).
- Each series is a group `<g id="CHART-series-N">` whose first child is a `<title>` with its
  points' hover text (no script needed). Ids carry the chart's id, so two charts in one page
  never share a hatch pattern or a group id.
- Every user string is escaped (`html.escape`).
- One chart that cannot be drawn costs only its place (`ChartError`): the report says so there."""

from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from torchscale.contracts.wording.spell import format_value
from torchscale.interfaces.formatting import is_dark, scale_colour
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
from torchscale.interfaces.report.progress import OnStep, Step, ignore

WIDTH = 660.0  # px: 6.6 in at 100 dpi, an A4 column's proportions
PLOT_HEIGHT = 200.0
FONT = 11.0  # tick labels
SMALL = 10.0  # legend, subtitle, heatmap values
CHAR = 0.58  # an average character's width, in font sizes (for margins, never for a cut)
LEGEND_ROW = 16.0
LEGEND_HANDLE = 24.0
ROTATION = 50.0  # degrees: slanted category labels
SLANTED_FONT = 9.5
LABEL_GAP = 8.0  # px between two level category labels
SUBTITLE_WRAP = 118  # characters of a line under the title
SUBTITLE_COLOUR = "#555555"
BOX_ALPHA = 0.35
BAND_ALPHA = 0.18
COLOUR_BAR = 14.0
COLOUR_BAR_STEPS = 24
HEATMAP_ROW = 26.0
MARKER_SIZE = 4.5  # px, half the marker's width
DASHES = {"solid": "", "dashed": "5 2.5", "dotted": "1.2 1.8"}


def _e(text: str) -> str:
    """Text or an attribute value, escaped (quotes too)."""
    return html.escape(text, quote=True)


def _n(value: float) -> str:
    """A coordinate, short: two decimals at most, no '-0'."""
    text = repr(round(float(value), 2)).rstrip("0").rstrip(".")  # a float's repr has a '.'
    return "0" if text in ("-0", "") else text


def series_id(chart_id: str, index: int, part: str = "") -> str:
    """The id of a series' group ('CHART-series-0', 'CHART-series-0-clip-up')."""
    return f"{chart_id}-series-{index}" + (f"-{part}" if part else "")


# ------------------------------------------------------------------ geometry


@dataclass(frozen=True)
class Scale:
    """Data to pixels along one axis: `low`..`high` (raw units) onto `start`..`end` px."""

    low: float
    high: float
    start: float
    end: float
    log: bool

    def __call__(self, value: float) -> float:
        low, high, v = self.low, self.high, value
        if self.log:
            low, high, v = math.log10(low), math.log10(high), math.log10(max(value, 1e-300))
        span = (high - low) or 1.0
        return self.start + (v - low) / span * (self.end - self.start)


def _scale(axis: Axis, start: float, end: float) -> Scale | None:
    if axis.range is None:
        return None
    low, high = axis.range
    if axis.scale == "log" and (low <= 0 or high <= 0):
        return None
    return Scale(low, high, start, end, axis.scale == "log")


def _text_width(text: str, size: float) -> float:
    return len(text) * size * CHAR


@dataclass(frozen=True)
class XLabels:
    """How the x tick labels are set: level (each on up to three lines) or slanted, and
    which of them are shown."""

    lines: tuple[tuple[str, ...], ...]
    positions: tuple[float, ...]
    slanted: bool
    height: float


def _x_labels(p: Plot, pitch: float) -> XLabels:
    """Level labels where they fit their slot (wrapped on up to three lines), else slanted,
    every n-th where the slots are narrower than a line across the slant."""
    ticks = list(zip(p.x.ticks, p.x.tick_text, strict=False))
    level, positions = tuple((text,) for _, text in ticks), tuple(x for x, _ in ticks)
    if p.x.scale != "category" or len(ticks) < 2:
        return XLabels(level, positions, False, FONT + 6)
    if not p.x.slanted:
        room = pitch - LABEL_GAP
        if all(_text_width(text, FONT) <= room for _, text in ticks):
            return XLabels(level, positions, False, 17)
        chars = int(room / (FONT * CHAR))
        wrapped = [tuple(textwrap.wrap(text, max(chars, 4))) for _, text in ticks]
        if chars >= 6 and all(len(lines) <= 3 for lines in wrapped):
            rows = max(len(lines) for lines in wrapped)
            return XLabels(tuple(wrapped), positions, False, 6 + rows * 12)
    across = pitch * math.sin(math.radians(ROTATION))
    line = SLANTED_FONT * 1.3
    every = 1 if across >= line else math.ceil(line / max(across, 1e-6))
    kept = ticks[::every]
    longest = max((_text_width(text, SLANTED_FONT) for _, text in kept), default=0.0)
    height = 8 + longest * math.sin(math.radians(ROTATION)) + SLANTED_FONT
    return XLabels(tuple((t,) for _, t in kept), tuple(x for x, _ in kept), True, height)


@dataclass(frozen=True)
class Frame:
    """Where the plot area is (px) and what is laid around it."""

    left: float
    top: float
    right: float
    bottom: float
    height: float  # the whole picture's
    subtitle: tuple[str, ...]
    x_labels: XLabels


def _frame(p: Plot) -> Frame:
    subtitle = tuple(w for line in p.subtitle for w in textwrap.wrap(line, SUBTITLE_WRAP) or [""])
    top = 8.0 + len(subtitle) * 14.0
    y_texts = p.heatmap.y_labels if p.kind == "heatmap" and p.heatmap else p.y.tick_text
    widest = max((_text_width(t, FONT) for t in y_texts), default=0.0)
    left = 22.0 + min(widest, 200.0) + 8.0
    right = WIDTH - (90.0 if p.kind == "heatmap" else 14.0)
    plot_height = PLOT_HEIGHT
    if p.kind == "heatmap" and p.heatmap is not None:
        plot_height = min(3 * PLOT_HEIGHT, max(PLOT_HEIGHT, HEATMAP_ROW * len(p.heatmap.y_labels)))
    bottom = top + plot_height
    count = max(len(p.x.ticks), 1)
    pitch = (right - left) / count if p.x.scale == "category" else right - left
    labels = _x_labels(p, pitch)
    if labels.slanted and labels.lines:
        # a slanted label runs down to the left of its tick: the first must not leave the
        # picture
        reach = _text_width(labels.lines[0][0], SLANTED_FONT) * math.cos(math.radians(ROTATION))
        left = max(left, min(reach - pitch / 2 + 6, 260.0))
        pitch = (right - left) / count
        labels = _x_labels(p, pitch)
    height = bottom + labels.height + (18.0 if p.x.title else 0.0)
    if p.legend_rows:
        height += 8.0 + LEGEND_ROW * p.legend_rows
    return Frame(left, top, right, bottom, height + 6.0, subtitle, labels)


# ------------------------------------------------------------------ marks


def _marker_path(kind: str | None, x: float, y: float, r: float = MARKER_SIZE) -> str:
    """One marker at (x, y) as path commands (closed), so a series' markers are one node."""
    if kind in (None, "circle"):
        return (
            f"M{_n(x - r)},{_n(y)}a{_n(r)},{_n(r)} 0 1,0 {_n(2 * r)},0"
            f"a{_n(r)},{_n(r)} 0 1,0 {_n(-2 * r)},0Z"
        )
    points: list[tuple[float, float]]
    if kind == "square":
        s = r * 0.9
        points = [(-s, -s), (s, -s), (s, s), (-s, s)]
    elif kind == "triangle-up":
        points = [(0, -r * 1.15), (r, r * 0.8), (-r, r * 0.8)]
    elif kind == "triangle-down":
        points = [(0, r * 1.15), (r, -r * 0.8), (-r, -r * 0.8)]
    elif kind == "diamond":
        points = [(0, -r * 1.2), (r, 0), (0, r * 1.2), (-r, 0)]
    elif kind == "cross":
        a, b = r * 0.35, r
        points = [(-a, -b), (a, -b), (a, -a), (b, -a), (b, a), (a, a)]
        points += [(a, b), (-a, b), (-a, a), (-b, a), (-b, -a), (-a, -a)]
    elif kind == "x":
        a, b = r * 0.3, r
        points = [(-b, -b + a), (-b + a, -b), (0, -a), (b - a, -b), (b, -b + a), (a, 0)]
        points += [(b, b - a), (b - a, b), (0, a), (-b + a, b), (-b, b - a), (-a, 0)]
    else:  # star: ten points, alternately far and near
        turns = [(r * (1.15 if i % 2 == 0 else 0.5), math.pi * i / 5) for i in range(10)]
        points = [(d * math.sin(a), -d * math.cos(a)) for d, a in turns]
    return "M" + "L".join(f"{_n(x + dx)},{_n(y + dy)}" for dx, dy in points) + "Z"


def _title(lines: Sequence[str]) -> str:
    return f"<title>{html.escape(chr(10).join(lines), quote=False)}</title>"


def _hover(series: PlotSeries) -> str:
    return _title([t for t in series.text if t] or [series.name])


def _polyline(points: Sequence[tuple[float, float] | None]) -> str:
    """Path commands through the points; None breaks the line (a gap)."""
    out: list[str] = []
    pen_down = False
    for point in points:
        if point is None:
            pen_down = False
            continue
        out.append(f"{'L' if pen_down else 'M'}{_n(point[0])},{_n(point[1])}")
        pen_down = True
    return "".join(out)


def _interval_path(
    xs: Sequence[float], series: PlotSeries, sx: Callable[[float], float], sy: Scale
) -> str:
    """Every interval of the series as one path of vertical segments."""
    if series.low is None or series.high is None:
        return ""
    d = "".join(
        f"M{_n(sx(x))},{_n(sy(low))}V{_n(sy(high))}"
        for x, low, high in zip(xs, series.low, series.high, strict=True)
        if low is not None and high is not None
    )
    if not d:
        return ""
    return f'<path d="{d}" fill="none" stroke="{series.interval_colour}" stroke-width="1"/>'


def _band_path(series: PlotSeries, sx: Scale, sy: Scale) -> str:
    """A band series' interval as one filled path, a closed shape per stretch (along the
    highs, back along the lows), light in the series' colour."""
    d = "".join(
        _polyline(
            [(sx(x), sy(high)) for x, _, high in run]
            + [(sx(x), sy(low)) for x, low, _ in reversed(run)]
        )
        + "Z"
        for run in band_runs(series)
    )
    if not d:
        return ""
    return (
        f'<path d="{d}" fill="{series.colour}" fill-opacity="{INTERVAL_BAND_ALPHA}" stroke="none"/>'
    )


def _line_series(p: Plot, sx: Scale, sy: Scale, chart_id: str) -> list[str]:
    # every band first, under every series' line and marker, and deaf to the pointer: a
    # forecast's band covers the measured points at its sizes, whose hover must stay theirs
    bands = "".join(_band_path(s, sx, sy) for s in p.series)
    out = [f'<g id="{chart_id}-bands" pointer-events="none">{bands}</g>'] if bands else []
    for index, s in enumerate(p.series):
        points = [(sx(x), sy(y)) if y is not None else None for x, y in zip(s.x, s.y, strict=True)]
        parts = [f'<g id="{series_id(chart_id, index)}">', _hover(s)]
        parts.append(_interval_path(s.x, bar_intervals(s), sx, sy))
        if p.kind == "line":
            dash = f' stroke-dasharray="{DASHES[s.dash]}"' if DASHES[s.dash] else ""
            parts.append(
                f'<path d="{_polyline(points)}" fill="none" stroke="{s.colour}" '
                f'stroke-width="{1.0 if s.reference else 1.6}"{dash}/>'
            )
        marker = s.marker or ("circle" if p.kind == "dot" else None)
        if marker is not None:
            size = 5.0 if p.kind == "dot" else MARKER_SIZE
            d = "".join(_marker_path(marker, *pt, r=size * 0.75) for pt in points if pt)
            if d:
                parts.append(f'<path d="{d}" fill="{s.colour}"/>')
        parts.append("</g>")
        out.append("".join(parts))
    return out


def _rect(x0: float, x1: float, y0: float, y1: float) -> str:
    left, right = sorted((x0, x1))
    top, bottom = sorted((y0, y1))
    return f"M{_n(left)},{_n(top)}H{_n(right)}V{_n(bottom)}H{_n(left)}Z"


def _hatch_patterns(p: Plot, chart_id: str) -> tuple[str, dict[str, str]]:
    """<defs> of the hatches the bars use (white lines over the fill), and each hatch's id."""
    lines = {
        "/": "M-1,7L7,-1M5,9L9,5M-1,1L1,-1",
        "\\": "M-1,-1L7,7M5,-1L9,3M-1,5L1,7",
        "x": "M-1,7L7,-1M-1,-1L7,7",
        "-": "M0,3H6",
        "|": "M3,0V6",
        "+": "M0,3H6M3,0V6",
    }
    used = sorted({s.hatch for s in p.series if s.hatch} | {e.hatch for e in p.legend if e.hatch})
    ids: dict[str, str] = {h: f"{chart_id}-hatch-{number}" for number, h in enumerate(used)}
    defs = "".join(
        f'<pattern id="{ids[h]}" width="6" height="6" patternUnits="userSpaceOnUse">'
        f'<path d="{lines[h]}" stroke="white" stroke-width="0.8"/></pattern>'
        for h in used
    )
    return (f"<defs>{defs}</defs>" if defs else ""), ids


def _bar_series(p: Plot, sx: Scale, sy: Scale, chart_id: str, hatches: dict[str, str]) -> list[str]:
    count = len(p.series)
    alone = p.bar_mode in ("stack", "overlay") or count == 1
    width = 0.7 if alone else GROUP_WIDTH / max(count, 1)
    tops: dict[float, float] = {}
    bottoms: dict[float, float] = {}
    out = []
    for index, s in enumerate(p.series):
        offset = group_offset(index, count, p.bar_mode)
        boxes = []
        for x, y in zip(s.x, s.y, strict=True):
            if y is None:
                continue
            start = 0.0  # a bar's length is its value, from zero
            if p.bar_mode == "stack":
                stack = tops if y >= 0 else bottoms
                start = stack.get(x, 0.0)
                stack[x] = start + y
            centre = x + offset
            boxes.append(
                _rect(sx(centre - width / 2), sx(centre + width / 2), sy(start), sy(start + y))
            )
        parts = [f'<g id="{series_id(chart_id, index)}">', _hover(s)]
        if boxes:
            d = "".join(boxes)
            parts.append(f'<path d="{d}" fill="{s.colour}" stroke="white" stroke-width="0.6"/>')
            if s.hatch:
                parts.append(f'<path d="{d}" fill="url(#{hatches[s.hatch]})"/>')
        if p.bar_mode != "stack":
            parts.append(_interval_path([x + offset for x in s.x], s, sx, sy))
        parts.append("</g>")
        out.append("".join(parts))
    return out


def quantile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted samples, linearly interpolated (numpy's default)."""
    at = (len(ordered) - 1) * q
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


@dataclass(frozen=True)
class BoxStats:
    q1: float
    median: float
    q3: float
    low: float  # whisker ends: the farthest samples within 1.5 IQR of the box
    high: float
    outliers: tuple[float, ...]


def box_stats(samples: Sequence[float]) -> BoxStats:
    """Quartiles, whiskers to the farthest sample within 1.5 IQR, the samples beyond (the
    rule of plotly's boxes)."""
    ordered = sorted(samples)
    q1, median, q3 = (quantile(ordered, q) for q in (0.25, 0.5, 0.75))
    reach = 1.5 * (q3 - q1)
    inside = [v for v in ordered if q1 - reach <= v <= q3 + reach]
    outliers = tuple(v for v in ordered if v < q1 - reach or v > q3 + reach)
    return BoxStats(q1, median, q3, min([*inside, q1]), max([*inside, q3]), outliers)


def _box_series(p: Plot, sx: Scale, sy: Scale, chart_id: str) -> list[str]:
    count = len(p.series)
    width = 0.7 / max(count, 1)
    out = []
    for index, s in enumerate(p.series):
        offset = (index - (count - 1) / 2) * width
        half = width * 0.85 / 2
        boxes, whiskers, medians, fliers, texts = [], [], [], [], []
        for x, samples in zip(s.x, s.values or (), strict=True):
            if not samples:
                continue
            stats = box_stats(samples)
            middle = x + offset
            px = sx(middle)
            boxes.append(_rect(sx(middle - half), sx(middle + half), sy(stats.q1), sy(stats.q3)))
            whiskers.append(
                f"M{_n(px)},{_n(sy(stats.low))}V{_n(sy(stats.q1))}"
                f"M{_n(px)},{_n(sy(stats.q3))}V{_n(sy(stats.high))}"
            )
            medians.append(
                f"M{_n(sx(middle - half))},{_n(sy(stats.median))}H{_n(sx(middle + half))}"
            )
            fliers += [_marker_path("circle", px, sy(v), r=1.6) for v in stats.outliers]
            where = p.x.categories[round(x)] if p.x.categories else ""
            texts.append(
                f"{where + ' · ' if where else ''}{s.name}: median "
                f"{format_value(stats.median, p.y.format)}, {len(samples)} samples"
            )
        if not boxes:
            continue
        parts = [
            f'<g id="{series_id(chart_id, index)}">',
            _title(texts),
            f'<path d="{"".join(boxes)}" fill="{s.colour}" fill-opacity="{BOX_ALPHA}" '
            f'stroke="{s.colour}" stroke-width="0.6"/>',
            f'<path d="{"".join(whiskers)}" fill="none" stroke="{s.colour}"/>',
            f'<path d="{"".join(medians)}" fill="none" stroke="{s.colour}" stroke-width="1.6"/>',
        ]
        if fliers:
            parts.append(f'<path d="{"".join(fliers)}" fill="{s.colour}"/>')
        parts.append("</g>")
        out.append("".join(parts))
    return out


def _clip_marks(p: Plot, sx: Scale, sy: Scale, chart_id: str) -> list[str]:
    """A triangle where an interval was cut at the axis' edge, with the full interval."""
    out = []
    for index, s in enumerate(p.series):
        for up in (True, False):
            marks = [c for c in s.clips if c.up == up]
            if not marks:
                continue
            kind = "triangle-up" if up else "triangle-down"
            d = "".join(_marker_path(kind, sx(c.x), sy(c.y), r=4.0) for c in marks)
            gid = series_id(chart_id, index, "clip-up" if up else "clip-down")
            out.append(
                f'<g id="{gid}">{_title([c.text for c in marks])}'
                f'<path d="{d}" fill="{s.interval_colour}"/></g>'
            )
    return out


# ------------------------------------------------------------------ axes, legend, text


def _text(
    x: float,
    y: float,
    text: str,
    size: float = FONT,
    anchor: str = "middle",
    extra: str = "",
    colour: str = palette.TEXT_COLOUR,
) -> str:
    return (
        f'<text x="{_n(x)}" y="{_n(y)}" font-size="{_n(size)}" text-anchor="{anchor}" '
        f'fill="{colour}"{extra}>{_e(text)}</text>'
    )


def _y_axis(p: Plot, f: Frame, sy: Scale) -> list[str]:
    low, high = min(sy.start, sy.end) - 0.5, max(sy.start, sy.end) + 0.5
    grid = "".join(
        f"M{_n(f.left)},{_n(sy(t))}H{_n(f.right)}" for t in p.y.ticks if low <= sy(t) <= high
    )
    out = [f'<path d="{grid}" stroke="{palette.GRID_COLOUR}" stroke-width="0.6"/>'] if grid else []
    for tick, label in zip(p.y.ticks, p.y.tick_text, strict=False):
        if low <= sy(tick) <= high:
            out.append(_text(f.left - 5, sy(tick) + FONT * 0.35, label, anchor="end"))
    return out


def _x_axis(p: Plot, f: Frame, sx: Scale) -> list[str]:
    out = []
    labels = f.x_labels
    for position, lines in zip(labels.positions, labels.lines, strict=True):
        x = sx(position)
        if not f.left - 0.5 <= x <= f.right + 0.5:
            continue
        if labels.slanted:
            y = f.bottom + 10
            turn = f' transform="rotate(-{_n(ROTATION)} {_n(x)} {_n(y)})"'
            out.append(_text(x, y, lines[0], size=SLANTED_FONT, anchor="end", extra=turn))
        elif len(lines) == 1:
            out.append(_text(x, f.bottom + FONT + 3, lines[0]))
        else:
            spans = "".join(
                f'<tspan x="{_n(x)}" dy="{0 if i == 0 else 12}">{_e(line)}</tspan>'
                for i, line in enumerate(lines)
            )
            out.append(
                f'<text x="{_n(x)}" y="{_n(f.bottom + FONT + 3)}" font-size="{_n(FONT)}" '
                f'text-anchor="middle" fill="{palette.TEXT_COLOUR}">{spans}</text>'
            )
    return out


def _axis_titles(p: Plot, f: Frame) -> list[str]:
    out = []
    if p.x.title:
        y = f.bottom + f.x_labels.height + 12
        out.append(_text((f.left + f.right) / 2, y, p.x.title, size=FONT))
    if p.y.title:
        x, y = 12.0, (f.top + f.bottom) / 2
        out.append(_text(x, y, p.y.title, extra=f' transform="rotate(-90 {_n(x)} {_n(y)})"'))
    return out


def _legend_handle(entry: LegendEntry, x: float, y: float, hatches: dict[str, str]) -> str:
    if entry.kind in ("line", "marker"):
        parts = []
        if entry.kind == "line":
            dash = DASHES[entry.dash]
            parts.append(
                f'<path d="M{_n(x)},{_n(y)}H{_n(x + 20)}" stroke="{entry.colour}" '
                'stroke-width="1.4"' + (f' stroke-dasharray="{dash}"' if dash else "") + "/>"
            )
        marker = entry.marker or ("circle" if entry.kind == "marker" else None)
        if marker is not None:
            d = _marker_path(marker, x + 10, y, r=MARKER_SIZE * 0.75)
            parts.append(f'<path d="{d}" fill="{entry.colour}"/>')
        return "".join(parts)
    box = _rect(x + 2, x + 18, y - 5, y + 5)
    if entry.kind == "band":
        return f'<path d="{box}" fill="{entry.colour}" fill-opacity="0.35"/>'
    hatch = f'<path d="{box}" fill="url(#{hatches[entry.hatch]})"/>' if entry.hatch else ""
    return f'<path d="{box}" fill="{entry.colour}"/>{hatch}'


def _legend(p: Plot, f: Frame, hatches: dict[str, str]) -> list[str]:
    """Under the axes, row by row in the model's columns (plotly's order)."""
    if not p.legend:
        return []
    top = f.bottom + f.x_labels.height + (18.0 if p.x.title else 0.0) + 8.0 + LEGEND_ROW / 2
    column = WIDTH / p.legend_columns
    out = ['<g class="legend">']
    for number, entry in enumerate(p.legend):
        row, col = divmod(number, p.legend_columns)
        x = 8.0 + col * column
        y = top + row * LEGEND_ROW
        out.append(_legend_handle(entry, x, y, hatches))
        out.append(_text(x + LEGEND_HANDLE, y + SMALL * 0.35, entry.label, SMALL, "start"))
    out.append("</g>")
    return out


def _subtitle(f: Frame) -> list[str]:
    return [
        _text(f.left, 8.0 + (i + 1) * 14.0 - 4, line, SMALL, "start", colour=SUBTITLE_COLOUR)
        for i, line in enumerate(f.subtitle)
    ]


def _bands(p: Plot, f: Frame, sy: Scale) -> list[str]:
    return [
        f'<path d="{_rect(f.left, f.right, sy(b.low), sy(b.high))}" fill="{b.colour}" '
        f'fill-opacity="{BAND_ALPHA}"/>'
        for b in p.bands
    ]


# ------------------------------------------------------------------ heatmap


def _hex(rgb: tuple[float, float, float]) -> str:
    return "#" + "".join(palette.hex_byte(c) for c in rgb)


def _heatmap(p: Plot, f: Frame) -> list[str]:
    heat = p.heatmap
    if heat is None or heat.z_low is None or heat.z_high is None:
        return [_text((f.left + f.right) / 2, (f.top + f.bottom) / 2, "no data")]
    rows, cols = len(heat.z), max((len(r) for r in heat.z), default=0)
    cw = (f.right - f.left) / max(cols, 1)
    ch = (f.bottom - f.top) / max(rows, 1)
    span = (heat.z_high - heat.z_low) or 1.0
    out = []
    missing = []
    for i, row in enumerate(heat.z):
        for j, value in enumerate(row):
            x, y = f.left + j * cw, f.top + i * ch
            if value is None:
                missing.append(_rect(x, x + cw, y, y + ch))
                continue
            rgb = scale_colour(heat.stops, (value - heat.z_low) / span)
            where = f"{heat.y_labels[i]} · {heat.x_labels[j]}: "
            shown = heat.values[i][j] if heat.values is not None else format_value(value, "float")
            out.append(
                f'<path d="{_rect(x, x + cw, y, y + ch)}" fill="{_hex(rgb)}">'
                f"{_title([where + shown])}</path>"
            )
            if heat.values is not None:
                colour = "white" if is_dark(rgb) else "black"
                out.append(
                    _text(x + cw / 2, y + ch / 2 + SMALL * 0.35, shown, SMALL, colour=colour)
                )
    if missing:
        out.append(
            f'<path d="{"".join(missing)}" fill="{palette.NO_DATA_COLOUR}"><title>no data'
            "</title></path>"
        )
        out.append(_text(f.right, f.bottom + 30, "grey: no data", SMALL, "end"))
    for j in range(0, cols, heat.x_every):
        out.append(_text(f.left + (j + 0.5) * cw, f.bottom + FONT + 3, heat.x_labels[j]))
    for i in range(0, rows, heat.y_every):
        y = f.top + (i + 0.5) * ch + FONT * 0.35
        out.append(_text(f.left - 5, y, heat.y_labels[i], anchor="end"))
    out += _colour_bar(p, f)
    return out


def _colour_bar(p: Plot, f: Frame) -> list[str]:
    heat = p.heatmap
    assert heat is not None and heat.z_low is not None and heat.z_high is not None
    x = f.right + 12
    step = (f.bottom - f.top) / COLOUR_BAR_STEPS
    out = [
        f'<path d="{_rect(x, x + COLOUR_BAR, f.bottom - (k + 1) * step, f.bottom - k * step)}" '
        f'fill="{_hex(scale_colour(heat.stops, (k + 0.5) / COLOUR_BAR_STEPS))}"/>'
        for k in range(COLOUR_BAR_STEPS)
    ]
    high, low = format_value(heat.z_high, "float"), format_value(heat.z_low, "float")
    out.append(_text(x + COLOUR_BAR + 3, f.top + SMALL, high, SMALL, "start"))
    out.append(_text(x + COLOUR_BAR + 3, f.bottom, low, SMALL, "start"))
    cx, cy = x + COLOUR_BAR + 52, (f.top + f.bottom) / 2
    out.append(_text(cx, cy, heat.z_label, SMALL, extra=f' transform="rotate(-90 {cx} {cy})"'))
    return out


# ------------------------------------------------------------------ the picture


def plot_svg(p: Plot) -> str:
    """The plot as one <svg> element (see the module docstring)."""
    f = _frame(p)
    chart_id = _e(p.id)
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="direct" width="{_n(WIDTH)}" '
        f'height="{_n(f.height)}" viewBox="0 0 {_n(WIDTH)} {_n(f.height)}" '
        f'font-family="sans-serif" role="img" aria-label="{_e(p.title)}">'
    )
    defs, hatches = _hatch_patterns(p, chart_id)
    body = [defs, *_subtitle(f)]
    if p.kind == "heatmap":
        return head + "".join([*body, *_heatmap(p, f), *_axis_titles(p, f)]) + "</svg>"
    sx = _scale(p.x, f.left, f.right)
    sy = _scale(p.y, f.bottom, f.top)
    body.append(
        f'<path d="M{_n(f.left)},{_n(f.top)}V{_n(f.bottom)}H{_n(f.right)}" fill="none" '
        f'stroke="{palette.AXIS_COLOUR}" stroke-width="0.8"/>'
    )
    if p.empty or sx is None or sy is None:
        no_data = _text((f.left + f.right) / 2, (f.top + f.bottom) / 2, "no data")
        return head + "".join([*body, no_data, *_axis_titles(p, f)]) + "</svg>"
    body += [*_bands(p, f, sy), *_y_axis(p, f, sy), *_x_axis(p, f, sx), *_axis_titles(p, f)]
    # every value is inside the axes' range and every interval was cut to it (`plot`)
    if p.kind in ("line", "dot"):
        body += _line_series(p, sx, sy, chart_id)
    elif p.kind in ("bar", "stacked_bar"):
        body += _bar_series(p, sx, sy, chart_id, hatches)
    elif p.kind == "box":
        body += _box_series(p, sx, sy, chart_id)
    body += _clip_marks(p, sx, sy, chart_id)
    body += _legend(p, f, hatches)
    return head + "".join(body) + "</svg>"


def chart_svg(chart: Chart | Plot) -> str:
    """One chart as an <svg> element for a page (no prologue: it is inlined)."""
    return plot_svg(chart if isinstance(chart, Plot) else plot(chart))


class ChartError(Exception):
    """A chart that could not be drawn: "ErrorType: message"."""


def drawn_charts(
    charts: Sequence[Chart], on_step: OnStep = ignore, draw: Callable[[Chart], str] = chart_svg
) -> dict[str, str | ChartError]:
    """Each chart id -> its <svg> (by `draw`), or the `ChartError` that stopped it (one chart
    is one figure: the rest of the report stands). `on_step` hears how many are drawn."""
    drawn: dict[str, str | ChartError] = {}
    on_step(Step("charts", 0, len(charts)))
    for done, chart in enumerate(charts, start=1):
        try:
            drawn[chart.id] = draw(chart)
        except Exception as error:
            drawn[chart.id] = ChartError(f"{type(error).__name__}: {error}")
        on_step(Step("charts", done, len(charts)))
    return drawn
