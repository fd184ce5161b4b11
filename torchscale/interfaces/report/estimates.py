"""Text of an Estimate for every surface: one way to say a figure with its interval, and one way
to say it is not measurable above noise (never a value it cannot have)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from torchscale.contracts.schema.cell_result import Estimate
from torchscale.interfaces.formatting import format_rounded, format_value, quantum_of, round_half_up
from torchscale.interfaces.report.model import ValueFormat

Format = Callable[[float], str]


LOPSIDED = 1.5  # one side of the interval more than this times the other: '[lo, hi]', not '±'
PLUS_MINUS_NOTE = "± half the 95 % interval, [low, high] where it is lopsided"


def lopsided(value: float, low: float, high: float) -> bool:
    """Whether 'value ± half the width' would misstate the interval [low, high]: one side
    more than LOPSIDED (1.5) times the other (a log-scale interval over 2 repeats, a share
    near 0, a percentile of few steps), the value outside the interval, or value - half below
    0 where the interval is not (a time, a rate, a share: ± would imply a value it cannot
    have)."""
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
        """'11,100 ±4,300', or '40,000 [790, 1,710,000]' where lopsided: the unit said once,
        after the figure ('35.1 ms [35.0, 35.2]', as the diagnosis lines write it)."""
        if self.half is None:
            unit = _unit(self.value)
            return f"{self.value} [{_bare(self.low, unit)}, {_bare(self.high, unit)}]"
        return f"{self.value} ±{self.half}"


def _unit(text: str) -> str:
    """The unit a figure's text ends in (' ms', ' %'), '' for a bare number."""
    number, space, unit = text.rpartition(" ")
    return f" {unit}" if space and number and not any(c.isdigit() for c in unit) else ""


def _bare(text: str, unit: str) -> str:
    """An interval's end without the unit its figure already says."""
    return text.removesuffix(unit) if unit and text.endswith(unit) else text


def round_figure(value: float, low: float, high: float, fmt: Format) -> RoundedFigure:
    """The figure, its interval's ends and half-width cut to one precision: two significant
    digits of the half-width (`figure_quantum`), the figure and both ends to the same step;
    an end smaller than the step keeps two significant digits of its own. A `fmt` without
    `rounded` gets the numbers rounded before it writes them."""
    symmetric = not lopsided(value, low, high)
    half = (high - low) / 2
    show = _rounding(fmt, figure_quantum(value, low, high), like=value)
    return RoundedFigure(show(value), show(low), show(high), show(half) if symmetric else None)


def figure_quantum(value: float, low: float, high: float) -> float | None:
    """The step a figure with this interval is rounded to: two significant digits of the
    half-width, lopsided or not. The nearer side would be finer, but a percentile at the top
    of its resamples has a nearer side of almost 0 ('57.09886 ms [54.37901, 57.09930]'): the
    width is what the figure is known to."""
    return quantum_of((high - low) / 2)


