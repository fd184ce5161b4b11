"""Words for `torchscale validate`: its checks' findings (codes and figures stored in the
validate report, schema 5), the figures its tables and the measured peak spell, and the
hints that say how to fix a check. A check of an older report without findings keeps the
sentence it stored, shown as stored."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.wording.figures import readable

F = Mapping[str, Any]


def figure(value: float | None, unit: str) -> str:
    """A measured or expected figure in its unit ('771 TFLOP/s', '2,990 GB/s', '4.21 us');
    '-' where there is none."""
    return "-" if value is None else f"{readable(value)} {unit}"


def ratio(value: float | None) -> str:
    """Measured over expected: '92 %'; '-' where there is none."""
    return "-" if value is None else f"{value * 100:.0f} %"


def tflops(value: float) -> str:
    """A measured peak: '780 TFLOP/s', '0.05123 TFLOP/s' (four significant figures)."""
    return f"{value:.4g} TFLOP/s"


def mfu_above_peak(mfu: float, which: str) -> str:
    """Why an MFU above 100 % of a peak is no figure."""
    return (
        f"MFU above 100 % of the {which} peak ({mfu:.2f}): a FLOP count or peak bug, not reported"
    )


PHRASES: dict[str, Callable[[F], str]] = {}
