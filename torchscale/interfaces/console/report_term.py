"""The term format: the report as terminal text, its summary (at most 60 lines: `report_summary`)
or, with `full`, the whole of it (`report_full`)."""

from __future__ import annotations

from torchscale.interfaces.console import report_full, report_summary
from torchscale.interfaces.console.report_full import WIDTH
from torchscale.interfaces.report.model import Report

__all__ = ["WIDTH", "render"]


def render(report: Report, width: int = WIDTH, full: bool = False) -> bytes:
    """Plain text `width` columns wide at most (`WIDTH` for a file; the terminal's width when
    printed: no figure and no word is cut to fit it)."""
    if not full:
        return report_summary.render(report, width)
    return report_full.render(report, width)
