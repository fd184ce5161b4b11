"""Figures as a table cell holds them: one figure, its interval glued to it, so a narrow
column never breaks it ('11,100±4,300')."""

from __future__ import annotations

import math

from torchscale.contracts.wording.figures import Format, figure_with_interval, round_figure


def glued_figure(value: float | None, low: float | None, high: float | None, fmt: Format) -> str:
    """`figure_with_interval` with no space before the '±'; the same text where there is no
    '±' (no interval, or a lopsided one in brackets)."""
    ends = (value, low, high)
    if any(x is None or not math.isfinite(x) for x in ends) or high == low:
        return figure_with_interval(value, low, high, fmt)
    assert value is not None and low is not None and high is not None
    shown = round_figure(value, low, high, fmt)
    return shown.compact() if shown.half is None else f"{shown.value}±{shown.half}"
