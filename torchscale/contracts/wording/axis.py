"""How a chart's axis ticks are labelled: read like `spell.format_value` but with the fewest
decimals that tell the ticks apart (0, 0.5, 1), and 20k rather than 20,000 once the axis
reaches `ABBREVIATE_FROM`. One rule for both chart back-ends (plotly is given these labels)."""

from __future__ import annotations

from collections.abc import Sequence

from torchscale.contracts.wording.spell import BYTE_UNITS, ValueFormat, fixed

ABBREVIATE_FROM = 10_000.0  # an axis reaching this labels thousands as 20k, millions as 2M
_SI = ((1e9, "G"), (1e6, "M"), (1e3, "k"))
_TICK_DECIMALS = 6
SECOND_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"))  # the largest the axis reaches


def _decimals(values: Sequence[float]) -> int:
    """The fewest decimals that write every value exactly (axis ticks are round numbers, so
    exact is what tells them apart): 20,000 and 0.25, never 20,000.0 and 0.250."""
    for decimals in range(_TICK_DECIMALS + 1):
        if all(abs(v - round(v, decimals)) <= 1e-9 * max(1.0, abs(v)) for v in values):
            return decimals
    return _TICK_DECIMALS


def _plain_ticks(values: Sequence[float], suffix: str = "", sign: bool = False) -> list[str]:
    """Each value with its own fewest decimals (0, 0.5, 1), as d3's `~` trims them in the
    HTML charts."""
    out = []
    for v in values:
        decimals = _decimals([v])
        text = fixed(v, decimals, signed=sign and round(v, decimals) != 0)
        out.append(("0" if text in ("-0", "+0") else text) + suffix)
    return out


def _abbreviated(values: Sequence[float]) -> list[str]:
    """Thousands and up as 20k, 1.5M; smaller values as they are."""
    out = []
    for v in values:
        factor, unit = next(((f, u) for f, u in _SI if abs(v) >= f), (1.0, ""))
        out.append(_plain_ticks([v / factor])[0] + unit)
    return out


def _unit_ticks(values: Sequence[float], units: Sequence[tuple[float, str]]) -> list[str]:
    """Values scaled to the largest unit the largest of them reaches, fewest decimals."""
    largest = max((abs(v) for v in values), default=0.0)
    factor, name = next(((f, u) for f, u in units if largest >= f), units[-1])
    return _plain_ticks([v / factor for v in values], f" {name}")


def tick_labels(values: Sequence[float], fmt: ValueFormat, log: bool = False) -> list[str]:
    """Axis tick labels for `values` in `fmt`: read like `format_value` but with the fewest
    decimals that tell the ticks apart, and 20k rather than 20,000 once the axis reaches
    `ABBREVIATE_FROM` (or on a log axis, where ticks span decades). One rule for the SVG
    charts; the plotly charts ask d3 for the same (`plotly_charts`)."""
    numbers = [float(v) for v in values]
    if not numbers:
        return []
    if fmt in ("int", "float", "rate", "readable", "text"):
        if log or max(abs(v) for v in numbers) >= ABBREVIATE_FROM:
            return _abbreviated(numbers)
        return _plain_ticks(numbers)
    if fmt == "ratio_pct":
        return _plain_ticks([v * 100 for v in numbers], " %")
    if fmt == "pct":
        return _plain_ticks(numbers, " %")
    if fmt == "change_pct":
        return _plain_ticks([v * 100 for v in numbers], " %", sign=True)
    if fmt == "change_pts":
        return _plain_ticks([v * 100 for v in numbers], " pts", sign=True)
    if fmt == "money":
        return ["$" + text for text in _plain_ticks(numbers)]
    if fmt == "seconds":
        return _unit_ticks(numbers, SECOND_UNITS)
    if fmt == "us":
        return _unit_ticks([v / 1e6 for v in numbers], SECOND_UNITS)
    if fmt == "bytes":
        units = [(1024.0**i, unit) for i, unit in reversed(list(enumerate(BYTE_UNITS)))]
        return _unit_ticks(numbers, units)
    raise ValueError(f"unknown value format {fmt!r}")
