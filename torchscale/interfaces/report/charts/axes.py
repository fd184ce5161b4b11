"""Axis ranges and ticks, decided once for both back-ends.

- Ticks are chosen in the unit the labels show (MiB, ms): round numbers of the raw value are
  odd ones of the shown unit (3,000,000 B is "2.861023 MiB").
- Both back-ends draw exactly these ticks over exactly this range (no back-end autoscaling),
  so an axis reads the same in HTML and PDF.
- Which axes start at zero is one rule (`zero_based`): bars and boxes always (a bar's length
  is its value), lines of quantities counted from zero (times, bytes, shares); lines of rates
  and counts are fitted to their data, so a 5 % throughput difference is not flattened.
- An interval never stretches an axis: the axis spans at most CLIP_SPAN times the range of the
  values plotted (`clip_window`; on a log axis, of their log); a longer one is cut at the edge
  and marked there (`plot`), its full range kept in the hover and the tables."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from torchscale.contracts.wording.axis import SECOND_UNITS, tick_labels
from torchscale.contracts.wording.spell import BYTE_UNITS, format_value
from torchscale.interfaces.formatting import log_ticks, thin_ticks
from torchscale.interfaces.report.model import Chart, Series, ValueFormat

Scale = Literal["linear", "log", "category"]
MAX_INTERVALS = 6  # a value axis has at most this many steps between its ticks
NICE_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)
PAD = 0.05  # of the span, beyond the data at an end that is not pinned at zero
LOG2_PAD = 1.25  # factor beyond the outer GPU counts / message sizes of a log x axis
ZERO_BASED_FORMATS = ("seconds", "us", "bytes", "ratio_pct", "pct")
SLANT_FROM = 12  # more categories than this: labels slanted
LEVEL_CHARS = 110  # characters of all labels side by side beyond which they are slanted
SLANTED_MAX = 34  # characters of a slanted label
LABEL_MAX = 48  # characters of a legend entry or category label; the full text is in the hover
LOG_SPAN = 10.0  # values spanning more than this many times are drawn on a log axis
CLIP_SPAN = 3.0  # an axis spans at most this many times the range of the values it plots


@dataclass(frozen=True)
class Axis:
    """One axis as both back-ends draw it. `low`/`high` and `ticks` are in the data's raw
    units (log axes too: each back-end converts to its own log coordinates); a category axis
    has `categories` (the label of position 0, 1, ...) and shows every `label_every`-th."""

    title: str
    scale: Scale
    format: ValueFormat = "text"
    low: float | None = None
    high: float | None = None
    ticks: tuple[float, ...] = ()
    tick_text: tuple[str, ...] = ()
    categories: tuple[str, ...] = field(default_factory=tuple)
    slanted: bool = False  # category labels drawn at a slant (`slants`)

    @property
    def range(self) -> tuple[float, float] | None:
        if self.low is None or self.high is None:
            return None
        return (self.low, self.high)


def zero_based(kind: str, fmt: ValueFormat) -> bool:
    """Whether a chart's value axis starts at zero (see the module docstring)."""
    return kind in ("bar", "stacked_bar", "box") or fmt in ZERO_BASED_FORMATS


def display_factor(fmt: ValueFormat, largest: float) -> float:
    """Raw value x factor = the number the tick labels show (bytes in the largest binary
    unit reached, seconds as s / ms / µs, shares as percent), so that ticks are round there."""
    largest = abs(largest)
    if fmt == "bytes":
        unit = 0
        while largest >= 1024 and unit < len(BYTE_UNITS) - 1:
            largest /= 1024
            unit += 1
        return 1024.0**-unit
    if fmt in ("seconds", "us"):
        seconds = largest / 1e6 if fmt == "us" else largest
        size = next((f for f, _ in SECOND_UNITS if seconds >= f), SECOND_UNITS[-1][0])
        return (1e-6 if fmt == "us" else 1.0) / size
    if fmt in ("ratio_pct", "change_pct", "change_pts"):
        return 100.0
    return 1.0


