"""Words for `torchscale validate`: its checks' findings (codes and figures stored in the
validate report, schema 5), the figures its tables and the measured peak spell, and the
hints that say how to fix a check. A check of an older report without findings keeps the
sentence it stored, shown as stored."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

F = Mapping[str, Any]


def tflops(value: float) -> str:
    """A measured peak: '780 TFLOP/s', '0.05123 TFLOP/s' (four significant figures)."""
    return f"{value:.4g} TFLOP/s"


def mfu_above_peak(mfu: float, which: str) -> str:
    """Why an MFU above 100 % of a peak is no figure."""
    return (
        f"MFU above 100 % of the {which} peak ({mfu:.2f}): a FLOP count or peak bug, not reported"
    )


PHRASES: dict[str, Callable[[F], str]] = {}
