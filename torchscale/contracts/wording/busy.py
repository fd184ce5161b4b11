"""Words for the findings of a machine busy with other work beside a cell (the verdict of
contracts/busy_machine.py; figures: other_cores, cell_cores, cores, free_cores, ranks,
threshold, slowdown, and tick_cores where unresolved)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.wording.figures import significant


def _cores(value: float) -> str:
    return significant(value, 2) if value < 10 else f"{value:.0f}"


def _used(figures: Mapping[str, Any]) -> str:
    """'other processes used 0.43 of 2 cores, the cell's 2 rank(s) 1.6 (0.43 free)'."""
    of = f" of {figures['cores']}" if figures.get("cores") else ""
    free = figures.get("free_cores")
    left = f" ({_cores(free)} free)" if free is not None else ""
    return (
        f"other processes used {_cores(figures['other_cores'])}{of} cores, the cell's "
        f"{figures['ranks']} rank(s) {_cores(figures['cell_cores'])}{left}"
    )


def _contended(figures: Mapping[str, Any]) -> str:
    slowdown = figures.get("slowdown")
    explains = "" if slowdown is None else f", enough to slow it by {slowdown * 100:.0f} % or more"
    return f"{_used(figures)}: busy from {_cores(figures['threshold'])}{explains}"


def _quiet(figures: Mapping[str, Any]) -> str:
    return f"{_used(figures)}: below the busy threshold {_cores(figures['threshold'])}"


def _unresolved(figures: Mapping[str, Any]) -> str:
    return (
        f"{_used(figures)}: within one tick of the kernel's CPU accounting "
        f"({_cores(figures['tick_cores'])} core) of the busy threshold "
        f"{_cores(figures['threshold'])}, not judged"
    )


PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "busy.contended": _contended,
    "busy.quiet": _quiet,
    "busy.unresolved": _unresolved,
}
