"""Figures of a sweep table's cell, whose unit is its column's header ('step p50|p95 (ms)',
'peak mem (MiB)'): the number alone, spelled here like every other figure."""

from __future__ import annotations

MIB = 2**20


def ms_figure(seconds: float) -> str:
    """Seconds as milliseconds with one decimal, the unit in the header: 0.0123 -> '12.3'."""
    return f"{seconds * 1e3:.1f}"


def mib_figure(size_bytes: float) -> str:
    """Bytes as whole MiB with thousands separators, the unit in the header: '1,234'."""
    return f"{size_bytes / MIB:,.0f}"
