"""Why NVML's averaged readings or its energy counter cannot describe a cell's windows: the
rules are contracts/gpu_clocks.py's (`averaged_too_short`, `counter_too_coarse`, which give
the figures), the words are here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_AVERAGES = "NVML averages over ~1 s (power) and 1/6-1 s (utilisation)"


def _longest(f: Mapping[str, Any]) -> str:
    return (
        f"not measurable: the longest window is {f['window_s']:.3g} s, where {_AVERAGES}; a "
        f"reading counts only {f['floor_s']:g} s or more into a window"
    )


def _windows(f: Mapping[str, Any]) -> str:
    return (
        f"not measurable: windows of {f['window_s']:.3g} s in all, where {_AVERAGES}; at least "
        f"{f['floor_s']:g} s of windows is needed"
    )


def _coarse(f: Mapping[str, Any]) -> str:
    return (
        f"not measurable: the energy counter moves in steps of up to ~{f['step_s']:g} s, so over "
        f"{f['windows']} window(s) of {f['window_s']:.3g} s in all it is uncertain by "
        f"~{f['error'] * 100:.0f} % (kept at {f['max'] * 100:.0f} % or less)"
    )


PHRASES = {
    "unavailable.nvml_longest_window": _longest,
    "unavailable.nvml_windows": _windows,
    "unavailable.energy_counter_coarse": _coarse,
}