def nice_step(span: float, intervals: int = MAX_INTERVALS, integer: bool = False) -> float:
    """The smallest 1-2-2.5-5 x 10^k step that cuts `span` into at most `intervals` parts."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / intervals
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(s * magnitude for s in NICE_STEPS if s * magnitude >= raw * 0.999)
    if integer:
        step = max(1.0, float(math.ceil(step)))
    return step


Window = tuple[float, float]


def clip_window(points: Sequence[float], zero: bool, log: bool = False) -> Window | None:
    """The most a value axis may span: the range of the plotted `points` (zero included on a
    zero-based axis) and that range again on either side, CLIP_SPAN times it in all; on a
    log axis the same in decades. A point alone counts its distance from zero as its range
    (one decade on a log axis). None: no points."""
    if log:
        logs = [math.log10(v) for v in points if v > 0]
        if not logs:
            return None
        low, high = min(logs), max(logs)
        extra = (CLIP_SPAN - 1) / 2 * ((high - low) or 1.0)
        return (10.0 ** (low - extra), 10.0 ** (high + extra))
    values = [*points, 0.0] if zero else list(points)
    if not values:
        return None
    low, high = min(values), max(values)
    extra = (CLIP_SPAN - 1) / 2 * ((high - low) or abs(high) or 1.0)
    return (low - extra, high + extra)


def _within(values: Sequence[float], window: Window | None) -> list[float]:
    if window is None:
        return list(values)
    return [min(max(v, window[0]), window[1]) for v in values]


def linear_axis(
    title: str, fmt: ValueFormat, values: Sequence[float], zero: bool, window: Window | None = None
) -> Axis:
    """A linear value axis over `values` (finite numbers), starting at zero when `zero`, with
    round ticks in the shown unit and labels by `tick_labels`; never beyond `window` (values
    outside it are cut at its edge, which is then the axis' end)."""
    if not values:
        return Axis(title=title, scale="linear", format=fmt)
    values = _within(values, window)
    low, high = min(values), max(values)
    if zero:
        low, high = min(low, 0.0), max(high, 0.0)
    span = high - low
    if span == 0:
        span = abs(high) or 1.0
        low, high = (low - span * 0.5, high + span * 0.5) if not zero else (low, high + span)
        if zero and low < 0:
            low -= span
    # pad the ends not pinned at zero, so a marker or an error bar is not cut at the frame
    pad_low = 0.0 if zero and low == 0 else PAD * span
    pad_high = 0.0 if zero and high == 0 else PAD * span
    low, high = low - pad_low, high + pad_high
    if window is not None:
        low, high = max(low, window[0]), min(high, window[1])
    range_factor = display_factor(fmt, max(abs(low), abs(high)))
    ticks = _ticks(low, high, fmt, range_factor)
    # the labels take the unit of the largest tick: where that is a smaller unit than the
    # range's end (1,000 KiB below 1.02 MiB), the ticks are chosen again, round in that unit
    largest = max((abs(t) for t in ticks), default=0.0)
    if largest and display_factor(fmt, largest) != range_factor:
        ticks = _ticks(low, high, fmt, display_factor(fmt, largest))
    labels = tuple(tick_labels(list(ticks), fmt))
    return Axis(title, "linear", fmt, low=low, high=high, ticks=ticks, tick_text=labels)


def _ticks(low: float, high: float, fmt: ValueFormat, factor: float) -> tuple[float, ...]:
    step = nice_step((high - low) * factor, integer=fmt == "int") / factor
    first = math.ceil(low / step - 1e-9)
    last = math.floor(high / step + 1e-9)
    return tuple(_clean(i * step, step) for i in range(first, last + 1))


def _clean(value: float, step: float) -> float:
    """A tick without float dust (0.30000000000000004 -> 0.3), exact zero for -0.0."""
    digits = max(0, 12 - math.floor(math.log10(abs(step)))) if step else 12
    value = round(value, digits)
    return 0.0 if value == 0 else value


def log_axis(
    title: str, fmt: ValueFormat, values: Sequence[float], window: Window | None = None
) -> Axis:
    """A log value axis: 1-2-5 ticks (`log_ticks`) from a tick below the data to one above,
    never beyond `window`; values <= 0 cannot be drawn on it and are left out of the range."""
    positive = _within([v for v in values if v > 0], window)
    if not positive:
        return Axis(title=title, scale="log", format=fmt)
    ticks = log_ticks(min(positive), max(positive))
    low, high = ticks[0], ticks[-1]
    if window is not None:
        low, high = max(low, window[0]), min(high, window[1])
        ticks = [t for t in ticks if low * (1 - 1e-9) <= t <= high * (1 + 1e-9)]
        if len(ticks) < 2:  # a narrow window between two 1-2-5 ticks: its ends, labelled
            ticks = sorted({low, *ticks, high})
    labels = tuple(tick_labels(ticks, fmt, log=True))
    return Axis(title, "log", fmt, low=low, high=high, ticks=tuple(ticks), tick_text=labels)


def measured_log_axis(title: str, fmt: ValueFormat, values: Sequence[float]) -> Axis:
    """A log x axis with a tick at each value measured (1, 2, 4, 8 GPUs evenly spaced;
    message sizes), thinned to at most 8 labels."""
    positive = sorted({float(v) for v in values if v > 0})
    if not positive:
        return Axis(title=title, scale="log", format=fmt)
    ticks = thin_ticks(positive)
    labels = tuple(format_value(int(t) if t.is_integer() else t, fmt) for t in ticks)
    low, high = positive[0] / LOG2_PAD, positive[-1] * LOG2_PAD
    return Axis(title, "log", fmt, low=low, high=high, ticks=tuple(ticks), tick_text=labels)


def slants(categories: Sequence[str]) -> bool:
    """Whether category labels are slanted rather than level: many of them, or long ones
    that would collide side by side (both back-ends slant the same axes)."""
    widest = max((len(c) for c in categories), default=0)
    return len(categories) > SLANT_FROM or widest * len(categories) > LEVEL_CHARS


def category_axis(title: str, categories: Sequence[str], slant: bool = True) -> Axis:
    """Categories at 0, 1, 2, ...; the range leaves half a slot either side. Slanted labels
    are cut to SLANTED_MAX characters (the hover and the tables have them whole)."""
    slanted = slant and slants(categories)
    labels = tuple(short(c, SLANTED_MAX) if slanted else c for c in categories)
    return Axis(
        title=title,
        scale="category",
        low=-0.5,
        high=len(categories) - 0.5,
        ticks=tuple(float(i) for i in range(len(categories))),
        tick_text=labels,
        categories=labels,
        slanted=slanted,
    )


def short(text: str, limit: int = LABEL_MAX) -> str:
    """One line of at most `limit` characters, cut with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def spans_decades(series: list[Series], span: float = LOG_SPAN) -> bool:
    """Whether the positive values of `series` (figures and intervals) span more than `span`
    times: on a linear axis the small ones would flatten into the bottom of the chart."""
    every = [v for s in series for group in (s.y, s.low or [], s.high or []) for v in group]
    values = [v for v in every if v is not None and v > 0]
    return bool(values) and max(values) > span * min(values)


def throughput_chart(
    chart_id: str, title: str, world: str, series: list[Series], note: str
) -> Chart:
    """Samples/s over the world size (`world`: its axis label) on a log2 axis, on a log y axis
    where the series span decades (`spans_decades`)."""
    log = spans_decades(series)
    return Chart(
        id=chart_id,
        title=title,
        kind="line",
        x_label=world,
        y_label="samples/s (log scale)" if log else "samples/s",
        x_format="int",
        y_format="rate",
        x_log2=True,
        y_log=log,
        series=series,
        note=note,
    )
