"""How every figure is spelled, one way per kind: a share, a change, a duration, a count, bytes,
a ratio, a rate, a plain number, money. The one place a number becomes text: no other module
formats one itself (tests/project/test_figures_spelled_once.py); a figure with its 95 %
interval is figures.py's, built on these.

A template of the wording catalogue names a figure's spelling after its colon (`{gap:ms}`,
`{share:share}`): `SPECS` maps each name to its function, the report's value formats
(`format_value`: 'ratio_pct', 'seconds', 'money', ...) among them. Where two spellings of a
kind both stay, their names say how they differ ('pct_whole' and 'change_whole', 'ms_sig' and
'ms' (in the unit that fits), 'mib' and 'gib')."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from typing import Any, Literal

# how a renderer formats a value; raw values stay in the report model
ValueFormat = Literal[
    "text",  # as is
    "int",  # 1,234
    "float",  # 3 significant figures
    "ratio_pct",  # 0.123 -> 12.3 %
    "pct",  # 12.3 -> 12.3 % (already a percentage)
    "seconds",  # 0.0123 -> 12.3 ms
    "us",  # microseconds -> ms / s as fits
    "bytes",  # 1048576 -> 1.0 MiB
    "rate",  # samples/s, tokens/s: 1,234.5
    "readable",  # a rate read at a glance: 2,886, 42.1, 0.421 (three significant figures below 100)
    "change_pct",  # signed ratio: +0.052 -> +5.2 %
    "change_pts",  # signed difference of two shares: +0.123 -> +12.3 pts (percentage points)
    "pts",  # unsigned difference of two shares: 0.123 -> 12.3 pts
    "money",  # 1.234 -> $1.23
]

MISSING = "-"
BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
MB = 10**6
MIB = 2**20
GIB = 1024**3
_SI = (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


# ---- shares (a fraction in) ------------------------------------------------------------------


def pct(share: float) -> str:
    """A share as a percent with one decimal: 0.05 -> '5.0 %'."""
    return f"{share * 100:.1f} %"


def pct_whole(share: float | None) -> str:
    """A threshold or a share in whole percent: 0.3 -> '30 %'; '-' where there is none."""
    return MISSING if share is None else f"{share * 100:.0f} %"


def pct_fine(value: float) -> str:
    """A share with one decimal, two below 1 % (a '±0.0 %' would hide a measured interval)."""
    return f"{value * 100:.2f} %" if abs(value) < 0.01 else f"{value * 100:.1f} %"


def pct_small(share: float) -> str:
    """A share too small for one decimal keeps its first two significant digits: '12.3 %',
    '0.1 %', below 0.1 % '0.054 %'."""
    return pct(share) if share >= 0.001 else f"{100.0 * share:.2g} %"


def pct_set(fraction: float) -> str:
    """A threshold as a percentage, as short as it is set: 0.1 -> '10 %', 0.025 -> '2.5 %'."""
    return f"{fraction * 100:g} %"


def pct_narrow(share: float) -> str:
    """A share at most 5 characters wide: '4.2 %' below 10 %, '64 %' from it."""
    return f"{share * 100:.1f} %" if share < 0.0995 else pct_whole(share)


def share_bound(high: float, places: int = 1) -> str:
    """The upper bound of a share inside its noise, `high` (a fraction) in percent at `places`
    decimals: rounded up and never below one unit of them, since '< 0.0 %' reads as a share
    below zero (a real GPU trace's data wait: microseconds of a 34 ms step)."""
    unit = 10.0**-places
    units = math.ceil(round(high * 100 / unit, 6))  # round first: 4.2 stays 4.2, not 4.3
    return f"{max(1, units) * unit:.{places}f}"


def pct_bound(high: float) -> str:
    """A share's upper bound: '0.1 %' for microseconds of a step, never '0.0 %'."""
    return f"{share_bound(high)} %"


def pct_below(high: float, places: int = 1) -> str:
    """A share known only to lie below `high`: '< 0.1 %', '< 3 %' (places=0)."""
    return f"< {share_bound(high, places)} %"


def pct_below_glued(high: float) -> str:
    """`pct_below` in whole percent with no space, for the live table's narrow column: '<3 %'."""
    return f"<{share_bound(high, places=0)} %"


# ---- percentages (already in percent) --------------------------------------------------------


def percent(value_pct: float) -> str:
    """A figure already in percent, one decimal: 45.12 -> '45.1 %'."""
    return f"{value_pct:.1f} %"


def percent_whole(value_pct: float) -> str:
    """A figure already in percent, whole: 10.4 -> '10 %'."""
    return f"{value_pct:.0f} %"


# ---- changes (signed) ------------------------------------------------------------------------


def change_pct(change: float) -> str:
    """A signed relative change, one decimal: 0.052 -> '+5.2 %'."""
    return f"{change * 100:+.1f} %"


def change_whole(change: float) -> str:
    """A change as a signed whole percent: 0.17 -> '+17 %'."""
    return f"{change * 100:+.0f} %"


def change_whole_fine(change: float) -> str:
    """A change as a signed whole percent, one decimal under 1 % (where `change_whole` reads
    '+0 %'): '-49 %', '+3 %', '-0.4 %'."""
    shown = change * 100
    return f"{shown:+.1f} %" if abs(shown) < 1 else f"{shown:+.0f} %"


def change_whole_interval(change: float, low: float | None, high: float | None) -> str:
    """'-49 % [-61, -33]' (`change_whole_fine`; '-49 % [interval unknown]' without one)."""
    if low is None or high is None:
        return f"{change_whole_fine(change)} [interval unknown]"
    return f"{change_whole_fine(change)} [{low * 100:+.0f}, {high * 100:+.0f}]"


def change_pts(difference: float) -> str:
    """A change of a share or percentage (efficiency, MFU, a share of the step) in percentage
    points: 0.302 -> 0.417 is '+11.5 pts', never the relative '+38.1 %'."""
    return f"{difference * 100:+.1f} pts"


def points(width: float) -> str:
    """A width of shares in percentage points, unsigned: 0.1 -> '10.0 pts'."""
    return f"{width * 100:.1f} pts"


def error_pct(ratio: float, signed: bool = False) -> str:
    """A ratio as people read an error: 0.061 -> '6 %', 0.0042 -> '0.4 %' (a whole percent
    from 1 % up, one decimal below; '+5 %' signed)."""
    shown = abs(ratio) * 100
    text = f"{shown:.0f} %" if shown >= 0.995 else f"{shown:.1f} %"
    return ("-" if ratio < 0 else "+") + text if signed else text


# ---- durations -------------------------------------------------------------------------------


def seconds(value: float) -> str:
    """Seconds as µs / ms / s, three significant figures."""
    size = abs(value)
    if size == 0:
        return "0 s"
    if size < 1e-3:
        return f"{significant(value * 1e6)} µs"
    if size < 1.0:
        return f"{significant(value * 1e3)} ms"
    return f"{significant(value)} s"


def us(value: float) -> str:
    """Microseconds as `seconds` writes them: 412 -> '412 µs', 52600 -> '52.6 ms'."""
    return seconds(value / 1e6)


def ms_or_s(seconds: float) -> str:
    """A duration in ms, whatever its size: '52.6 ms', '0.412 ms', '348 ms', '1,234 ms'; from
    10 s on '13.3 s'."""
    if abs(seconds) >= 10:
        return f"{seconds:.1f} s"
    return f"{three_figures(seconds * 1e3)} ms"


def ms_sig(seconds: float, digits: int = 3) -> str:
    """A duration in milliseconds to `digits` significant figures: '59.2 ms'."""
    return f"{seconds * 1e3:.{digits}g} ms"


def ms_signed_sig(seconds: float | None, digits: int = 3) -> str:
    """A signed duration in milliseconds to `digits` significant figures: '+50.6 ms'; '?'
    where it is not known."""
    return "?" if seconds is None else f"{seconds * 1e3:+.{digits}g} ms"


def ms_short(seconds: float) -> str:
    """A step time in ms to 3 significant figures, no unit: '52.6' (for 'a [b, c] ms')."""
    return f"{seconds * 1e3:.3g}"


def ms_glued(seconds: float, unit: str = "ms") -> str:
    """A duration in a dense console line, one decimal: '52.6ms'; in a table whose header
    names the unit, `unit` ''."""
    return f"{seconds * 1e3:.1f}{unit}"


def ms_plain(milliseconds: float) -> str:
    """Milliseconds as given on the command line: 50 -> '50 ms', 2.5 -> '2.5 ms'."""
    return f"{milliseconds:g} ms"


def ms_list(values: list[int]) -> str:
    """Sampling intervals: [100, 500] -> '100/500 ms'."""
    return f"{'/'.join(map(str, values))} ms"


def limit_s(seconds: float) -> str:
    """A time limit in seconds as set: '600 s', '0.5 s'."""
    return f"{as_set(seconds)} s"


def whole_s(seconds: float) -> str:
    """A duration to the second, for a wall time or an estimate: '42 s'."""
    return f"{seconds:.0f} s"


def tenth_seconds(value: float) -> str:
    """'27.1 s'."""
    return f"{value:.1f} s"


def duration_text(seconds: float) -> str:
    """Time on a wall clock as progress lines show it (elapsed, ETA), short enough for a line
    that is redrawn: '45s', '3m05s', '2h04m' (whole seconds; below 0 reads 0s)."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def trace_us(us: float) -> str:
    """Microseconds as the trace findings write them: '50.54 ms' from 1 ms on, else '412 µs'."""
    return f"{us / 1000.0:.2f} ms" if abs(us) >= 1000 else f"{us:.0f} µs"


def trace_seconds(seconds: float) -> str:
    """Seconds as the trace findings write them (`trace_us`)."""
    return trace_us(seconds * 1e6)


def us_whole(us: float) -> str:
    """Microseconds, whole: '412 µs'."""
    return f"{us:.0f} µs"


def us_one(us: float) -> str:
    """Microseconds, one decimal: '41.2 µs'."""
    return f"{us:.1f} µs"


def plain_us(us: float) -> str:
    """Microseconds as given: 50 -> '50 µs'."""
    return f"{us:g} µs"


def profile_us(us: float) -> str:
    """Microseconds as the profile's lines write them: ms with two decimals (three under 1 ms),
    seconds with two decimals from 10 s on."""
    seconds = us / 1e6
    if abs(seconds) >= 10:
        return f"{seconds:.2f} s"
    milliseconds = seconds * 1e3
    return f"{milliseconds:.2f} ms" if abs(milliseconds) >= 1 else f"{milliseconds:.3f} ms"


# ---- counts ----------------------------------------------------------------------------------


def count(number: int) -> str:
    """A count with thousands separators: '124,439,808'."""
    return f"{number:,}"


def whole(number: float) -> str:
    """A number rounded to a whole count: 1234.6 -> '1,235'."""
    return f"{round(number):,}"


def count_of(count: int | None, noun: str, plural: str | None = None) -> str:
    """N of a noun: '1 comm run', '1,234 cells'; '? GPUs' where the count is unknown."""
    shown = "?" if count is None else f"{count:,}"
    return f"{shown} {noun if count == 1 else plural or noun + 's'}"


def repeats_text(count: int) -> str:
    """'2 repeats', '1 repeat'."""
    return f"{count} repeat{'' if count == 1 else 's'}"


def of(number: object, thing: object) -> str:
    """N of a thing: '8 x H100'."""
    return f"{number} x {thing}"


def cell_shape(batch_size: object, world_size: object) -> str:
    """'b8 x2': a cell's batch per rank and its ranks, as every cell label spells them."""
    return f"b{batch_size} x{world_size}"


def group_label(label: str, world: int, precision: str, strategy: str) -> str:
    """A searched group as the cells are named: 'gpt2 x2 bf16 ddp'."""
    return f"{label} x{world} {precision} {strategy}"


def ranks_of(world_size: object) -> str:
    """'2x': a collective run's ranks, before its backend ('torchscale 2x nccl bf16')."""
    return f"{world_size}x"


def si_count(value: float) -> str:
    """A count with an SI prefix and 3 significant digits (8.18 G), as FLOPs are quoted."""
    for prefix, scale in _SI:
        if value >= scale:
            return f"{value / scale:.3g} {prefix}"
    return f"{value:.0f}"


def readable(value: float, like: float | None = None) -> str:
    """A rate or a count to read at a glance: whole numbers from 100 up (2,886), three
    significant figures below (42.1, 7.31, 0.420), so a small figure keeps its digits and is
    never printed as 0 when it is not. `like`: the figure whose precision it takes (an
    interval's ends read at their figure's)."""
    figure = value if like is None else like
    if not math.isfinite(value):
        return str(value)
    if not math.isfinite(figure):
        return f"{value:,.0f}"
    shown = float(f"{figure:.3g}")  # 99.96 reads 100, so it takes the whole-number form
    if abs(shown) >= 100 or shown == 0:
        return f"{value:,.0f}"
    if abs(shown) < 1e-3:  # 0.0000042 as fixed point would be a row of zeros
        return f"{value:.3g}"
    decimals = max(0, 2 - math.floor(math.log10(abs(shown))))
    return f"{value:,.{decimals}f}"


def with_unit(figure: str, unit: str) -> str:
    """An already spelled figure and its unit: '1,270 ±110 samples/s'."""
    return f"{figure} {unit}"


def readable_unit(value: float | None, unit: str) -> str:
    """A measured or expected figure in its unit ('771 TFLOP/s', '2,990 GB/s', '4.21 µs');
    '-' where there is none."""
    return MISSING if value is None else with_unit(readable(value), unit)


# ---- plain numbers ---------------------------------------------------------------------------


def significant(value: float, digits: int = 3) -> str:
    """`digits` significant figures without scientific notation for everyday magnitudes."""
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:,.{decimals}f}"


