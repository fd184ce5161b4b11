"""How a figure with its 95 % interval is written, on every surface and in every stored
sentence, in one spelling ('11,100 ±3,000' where the
interval is about symmetric, '40,000 [790, 1,710,000]' where it is lopsided, the unit said
once, the digits cut to the one or two significant digits the half-width supports).
Contracts, because the offline analysis writes evidence sentences the reports print beside
their tables: one rule for both (docs/reporting.md, "Uncertainty"). Pure functions of numbers
and `Estimate`s; the number itself is spelled by spell.py."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import Estimate
from torchscale.contracts.wording import why
from torchscale.contracts.wording.spell import (
    ValueFormat,
    format_value,
    number_of,
    pct,
    pct_below,
    readable,
    three_figures,
)


@dataclass(frozen=True)
class ReadableLike:
    """The format `readable` gives `figure`, for its interval's ends and half-width too (one
    figure, one precision: '4,076', '0.420'); a figure that is not finite prints as Python
    writes it ('nan', 'inf'). `rounded` rounds to an interval by the one rule
    (`format_rounded`), so a figure with its interval reads as every other surface writes it."""

    figure: float

    def __call__(self, value: float) -> str:
        return readable(value, like=self.figure)

    def rounded(self, value: float, quantum: float | None, like: float | None = None) -> str:
        return format_rounded(value, "readable", quantum)


readable_like = ReadableLike


# value formats that `format_rounded` can cut to an interval's precision: (scale, prefix, suffix)
_SCALED: dict[str, tuple[float, str, str]] = {
    "rate": (1.0, "", ""),
    "readable": (1.0, "", ""),
    "float": (1.0, "", ""),
    "int": (1.0, "", ""),
    "pct": (1.0, "", " %"),
    "ratio_pct": (100.0, "", " %"),
    "pts": (100.0, "", " pts"),
    "money": (1.0, "$", ""),
}


def _scale(value: float, fmt: ValueFormat) -> tuple[float, str, str] | None:
    """How `format_value` shows `value`: (scale from the raw unit, prefix, suffix)."""
    if fmt in ("seconds", "us"):
        raw = value if fmt == "seconds" else value / 1e6
        base = 1.0 if fmt == "seconds" else 1e-6
        size = abs(raw)
        if size < 1e-3:
            return 1e6 * base, "", " µs"
        if size < 1.0:
            return 1e3 * base, "", " ms"
        return base, "", " s"
    return _SCALED.get(fmt)


def format_rounded(
    value: Any, fmt: ValueFormat, quantum: float | None, like: float | None = None
) -> str:
    """`value` in `fmt`, cut to the precision `quantum` (a step in the raw unit, from `quantum_of`)
    supports: the interval, not the format, decides the digits (39,989.3 with ±26,235.3 is '40,000';
    0.4213 with ±0.031 is '0.421'), so 'rate' and 'readable' read alike wherever an interval is
    known. A number smaller than the step keeps two significant digits of its own (the low end 792
    of an interval rounded to thousands is '790', never '1,000' or '0'); 'int' never shows decimals.
    `like`: the figure whose unit it takes (an interval's ends and half-width read in their figure's
    unit: '28.8 ms ±0.9 ms', never '±870 µs'). Without a step: `format_value`."""
    plain = format_value(value, fmt)
    number = number_of(value)
    if number is None or quantum is None or not quantum > 0 or not math.isfinite(quantum):
        return plain
    shown = _scale(number if like is None else like, fmt)
    if shown is None:
        return plain
    scale, prefix, suffix = shown
    if number != 0 and abs(number) < quantum:
        quantum = quantum_of(abs(number)) or quantum
    step = quantum * scale
    if fmt == "int":
        step = max(step, 1.0)
    if step < 1e-4 and not prefix and not suffix:  # fixed point would be a row of zeros
        digits = max(
            2,
            math.floor(math.log10(abs(number * scale) or step)) - math.floor(math.log10(step)) + 1,
        )
        return f"{number * scale:.{digits}g}"
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    # half up, on the shown digits (0.165 x 100 is 16.499999...: 17, as a reader rounds it)
    rounded = round_half_up(number * scale, step)
    sign = "-" if rounded < 0 else ""
    return f"{sign}{prefix}{abs(rounded):,.{decimals}f}{suffix}"


def round_half_up(number: float, step: float) -> float:
    """`number` to a multiple of `step`, halves away from zero as a reader rounds (0.165 on
    0.01 is 0.17, though 0.165 x 100 is 16.4999...)."""
    units = round(abs(number) / step, 9)
    return math.copysign(math.floor(units + 0.5) * step, number)


def quantum_of(number: float | None) -> float | None:
    """The step that keeps two significant figures of `number` (26,235.3 -> 1,000; 8.8 ->
    0.1): a figure's own digits where no interval decides them; None unless positive."""
    if number is None or not number > 0 or not math.isfinite(number):
        return None
    return float(10 ** (math.floor(math.log10(number)) - 1))


