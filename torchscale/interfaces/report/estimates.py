"""Text of an Estimate for a report's tables, by the one rule of contracts/wording/figures.py:
a figure with its interval, or not measurable above noise (never a value it cannot have)."""

from __future__ import annotations

from typing import Literal

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import Estimate
from torchscale.contracts.wording.figures import (
    figure_quantum,
    figure_with_interval,
    plus_minus,
    quantum_of,
    round_figure,
    round_half_up,
    too_wide,
    uncertainty_quantum,
    value_format,
)
from torchscale.contracts.wording.spell import format_value, repeats_text
from torchscale.interfaces.report.model import ValueFormat

PLUS_MINUS_NOTE = "± half the 95 % interval, [low, high] where it is lopsided"


def two_scopes_note(mfu: bool) -> str:
    """What a table that shows samples/s and step times beside each other says of their
    intervals: two estimators kept on purpose (`uncertainty.two_scopes`); `mfu`: the report
    shows an MFU, whose interval is the rate's."""
    return wording.say(Finding(code="intervals.two_scopes", figures={"mfu": mfu}))


# ---------------------------------------------------------------- figures from the cells table
# The cells table holds a figure and its interval as columns (value, low, high); these helpers
# make the Estimate back from them and print it by that rule. A figure stored without an
# interval (no repeat or bootstrap behind it) prints as the plain value, never "(spread
# unknown)".

ONE_REPEAT = Finding(code="estimate.one_unit", figures={"unit": "repeat"})


def from_columns(
    value: float | None,
    low: float | None,
    high: float | None,
    *,
    n: int = 0,
    method: str = "cells table",
    reason: Finding | None = None,
) -> Estimate | None:
    """The Estimate behind a row's value and interval columns; None when there is neither. An
    empty value with an interval left is "not measurable above noise" (the table's rule)."""
    if value is None and (low is None or high is None):
        return None
    if low is None or high is None:
        low = high = None
    measurable = value is not None
    return Estimate(value=value, low=low, high=high, n=n, measurable=measurable, reason=reason)


def compact(
    value: float | None,
    low: float | None,
    high: float | None,
    kind: ValueFormat,
    *,
    spread_unknown: bool = False,
) -> str | None:
    """A table cell: '4,076 ±9', '344.9 [215.0, 552.4]' (lopsided: `plus_minus`),
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
    quantum = uncertainty_quantum((high - low) / 2 * abs(value / base))
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


def not_measurable(repeats: int | None) -> str:
    """The first screen's words for a figure `too_wide` to use: 'not measurable (2 repeats)'."""
    if not repeats:
        return "not measurable"
    return f"not measurable ({repeats_text(repeats)})"


def withheld(
    value: float | None, low: float | None, high: float | None, repeats: int | None
) -> str | None:
    """'not measurable (2 repeats)' where a figure's interval is wider than itself
    (`too_wide`), else None: the one rule by which every surface (the live table, the report's
    tables, its first screen) withholds a figure's digits, so they call the same cells not
    measurable."""
    return not_measurable(repeats) if too_wide(value, low, high) else None


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