def figure_with_interval(
    value: float | None, low: float | None, high: float | None, fmt: Format
) -> str:
    """THE text of a figure with its 95 % interval, for every surface (terminal lines and
    tables, report tables, cards, Markdown): '11,100 ±4,300' (± half the interval) when it is
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


def plus_minus(estimate: Estimate, fmt: Format) -> str:
    """Compact (terminal, tables): `figure_with_interval`, '0' for a part no step had,
    'not measurable (< 3.4 ms)', or '5,927 (spread unknown)'."""
    if _exactly_zero(estimate):
        return fmt(0.0)
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


def _exactly_zero(estimate: Estimate) -> bool:
    """Zero in every resample (a part no step had, e.g. no wait at world size 1): 0, not a
    noise bound '< 0'."""
    return estimate.low == 0 and estimate.high == 0 and estimate.value in (None, 0.0)


def _bound(estimate: Estimate, fmt: Format) -> str:
    if estimate.high is None:
        return "no interval"
    if estimate.low is not None and estimate.low > 0:
        return f"{fmt(estimate.low)} to {fmt(estimate.high)}"
    return f"< {fmt(estimate.high)}"


# ---------------------------------------------------------------- figures from the cells table
# The cells table holds a figure and its interval as columns (value, low, high); these helpers
# make the Estimate back from them and print it the one way above. A figure stored without an
# interval (no repeat or bootstrap behind it) prints as the plain value, never "(spread
# unknown)".

ONE_REPEAT = "one repeat: spread unknown"


@dataclass(frozen=True)
class ValueFormatter:
    """A report value format as a `Format` (so an interval reads like the tables), whose
    figures `plus_minus` cuts to the digits their interval supports
    (`rounded`)."""

    kind: ValueFormat

    def __call__(self, value: float) -> str:
        return format_value(value, self.kind)

    def rounded(self, value: float, quantum: float | None, like: float | None = None) -> str:
        return format_rounded(value, self.kind, quantum, like)


value_format = ValueFormatter


def from_columns(
    value: float | None,
    low: float | None,
    high: float | None,
    *,
    n: int = 0,
    method: str = "cells table",
    reason: str | None = None,
) -> Estimate | None:
    """The Estimate behind a row's value and interval columns; None when there is neither. An
    empty value with an interval left is "not measurable above noise" (the table's rule)."""
    if value is None and (low is None or high is None):
        return None
    if low is None or high is None:
        low = high = None
    measurable = value is not None
    return Estimate(
        value=value, low=low, high=high, n=n, method=method, measurable=measurable, reason=reason
    )


def compact(
    value: float | None,
    low: float | None,
    high: float | None,
    kind: ValueFormat,
    *,
    spread_unknown: bool = False,
) -> str | None:
    """A table cell: '4,075.9 ±8.8', '344.9 [215.0, 552.4]' (lopsided: `plus_minus`),
    'not measurable (< 3.4 %)', '4,075.9 (spread unknown)' where the interval is missing
    because of one repeat (`spread_unknown`), else the plain value (a figure stored without an
    interval); None when there is nothing. Sentences print it the same way: one spelling."""
    estimate = from_columns(value, low, high, reason=ONE_REPEAT if spread_unknown else None)
    if estimate is None:
        return None
    if estimate.measurable and estimate.low is None and not spread_unknown:
        return format_value(value, kind)
    return plus_minus(estimate, value_format(kind))


def supported_rate(
    value: float | None, low: float | None, high: float | None
) -> tuple[float | None, ValueFormat]:
    """A rate for a key figure, cut to the digits its 95 % interval supports: (21,000, 'int')
    for 21,425.6 in [0.5, 482,125,066], as the tables print it; the value as it is ('rate')
    where the interval is narrow enough for its decimal, or unknown."""
    if value is None or low is None or high is None:
        return value, "rate"
    quantum = figure_quantum(value, low, high)
    if quantum is None or quantum < 1:
        return value, "rate"
    return round_half_up(value, quantum), "int"


def supported_figure(
    value: float | None, low: float | None, high: float | None, kind: ValueFormat
) -> tuple[float | str | None, ValueFormat]:
    """A key figure as its card shows it: the value in `kind` where that already shows the
    digits its interval supports, else the text the one rule cuts it to ('86 %' for 85.5 %
    in [57 %, 114 %]), so a card never reads finer than the interval in its own note."""
    if value is None or low is None or high is None:
        return value, kind
    text = round_figure(value, low, high, value_format(kind)).value
    return (value, kind) if text == format_value(value, kind) else (text, "text")


def scaled_rate(
    value: float | None, base: float | None, low: float | None, high: float | None
) -> float | None:
    """A rate in proportion to a figure with an interval (tokens/s and samples/s per device to
    samples/s), rounded by that interval scaled alike, so it shows no more digits than the
    figure it comes from: 81,537.6 tokens/s beside 1,274 samples/s in [1,170, 1,390] is
    81,500 (a 'readable' column writes it). As it is where the figure has no interval; an
    interval wider than the rate keeps two digits of its own."""
    if value is None or base is None or low is None or high is None or base == 0:
        return value
    quantum = quantum_of((high - low) / 2 * abs(value / base))
    if quantum is None:
        return value
    if value != 0 and abs(value) < quantum:
        quantum = quantum_of(abs(value)) or quantum
    return round_half_up(value, quantum)


# ---------------------------------------------------------------- scaling efficiency

EfficiencyKind = Literal["base", "linear within noise", "super-linear", "above linear", "plain"]
SUPER_LINEAR_NOTE = (
    "super-linear: the whole 95 % interval is above linear scaling; look for a cause (e.g. "
    "cache effects: a smaller share of the data per device fits in cache) before trusting it"
)


def efficiency_kind(
    value: float | None, low: float | None, high: float | None, *, base: bool = False
) -> EfficiencyKind:
    """Which reading an efficiency gets: above 1 it is linear within noise when its interval
    includes 1, super-linear when the whole interval is above 1, and above linear (unproven)
    without an interval; never a bare figure above 100 %."""
    if base:
        return "base"
    if value is None or value <= 1.0:
        return "plain"
    if low is None or high is None:
        return "above linear"
    return "linear within noise" if low <= 1.0 else "super-linear"


def too_wide(value: float | None, low: float | None, high: float | None) -> bool:
    """Whether a figure's 95 % interval is wider than the figure itself (74 % in [35 %,
    158 %], 38,509 in [792, 1,712,321], a lead of +193 % in [-98 %, +36,605 %]): such a range
    says nothing a decision can rest on, so the first screen says "not measurable" and shows
    no number (`not_measurable`)."""
    if value is None or low is None or high is None:
        return False
    return high - low > abs(value)


def not_measurable(repeats: int | None) -> str:
    """The first screen's words for a figure `too_wide` to use: 'not measurable (2 repeats)'."""
    if not repeats:
        return "not measurable"
    return f"not measurable ({repeats} repeat{'' if repeats == 1 else 's'})"


def efficiency_phrase(
    efficiency: float | None, low: float | None, high: float | None, repeats: int | None = None
) -> str:
    """How one configuration scales, in a few words: '79.0 % ±5.0 % of linear', 'linear
    within noise', 'super-linear (120 % ±10 %: check for cache effects)', '90.0 % of linear
    (one repeat)', 'not measurable (above linear on one repeat)', and 'not measurable (2 repeats)'
    where the interval is wider than the figure (`too_wide`): such a range says nothing about
    how the model scales, so no number is given."""
    kind = efficiency_kind(efficiency, low, high)
    if efficiency is None:
        return "not measurable"
    if too_wide(efficiency, low, high):
        return not_measurable(repeats)
    if kind == "above linear":
        return "not measurable (above linear on one repeat)"
    if kind == "linear within noise":
        return "linear within noise"
    if low is None or high is None:
        return f"{format_value(efficiency, 'ratio_pct')} of linear (one repeat)"
    spelled = figure_with_interval(efficiency, low, high, value_format("ratio_pct"))
    if kind == "super-linear":
        return f"super-linear ({spelled}: check for cache effects)"
    return f"{spelled} of linear"


def efficiency_text(
    value: float | None, low: float | None, high: float | None, *, base: bool = False
) -> str | None:
    """An efficiency with its interval, spelled as every figure is (`plus_minus`): 'linear
    within noise (115 % ±17 %)' rather than a bare '115 %' above 1, '130.0 % ±16.5 %
    (super-linear)', '30.2 % [13.0, 84.4]' for a lopsided one; the base is '100.0 % (base)'."""
    if value is None:
        return None
    pct = value_format("ratio_pct")
    kind = efficiency_kind(value, low, high, base=base)
    if kind == "base":
        return f"{pct(value)} (base)"
    if kind == "above linear":
        return f"{pct(value)} (above linear; spread unknown: one repeat)"
    estimate = from_columns(value, low, high, reason=None if low is not None else ONE_REPEAT)
    shown = plus_minus(estimate, pct) if estimate is not None else pct(value)
    if kind == "linear within noise":
        return f"linear within noise ({shown})"
    return f"{shown} (super-linear)" if kind == "super-linear" else shown