def uncertainty_quantum(spread: float | None) -> float | None:
    """The rounding step an uncertainty of `spread` supports, by the Particle Data Group's
    rule: two significant digits where its three leading digits are 100-354 (±26,235.3 ->
    1,000; ±0.23 -> 0.01), else one (±0.047 -> 0.01, shown ±0.05; ±97 -> 10, shown ±100), so
    no digit is printed that the interval does not support. None without a positive spread."""
    step = quantum_of(spread)
    if step is None or spread is None:
        return step
    return step if round(spread / step, 9) < 35.5 else step * 10


Format = Callable[[float], str]
LOPSIDED = 1.5  # one side of the interval more than this times the other: '[lo, hi]', not '±'


def lopsided(value: float, low: float, high: float) -> bool:
    """Whether 'value ± half the width' would misstate the interval [low, high]: one side more than
    LOPSIDED (1.5) times the other (a log-scale interval over 2 repeats, a share near 0, a
    percentile of few steps), the value outside the interval, or value - half below 0 where the
    interval is not (a time, a rate, a share: ± would imply a value it cannot have)."""
    below, above = value - low, high - value
    if below < 0 or above < 0:
        return True
    if max(below, above) > LOPSIDED * min(below, above):
        return True
    return low >= 0 and value - (high - low) / 2 < 0


@dataclass(frozen=True)
class RoundedFigure:
    """A figure and its interval as text, every number cut by the one rule
    (`figure_with_interval`); `half` is None where the interval is lopsided."""

    value: str
    low: str
    high: str
    half: str | None

    def compact(self) -> str:
        """'11,100 ±3,000', or '40,000 [790, 1,710,000]' where lopsided: the unit said once,
        after the figure ('35.1 ms [35.0, 35.2]', as the diagnosis lines write it)."""
        if self.half is None:  # the unit the figure's text ends in (' ms', ' %'), said once
            number, space, unit = self.value.rpartition(" ")
            unit = f" {unit}" if space and number and not any(c.isdigit() for c in unit) else ""
            return f"{self.value} [{self.low.removesuffix(unit)}, {self.high.removesuffix(unit)}]"
        return f"{self.value} ±{self.half}"


def round_figure(value: float, low: float, high: float, fmt: Format) -> RoundedFigure:
    """The figure, its interval's ends and half-width cut to one precision: what the
    half-width supports (`figure_quantum`), the figure and both ends to the same step;
    an end smaller than the step keeps two significant digits of its own (`_rounding`)."""
    symmetric = not lopsided(value, low, high)
    half = (high - low) / 2
    step = figure_quantum(value, low, high)
    show = _rounding(fmt, step, like=value)
    # an end smaller than the step keeps digits of its own; a figure beside '±' never reads
    # finer than it ('-0.01 % ±0.04 %', never '-0.0087 % ±0.04 %')
    shown = round_half_up(value, step) if symmetric and step and abs(value) < step else value
    return RoundedFigure(show(shown), show(low), show(high), show(half) if symmetric else None)


def figure_quantum(value: float, low: float, high: float) -> float | None:
    """The step a figure with this interval is rounded to. Printed '±half': what the
    half-width supports (`uncertainty_quantum`: one or two digits). Printed '[low, high]'
    (`lopsided`): two significant digits of the half-width, as the ends are read as numbers
    of their own ('30 % [13, 84]', not '[10, 80]'); the nearer side would be finer, but a
    percentile at the top of its resamples has a nearer side of almost 0 ('57.09886 ms
    [54.37901, 57.09930]'): the width is what the figure is known to."""
    half = (high - low) / 2
    return quantum_of(half) if lopsided(value, low, high) else uncertainty_quantum(half)


def figure_with_interval(
    value: float | None, low: float | None, high: float | None, fmt: Format
) -> str:
    """THE text of a figure with its 95 % interval, for every surface (terminal lines and
    tables, report tables, cards, Markdown): '11,100 ±3,000' (± half the interval) when it is
    about symmetric, '40,000 [790, 1,710,000]' when it is `lopsided`, each number rounded by
    `round_figure` so terminal and reports print the same digits; the plain figure without
    an interval, '-' without a figure."""
    if value is None or not math.isfinite(value):
        return "-"
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return fmt(value)
    if high == low:  # every repeat alike: the figure as it is, no '±0'
        return fmt(value)
    return round_figure(value, low, high, fmt).compact()


