"""A cell's figures as its console lines and data notes spell them:
shares that keep two decimals below 1 %, glued milliseconds, megabytes and their rates."""

from __future__ import annotations

from torchscale.contracts.wording import counts, units
from torchscale.contracts.wording.figures import readable

percent_setting = counts.limit_pct  # a threshold as configured: 0.025 -> '2.5 %'
ratio = units.cv  # a plain ratio with two decimals: epochs read, '1.25'

MB = 10**6


def pct_fine(value: float) -> str:
    """A share with one decimal, two below 1 % (a '±0.0 %' would hide a measured interval)."""
    return f"{value * 100:.2f} %" if abs(value) < 0.01 else f"{value * 100:.1f} %"


def ms_glued(seconds: float) -> str:
    """A duration in a dense console line: '52.6ms'."""
    return f"{seconds * 1e3:.1f}ms"


def megabytes(count: float) -> str:
    """Bytes as whole megabytes (10^6): '1,234 MB'."""
    return f"{count / MB:,.0f} MB"


def gigabytes(count: float) -> str:
    """Bytes as gigabytes (10^9), one decimal: '503.2 GB'."""
    return f"{count / 1e9:,.1f} GB"


def megabytes_per_s(rate: float) -> str:
    """A read rate in MB/s (10^6 bytes), readable: '1,240 MB/s'."""
    return f"{readable(rate / MB)} MB/s"
