"""Why a host's load figure is null (`HostLoad.unavailable`, rank/telemetry/window_figures.py
`host_load`): the host's own reasons as codes with their figures. The reasons copied from its
ranks' records are still their words (`RankLoad.unavailable`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases


def _too_short(f: Mapping[str, Any]) -> str:
    window_s, tick_s = f["window_s"], f["tick_s"]
    return (
        f"not measurable: the measured windows last {window_s * 1e3:.3g} ms, where one "
        f"{tick_s * 1e3:.3g} ms tick of the kernel's CPU accounting reads as "
        f"{tick_s / window_s:.2g} core, more than lies between the other processes' "
        f"{f['other_cores']:.2g} and the busy threshold {f['threshold']:.2g}; run "
        "more steps to measure it"
    )


PHRASES: Phrases = {
    "unavailable.busy_windows_too_short": _too_short,
}