def too_wide(value: float | None, low: float | None, high: float | None) -> bool:
    """Whether a figure's 95 % interval is wider than the figure itself (74 % in [35 %,
    158 %], 38,509 in [792, 1,712,321], a lead of +193 % in [-98 %, +36,605 %]): such a range
    says nothing a decision can rest on, so the first screen says "not measurable" and shows
    no number. The one rule for every figure, lead and gain."""
    if value is None or low is None or high is None:
        return False
    return high - low > abs(value)


def exactly_zero(estimate: Estimate) -> bool:
    """Zero in every resample (interval [0, 0]): a part no step had, not a noise bound."""
    return estimate.low == 0 and estimate.high == 0 and estimate.value in (None, 0.0)


def plus_minus(estimate: Estimate, fmt: Format) -> str:
    """Compact (terminal, tables): `figure_with_interval`, '0' for a part no step had,
    'not measurable (< 3.4 ms)', or '5,927 (spread unknown)'."""
    if exactly_zero(estimate):
        return fmt(0.0)  # zero in every resample: 0, not a noise bound '< 0'
    if not estimate.measurable or estimate.value is None:
        return f"not measurable ({_bound(estimate, fmt)})"
    if estimate.low is None or estimate.high is None:
        return f"{fmt(estimate.value)} (spread unknown)"
    return figure_with_interval(estimate.value, estimate.low, estimate.high, fmt)


def _rounding(fmt: Format, quantum: float | None, like: float | None = None) -> Format:
    """`fmt` cut to the step `quantum`: by its own `rounded` where it has one (a report value
    format, `readable_like`), in the unit of the figure `like`, else by rounding the number
    before `fmt` writes it."""
    rounded = getattr(fmt, "rounded", None)
    if rounded is not None:
        return lambda value: str(rounded(value, quantum, like))
    if quantum is None:
        return fmt

    def show(value: float) -> str:
        step = quantum if value == 0 or abs(value) >= quantum else quantum_of(abs(value))
        return fmt(round_half_up(value, step) if step else value)

    return show


def _bound(estimate: Estimate, fmt: Format) -> str:
    if estimate.high is None:
        return "no interval"
    if estimate.low is not None and estimate.low > 0:
        return f"{fmt(estimate.low)} to {fmt(estimate.high)}"
    return f"< {fmt(estimate.high)}"


@dataclass(frozen=True)
class ValueFormatter:
    """A report value format as a `Format` (so an interval reads like the tables), whose
    figures `plus_minus` cuts to the digits their interval supports (`rounded`)."""

    kind: ValueFormat

    def __call__(self, value: float) -> str:
        return format_value(value, self.kind)

    def rounded(self, value: float, quantum: float | None, like: float | None = None) -> str:
        return format_rounded(value, self.kind, quantum, like)


value_format = ValueFormatter


def share_text(estimate: Estimate | None) -> str:
    """'40.1 % [38.4, 41.4]', '0.0 %' (none in any step), 'none (one rank: no peers to wait
    for)' (zero by its reason, not measured), 'not measurable (< 0.4 %)', '12.0 % (spread
    unknown)' (or the estimate's reason for having no interval), 'not measurable (its
    reason)' where it has no bound, or 'unknown'."""
    if estimate is None:
        return "unknown"
    if exactly_zero(estimate):
        zero_by_reason = estimate.value == 0.0 and estimate.measurable and estimate.reason
        return f"none ({why(estimate.reason)})" if zero_by_reason else pct(0.0)
    if estimate.value is None or not estimate.measurable:
        if estimate.high is not None:
            return f"not measurable ({pct_below(estimate.high)})"
        return f"not measurable ({why(estimate.reason)})" if estimate.reason else "unknown"
    if estimate.low is None or estimate.high is None:
        return f"{pct(estimate.value)} ({why(estimate.reason) or 'spread unknown'})"
    if estimate.low == estimate.high:  # every resample alike: the figure, no '±0'
        return pct(estimate.value)
    return _spelled(_rounded(estimate.value, estimate.low, estimate.high, 100.0), "%")


def _rounded(value: float, low: float, high: float, scale: float) -> RoundedFigure:
    """The figure and its interval in the unit `scale` gives them (100: a share in %, 1e3:
    seconds in ms), as numbers cut by the one rounding rule; three significant figures where
    the interval is narrower than that (a sentence never grows a row of digits), its ends and
    half-width to the figure's decimals ('2.36 ms ±0.10 ms', never '±0.0972 ms')."""
    value, low, high = value * scale, low * scale, high * scale
    step, finest = figure_quantum(value, low, high), quantum_of(abs(value))
    shown = f"{value:.1f}" if scale == 100.0 else three_figures(value)
    decimals = len(shown.rpartition(".")[2]) if "." in shown else 0
    # a half-width these decimals would print as 0 takes the one rule's digits instead
    kept = float(f"{(high - low) / 2:.{decimals}f}") > 0
    if kept and (step is None or (finest is not None and step < finest / 10)):

        def alike(number: float) -> str:
            return f"{number:,.{decimals}f}"

        half = None if lopsided(value, low, high) else alike((high - low) / 2)
        return RoundedFigure(value=shown, low=alike(low), high=alike(high), half=half)
    return round_figure(value, low, high, value_format("float"))