def three_figures(value: float) -> str:
    """Three significant figures below 100, whole above ('10', never '10.00' for 9.9999)."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def two_figures(value: float) -> str:
    """Two significant figures below 10, whole from 10 (cores: '0.43', '1.6', '12')."""
    return significant(value, 2) if value < 10 else f"{value:.0f}"


def sig(value: float, digits: int = 3) -> str:
    """A number to `digits` significant figures: '59.2' ('1.23e+03' where large)."""
    return f"{value:.{digits}g}"


def as_set(value: float, unit: str = "") -> str:
    """A setting, a limit or a printed figure as written, no digit added: 600, 0.5, 1e+06;
    '12.3 GB/s' with its `unit`."""
    return f"{value:g} {unit}" if unit else f"{value:g}"


def one_decimal(value: float) -> str:
    """A plain number with one decimal: '3.4' (cores, a mean's counts)."""
    return f"{value:.1f}"


def one_decimal_range(values: list[float]) -> str:
    """'1.4-1.8', or '1.5' where both ends read alike."""
    low, high = f"{min(values):.1f}", f"{max(values):.1f}"
    return low if low == high else f"{low}-{high}"


def cores(value: float) -> str:
    """'1.7 cores'."""
    return f"{value:.1f} cores"


def signed_whole(value: float) -> str:
    """A signed whole number: '+3', '-10'."""
    return f"{value:+.0f}"


def three_digits(value: float, unit: str) -> str:
    """'0.731 ms' (three significant digits, as `.3g` writes them), then the unit or status."""
    return f"{value:.3g} {unit}"


def fixed(value: float, decimals: int, signed: bool = False) -> str:
    """`value` with `decimals` decimals and thousands separators, a '+' before a positive one
    where `signed` (an axis tick: '20,000', '0.25', '+5')."""
    return f"{value:{'+' if signed else ''},.{decimals}f}"


def cv(value: float) -> str:
    """A coefficient of variation or a plain ratio, two decimals: '0.12', epochs '1.25'."""
    return f"{value:.2f}"


def p_figure(p: float) -> str:
    """A p-value's figure: two significant digits, '0.057'."""
    return f"{p:.2g}"


def p_value(p: float) -> str:
    """'p = 0.057'."""
    return f"p = {p_figure(p)}"


def plain_figure(value: float) -> str:
    """A measured figure as a person reads it: 612, 780, 23.4, 1234, 0.0123."""
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def robust_z(z: float) -> str:
    """'3.4', or 'inf (MAD 0)' where the fleet's spread is 0."""
    return f"{z:.1f}" if z == z and abs(z) != float("inf") else f"{z} (MAD 0)"


def joined_repeats(values: Iterable[float]) -> str:
    """How a table row holds the figure of each repeat (or run), the one spelling
    `offline/analysis/numbers.py::parse_repeats` reads back: [0.1234567, 2.0] -> '0.123457;2'."""
    return ";".join(f"{v:.6g}" for v in values)


def mhz(value: float) -> str:
    return f"{value:.0f} MHz"


def celsius(value: float) -> str:
    return f"{value:.0f} °C"


def watts(value: float) -> str:
    return f"{value:.0f} W"


# ---- bytes -----------------------------------------------------------------------------------


def size_bytes(value: float) -> str:
    """Bytes in the binary unit that fits, three figures: '164 MiB', '1.52 GiB', never
    '164.0 MiB'."""
    size, unit = float(value), 0
    while abs(size) >= 1024 and unit < len(BYTE_UNITS) - 1:
        size /= 1024
        unit += 1
    shown = f"{size:.0f}" if unit == 0 else three_figures(size)
    return f"{shown} {BYTE_UNITS[unit]}"


def mib(size_bytes: float, decimals: int = 0, unit: str = "MiB") -> str:
    """Bytes in MiB with thousands separators: '1,234 MiB'; in a table whose header names the
    unit, `unit` '': '1,234'."""
    return f"{size_bytes / MIB:,.{decimals}f} {unit}".rstrip()


def gib(size_bytes: float, digits: int = 0) -> str:
    """Bytes in GiB, whole (a device's memory: '80 GiB') or to `digits` decimals."""
    return f"{size_bytes / GIB:.{digits}f} GiB"


def gb(size_bytes: float, places: int = 2) -> str:
    """A size in decimal GB (10^9) at `places` decimals: '1.24 GB', '1,503.2 GB'."""
    return f"{size_bytes / 1e9:,.{places}f} GB"


def megabytes(count: float) -> str:
    """Bytes as whole megabytes (10^6): '1,234 MB'."""
    return f"{count / MB:,.0f} MB"


# ---- ratios ----------------------------------------------------------------------------------


def times(ratio: float, decimals: int = 1) -> str:
    """A ratio: '2.2x' ('1.33x' with 2 decimals)."""
    return f"{ratio:.{decimals}f}x"


def plain_times(ratio: float) -> str:
    """A ratio as given: 0.5 -> '0.5x', 2 -> '2x'."""
    return f"{ratio:g}x"


def nccl_column(value: float) -> str:
    """A table figure as nccl-tests prints it, 2 decimals; a tiny CPU bandwidth keeps 3
    significant digits instead of reading 0.00."""
    return f"{value:.2f}" if abs(value) >= 0.1 or value == 0 else f"{value:.3g}"


# ---- rates -----------------------------------------------------------------------------------


def rate(value: float) -> str:
    """Samples/s, tokens/s: '1,234.5' ('123,457' from 100,000 on)."""
    return f"{value:,.1f}" if abs(value) < 1e5 else f"{value:,.0f}"


def gbps(value: float) -> str:
    """A bandwidth, three significant figures: '12.3 GB/s'."""
    return f"{significant(value)} GB/s"


def gbps_derived(value: float) -> str:
    """A bandwidth computed from nccl-tests' printed figures, four significant digits:
    '12.35 GB/s'."""
    return f"{sig(value, 4)} GB/s"


def tflops(value: float) -> str:
    """A rate of FLOPs, three significant figures: '989 TFLOP/s'."""
    return f"{significant(value)} TFLOP/s"


def peak_tflops(value: float) -> str:
    """A measured peak, four significant figures: '780.4 TFLOP/s', '0.05123 TFLOP/s'."""
    return f"{value:.4g} TFLOP/s"


def spec_tflops(tflops: float) -> str:
    """A spec-sheet peak as listed: 989.4 -> '989.4 TFLOP/s', 19.5 -> '19.5 TFLOP/s'."""
    return f"{tflops:g} TFLOP/s"


def megabytes_per_s(rate: float) -> str:
    """A read rate in MB/s (10^6 bytes), readable: '1,240 MB/s'."""
    return f"{readable(rate / MB)} MB/s"


def tokens_per_s(value: float) -> str:
    """'2,886 tokens/s'."""
    return f"{readable(value)} tokens/s"


# ---- money -----------------------------------------------------------------------------------


def money(value: float) -> str:
    """Dollars: '$1.23'; below a cent '$0.0042'."""
    return f"${value:,.2f}" if abs(value) >= 0.01 else f"${value:.4f}"


# ---- ranges ----------------------------------------------------------------------------------


class Span:
    """A figure as its range over several findings: formats as 'low-high' (one figure where
    both ends read the same), so a phrase words a range as it words a figure."""

    def __init__(self, low: Any, high: Any) -> None:
        self.low, self.high = low, high

    def _map(self, other: Any, op: Any) -> Span:
        o_low, o_high = (other.low, other.high) if isinstance(other, Span) else (other, other)
        ends = [op(a, b) for a in (self.low, self.high) for b in (o_low, o_high)]
        return Span(min(ends), max(ends))

    def __mul__(self, other: Any) -> Span:
        return self._map(other, lambda a, b: a * b)

    __rmul__ = __mul__

    def __add__(self, other: Any) -> Span:
        return self._map(other, lambda a, b: a + b)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Span:
        return self._map(other, lambda a, b: a - b)

    def __gt__(self, other: Any) -> bool:
        return bool(self.high > other)

    def __format__(self, spec: str) -> str:
        low, high = format(self.low, spec), format(self.high, spec)
        return low if low == high else f"{low}-{high}"


# ---- the named specs -------------------------------------------------------------------------

# a template's spec name -> its spelling: the kinds first (what a template writes), then the
# report's value formats (`format_value`), then the joins of a list figure
SPECS: dict[str, Callable[[Any], str]] = {
    "share": pct,
    "share0": pct_whole,
    "share_small": pct_small,
    "share_set": pct_set,
    "percent": percent,
    "percent0": percent_whole,
    "change": change_pct,
    "change0": change_whole,
    "duration": seconds,
    "ms": ms_sig,
    "ms_signed": ms_signed_sig,
    "s_set": limit_s,
    "s_whole": whole_s,
    "us_whole": us_whole,
    "us_one": us_one,
    "us_set": plain_us,
    "us_trace": trace_us,
    "s_trace": trace_seconds,
    "ms_set": ms_plain,
    "count": count,
    "gib": gib,
    "mb": megabytes,
    "gb1": functools.partial(gb, places=1),
    "ratio": times,
    "times_set": plain_times,
    "cv": cv,
    "gbps": gbps,
    "tflops": tflops,
    "sig3": sig,
    "sig2": two_figures,
    "p": p_value,
    "set": as_set,
    "one": one_decimal,
    "mhz": mhz,
    "celsius": celsius,
    "watts": watts,
    # the report's value formats
    "int": whole,
    "float": significant,
    "ratio_pct": pct,
    "pct": percent,
    "seconds": seconds,
    "us": us,
    "bytes": size_bytes,
    "rate": rate,
    "readable": readable,
    "change_pct": change_pct,
    "change_pts": change_pts,
    "pts": points,
    "money": money,
    # a list figure
    "list": ", ".join,
    "list;": "; ".join,
    "words": " ".join,
}


def spelled(value: Any, spec: str) -> str:
    """A figure of a template by its spec: a name of SPECS, else a Python format spec."""
    speller = SPECS.get(spec)
    return speller(value) if speller is not None else format(value, spec)


def number_of(value: Any) -> float | None:
    """A finite number as a float; None for anything else (a bool, None, nan, a word)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        number = float(value)
        return number if math.isfinite(number) else None
    return None


def format_value(value: Any, fmt: ValueFormat) -> str:
    """The text of one value in one format ('-' where there is none)."""
    if fmt == "text":
        return MISSING if value is None else str(value)
    number = number_of(value)
    if number is None:
        return MISSING if value is None or isinstance(value, (int, float)) else str(value)
    write = SPECS.get(fmt)
    if write is None:
        raise ValueError(f"unknown value format {fmt!r}")
    return write(number)
