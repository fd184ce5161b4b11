"""Why NVML's averaged readings or its energy counter cannot describe a cell's windows: the
rules are contracts/gpu_clocks.py's (`averaged_too_short`, `counter_too_coarse`, which give
the figures), the words are here."""

from __future__ import annotations

from torchscale.contracts.wording import Phrases

_AVERAGES = "NVML averages over ~1 s (power) and 1/6-1 s (utilisation)"


PHRASES: Phrases = {
    "unavailable.nvml_longest_window": (
        "not measurable: the longest window is {window_s:.3g} s, where "
        + _AVERAGES
        + "; a reading counts only {floor_s:g} s or more into a window"
    ),
    "unavailable.nvml_windows": (
        "not measurable: windows of {window_s:.3g} s in all, where "
        + _AVERAGES
        + "; at least {floor_s:g} s of windows is needed"
    ),
    "unavailable.energy_counter_coarse": (
        "not measurable: the energy counter moves in steps of up to ~{step_s:g} s, so over "
        "{windows} window(s) of {window_s:.3g} s in all it is uncertain by ~{error:share0} (kept "
        "at {max:share0} or less)"
    ),
}
