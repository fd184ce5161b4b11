"""A cell's figures as its console lines, data notes and older results' words spell them:
shares that keep two decimals below 1 %, glued milliseconds, megabytes and their rates."""

from __future__ import annotations

from torchscale.contracts.wording.figures import readable

MB = 10**6


def pct_fine(value: float) -> str:
    """A share with one decimal, two below 1 % (a '±0.0 %' would hide a measured interval)."""
    return f"{value * 100:.2f} %" if abs(value) < 0.01 else f"{value * 100:.1f} %"


def ms_glued(seconds: float) -> str:
    """A duration in a dense console line: '52.6ms'."""
    return f"{seconds * 1e3:.1f}ms"


def percent_setting(share: float) -> str:
    """A threshold as configured (a fraction): 0.1 -> '10 %', 0.025 -> '2.5 %'."""
    return f"{share * 100:g} %"


def percent_whole(share: float) -> str:
    """A share to the whole percent: '5 %'."""
    return f"{share * 100:.0f} %"


def megabytes(count: float) -> str:
    """Bytes as whole megabytes (10^6): '1,234 MB'."""
    return f"{count / MB:,.0f} MB"


def gigabytes(count: float) -> str:
    """Bytes as gigabytes (10^9), one decimal: '503.2 GB'."""
    return f"{count / 1e9:,.1f} GB"


def megabytes_per_s(rate: float) -> str:
    """A read rate in MB/s (10^6 bytes), readable: '1,240 MB/s'."""
    return f"{readable(rate / MB)} MB/s"


def megabytes_per_s_fixed(rate: float) -> str:
    """A read rate in MB/s with one decimal, as results up to schema 7 worded it: '12.4 MB/s'."""
    return f"{rate / MB:.1f} MB/s"


def ratio(value: float) -> str:
    """A plain ratio with two decimals: epochs read, '1.25'."""
    return f"{value:.2f}"