def seconds_text(estimate: Estimate | None, *, signed: bool = False) -> str:
    """'+52.6 ms [49.9, 55.3]': in the unit its largest number reads best in (s, ms or µs),
    the interval in the same unit; '+7.48 µs (no interval)'; 'not measurable (< 8 µs)'."""
    if estimate is None or (estimate.value is None and estimate.high is None):
        return "unknown"
    shown_ends = (estimate.high,) if estimate.value is None else (estimate.low, estimate.high)
    largest = max(abs(e) for e in (estimate.value, *shown_ends) if e is not None)
    # '+8 µs [-12, 24]', never '+0.00785 ms'; a bare 0 in ms
    scale, unit = (1.0, "s") if largest >= 10 else (1e3, "ms") if largest >= 1e-3 else (1e6, "µs")
    scale, unit = (1e3, "ms") if largest == 0 else (scale, unit)
    if estimate.value is None:
        bound = float(estimate.high or 0.0)
        if bound > 0:
            return f"not measurable (< {three_figures(bound * scale)} {unit})"
        return "not measurable"
    value_s = estimate.value + 0.0  # no '-0'
    sign = "+" if signed and value_s >= 0 else ""
    if estimate.low is None or estimate.high is None or estimate.low == estimate.high:
        said = "" if estimate.low is not None else f" ({why(estimate.reason) or 'spread unknown'})"
        return f"{sign}{three_figures(value_s * scale)} {unit}{said}"
    shown = _rounded(value_s, estimate.low, estimate.high, scale)
    value = shown.value if shown.value.startswith("-") else f"{sign}{shown.value}"
    straddles = estimate.low < 0 < estimate.high
    return _spelled(replace(shown, value=value), unit, straddles)


def _spelled(shown: RoundedFigure, unit: str, straddles: bool = False) -> str:
    """'5.7 % ±1.9 %' where the interval is about symmetric, '+3.1 ms [1.0, 4.4]' where it is
    lopsided (the tables' one rule, `lopsided`) or `straddles` 0 (a gap whose verdict
    turns on whether its interval reaches 0 shows both ends), the unit said after the figure."""
    if shown.half is None or straddles:
        return f"{shown.value} {unit} [{shown.low}, {shown.high}]"
    return f"{shown.value} {unit} ±{shown.half} {unit}"


def gap_text(mean: float | None, low: float | None, high: float | None) -> str:
    """A signed gap in seconds with its interval, for a sentence: '+13 ms ±4 ms', '+0.4 ms
    [-0.2, 1.2]' where it reaches 0 (`seconds_text`); '?' without a figure."""
    if mean is None:
        return "?"
    reason = Finding(code="estimate.no_interval") if low is None or high is None else None
    estimate = Estimate(value=mean, low=low, high=high, n=0, measurable=True, reason=reason)
    return seconds_text(estimate, signed=True)


def change_text(change: float, low: float | None, high: float | None) -> str:
    """A signed relative change with its interval: '+76.4 % ±19.6 %', '-12 % [-30, -3]'."""
    shown = figure_with_interval(change, low, high, value_format("ratio_pct"))
    return shown if shown.startswith("-") else f"+{shown}"


def share_figure(value: float, low: float | None, high: float | None) -> str:
    """A share without its interval, to the digits `share_text` gives it with one: a step
    split beside its 'Sync stall 1.71 % ±0.23 %' says 'waiting 1.71 %', not '1.7 %'."""
    if low is None or high is None or high == low:
        return pct(value)
    shown = _rounded(value, low, high, 100.0).value
    if len(shown.replace(".", "").replace(",", "").lstrip("0")) > 3:
        shown = three_figures(value * 100)  # no interval beside it: 'rest 0.172 %', not '0.1723 %'
    return f"{shown} %"


def glued_figure(value: float | None, low: float | None, high: float | None, fmt: Format) -> str:
    """A figure as a table cell holds it, its interval glued to it so a narrow column never
    breaks it ('11,100±4,300'): `figure_with_interval` with no space before the '±'; the same
    text where there is no '±' (no interval, or a lopsided one in brackets)."""
    ends = (value, low, high)
    if any(x is None or not math.isfinite(x) for x in ends) or high == low:
        return figure_with_interval(value, low, high, fmt)
    assert value is not None and low is not None and high is not None
    shown = round_figure(value, low, high, fmt)
    return shown.compact() if shown.half is None else f"{shown.value}±{shown.half}"
