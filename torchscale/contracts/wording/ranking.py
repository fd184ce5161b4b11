"""Words for what is ranked and compared: a compile gain by its interval (no digits where the
interval is wider than the gain), and FSDP on one device left out of every ranking."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.wording import Phrases


def gain_figure(figures: Mapping[str, Any]) -> str:
    """'1.57x [1.53, 1.84]' (no interval: '1.50x'): the one figure every surface prints."""
    ratio, low, high = figures.get("ratio"), figures.get("low"), figures.get("high")
    if ratio is None:
        return "-"
    if low is None or high is None:
        return f"{ratio:.2f}x"
    return f"{ratio:.2f}x [{low:.2f}, {high:.2f}]"


def _units(figures: Mapping[str, Any]) -> str:
    unit = figures.get("unit", "repeats")
    return f"{figures.get('compiled_units')} + {figures.get('eager_units')} {unit}"


NOT_MEASURABLE = "ranking.compile_not_measurable"


def gain_text(code: str, figures: Mapping[str, Any]) -> str:
    """A table's cell: `gain_figure`, or 'not measurable (2 + 2 repeats)' where the interval is
    wider than the gain (the first screen shows no digits of such a figure)."""
    return f"not measurable ({_units(figures)})" if code == NOT_MEASURABLE else gain_figure(figures)


def _not_measurable(figures: Mapping[str, Any]) -> str:
    """'compiled/eager not measurable (2 + 2 repeats), compiled faster beyond noise'."""
    beyond = figures.get("beyond")
    order = f", compiled {beyond} beyond noise" if beyond else ""
    return f"compiled/eager {gain_text(NOT_MEASURABLE, figures)}{order}"


def _gain(verdict: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda f: f"compiled/eager {gain_figure(f)}, {verdict} ({_units(f)})"


def _cells(f: Mapping[str, Any]) -> str:
    cells = f.get("cells", 1)
    return "its" if cells == 1 else f"{cells} cells'"


PHRASES: Phrases = {
    "ranking.compiled_faster": _gain("compiled faster"),
    "ranking.compiled_slower": _gain("compiled slower"),
    "ranking.compile_no_clear_difference": _gain("no clear difference"),
    "ranking.compile_no_interval": _gain("no interval: one figure on a side"),
    NOT_MEASURABLE: _not_measurable,
    "ranking.fsdp_on_one": (
        "FSDP on one device shards nothing: FSDP2's machinery over the whole model, never ranked "
        "or compared with another configuration"
    ),
    "ranking.shared_gpu": lambda f: (
        f"{_cells(f)} ranks shared a GPU (launcher.ranks_per_gpu): a stand-in for a "
        "multi-GPU cell, never ranked or compared with another configuration"
    ),
}
