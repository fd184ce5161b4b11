"""How the figures of a stated rule and its verdicts are spelled: a configured threshold as it
was set ('5 %', '0.05'), a p-value, a whole-percent change with its interval, an error of a
forecast. One place, so the rule's table, its verdicts and the first screen read alike."""

from __future__ import annotations

from torchscale.contracts.wording import counts, units

setting = units.as_set  # a configured number as it was set: 0.05 -> '0.05'
setting_pct = counts.limit_pct  # a configured share as it was set: 0.05 -> '5 %'
one_decimal = units.cores  # a load or a count measured in fractions: 1.5 (cores)


def p_figure(p: float) -> str:
    """A p-value's figure: two significant digits, '0.057'."""
    return f"{p:.2g}"


def p_value(p: float) -> str:
    """'p = 0.057'."""
    return f"p = {p_figure(p)}"


def whole_pct(change: float) -> str:
    """'-49 %', '+3 %', '-0.4 %' (a signed whole percent, a decimal under 1 %)."""
    shown = change * 100
    return f"{shown:+.1f} %" if abs(shown) < 1 else f"{shown:+.0f} %"


def whole_pct_interval(change: float, low: float | None, high: float | None) -> str:
    """'-49 % [-61, -33]' (whole percent; '-49 % [interval unknown]' without an interval)."""
    if low is None or high is None:
        return f"{whole_pct(change)} [interval unknown]"
    return f"{whole_pct(change)} [{low * 100:+.0f}, {high * 100:+.0f}]"


def error_pct(ratio: float, signed: bool = False) -> str:
    """A ratio as people read an error: 0.061 -> '6 %', 0.0042 -> '0.4 %' (a whole percent
    from 1 % up, one decimal below; '+5 %' signed)."""
    shown = abs(ratio) * 100
    text = f"{shown:.0f} %" if shown >= 0.995 else f"{shown:.1f} %"
    return ("-" if ratio < 0 else "+") + text if signed else text


def plain_figure(value: float) -> str:
    """A measured figure as a person reads it: 612, 780, 23.4, 1234, 0.0123."""
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def robust_z(z: float) -> str:
    """'3.4', or 'inf (MAD 0)' where the fleet's spread is 0."""
    return f"{z:.1f}" if z == z and abs(z) != float("inf") else f"{z} (MAD 0)"
