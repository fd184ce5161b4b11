"""Words for the findings of a machine busy with other work beside a cell (the verdict of
contracts/busy_machine.py; figures: other_cores, cell_cores, cores, free_cores, ranks,
threshold, slowdown, and tick_cores where unresolved)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording.spell import pct_whole, two_figures


def _used(figures: Mapping[str, Any]) -> str:
    """'other processes used 0.43 of 2 cores, the cell's 2 rank(s) 1.6 (0.43 free)'."""
    of = f" of {figures['cores']}" if figures.get("cores") else ""
    free = figures.get("free_cores")
    left = f" ({two_figures(free)} free)" if free is not None else ""
    return (
        f"other processes used {two_figures(figures['other_cores'])}{of} cores, the cell's "
        f"{figures['ranks']} rank(s) {two_figures(figures['cell_cores'])}{left}"
    )


def _contended(figures: Mapping[str, Any]) -> str:
    slowdown = figures.get("slowdown")
    explains = "" if slowdown is None else f", enough to slow it by {pct_whole(slowdown)} or more"
    return f"{_used(figures)}: busy from {two_figures(figures['threshold'])}{explains}"


def _quiet(figures: Mapping[str, Any]) -> str:
    return f"{_used(figures)}: below the busy threshold {two_figures(figures['threshold'])}"


def _unresolved(figures: Mapping[str, Any]) -> str:
    return (
        f"{_used(figures)}: within one tick of the kernel's CPU accounting "
        f"({two_figures(figures['tick_cores'])} core) of the busy threshold "
        f"{two_figures(figures['threshold'])}, not judged"
    )


PHRASES: Phrases = {
    "busy.contended": _contended,
    "busy.quiet": _quiet,
    "busy.unresolved": _unresolved,
}
