"""Figures spelled as the diagnosis, the trace analyses and the profile's lines have always
written them (a whole-percent share, a duration in three significant figures, a p-value, a
ratio): one function per spelling, so a module outside the wording layer never formats a
number itself (tests/project/test_figures_spelled_once.py). Kept apart from figures.py, whose
rules (intervals, rounding) these do not follow.
"""

from __future__ import annotations

from torchscale.contracts.wording import units

pct_whole = units.whole_pct  # a share as a whole percent: 0.5 -> '50 %'
one_decimal = units.cores  # a plain number with one decimal: '1.8' (cores, a mean's counts)

MIB = 2**20


def pct_signed_whole(share: float) -> str:
    """A change as a signed whole percent: 0.17 -> '+17 %'."""
    return f"{share * 100:+.0f} %"


def pct_one(share: float) -> str:
    """A share as a percent with one decimal: 0.05 -> '5.0 %'."""
    return f"{share * 100:.1f} %"


def percent_one(value_pct: float) -> str:
    """A figure already in percent, one decimal: 45.12 -> '45.1 %'."""
    return f"{value_pct:.1f} %"


def percent_whole(value_pct: float) -> str:
    """A figure already in percent, whole: 10.4 -> '10 %'."""
    return f"{value_pct:.0f} %"


def signed_whole(value: float) -> str:
    """A signed whole number: '+3', '-10'."""
    return f"{value:+.0f}"


def p_value(p: float) -> str:
    """A p-value, two significant digits: 'p = 0.002'."""
    return f"p = {p:.2g}"


def ms_sig(seconds: float, digits: int = 3) -> str:
    """A duration in milliseconds to `digits` significant figures: '59.2 ms'."""
    return f"{seconds * 1e3:.{digits}g} ms"


def ms_signed_sig(seconds: float, digits: int = 3) -> str:
    """A signed duration in milliseconds to `digits` significant figures: '+50.6 ms'."""
    return f"{seconds * 1e3:+.{digits}g} ms"


def sig(value: float, digits: int = 3) -> str:
    """A number to `digits` significant figures: '59.2'."""
    return f"{value:.{digits}g}"


def trace_us(us: float) -> str:
    """Microseconds as the trace findings write them: '50.54 ms' from 1 ms on, else '412 µs'."""
    return f"{us / 1000.0:.2f} ms" if abs(us) >= 1000 else f"{us:.0f} µs"


def us_whole(us: float) -> str:
    """Microseconds, whole: '412 µs'."""
    return f"{us:.0f} µs"


def us_one(us: float) -> str:
    """Microseconds, one decimal: '41.2 µs'."""
    return f"{us:.1f} µs"


def profile_us(us: float) -> str:
    """Microseconds as the profile's lines write them: ms with two decimals (three under 1 ms),
    seconds with two decimals from 10 s on."""
    seconds = us / 1e6
    if abs(seconds) >= 10:
        return f"{seconds:.2f} s"
    milliseconds = seconds * 1e3
    return f"{milliseconds:.2f} ms" if abs(milliseconds) >= 1 else f"{milliseconds:.3f} ms"


def ms_plain(milliseconds: float) -> str:
    """Milliseconds as given on the command line: 50 -> '50 ms', 2.5 -> '2.5 ms'."""
    return f"{milliseconds:g} ms"


def times(ratio: float, decimals: int = 1) -> str:
    """A ratio: '2.2x'."""
    return f"{ratio:.{decimals}f}x"


def mib(size_bytes: float, decimals: int = 0) -> str:
    """Bytes in MiB with thousands separators: '1,234 MiB'."""
    return f"{size_bytes / MIB:,.{decimals}f} MiB"


def mhz(value: float) -> str:
    return f"{value:.0f} MHz"


def celsius(value: float) -> str:
    return f"{value:.0f} °C"


def watts(value: float) -> str:
    return f"{value:.0f} W"


def ms_count(value: float) -> str:
    """A whole count of milliseconds: '100 ms'."""
    return f"{value} ms"


def samples_per_s(readable_value: str) -> str:
    """A throughput already made readable: '1.2k samples/s'."""
    return f"{readable_value} samples/s"


def trace_seconds(seconds: float) -> str:
    """Seconds as the trace findings write them (`trace_us`)."""
    return trace_us(seconds * 1e6)


def pct_small(share: float) -> str:
    """A share too small for one decimal, to its first two significant digits: '0.054 %'."""
    return f"{100.0 * share:.2g} %"


def under_pct(bound: str) -> str:
    """A share's upper bound already spelled: '< 3.2 %'."""
    return f"< {bound} %"


def plain_times(ratio: float) -> str:
    """A ratio as given: 0.5 -> '0.5x'."""
    return f"{ratio:g}x"


def plain_us(us: float) -> str:
    """Microseconds as given: 50 -> '50 µs'."""
    return f"{us:g} µs"


def ms_list(values: list[int]) -> str:
    """Sampling intervals: [100, 500] -> '100/500 ms'."""
    return f"{'/'.join(map(str, values))} ms"
