"""Words for the findings of a GPU cell whose step is host time (the GPU's busy share)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.wording.spell import pct

# what the step split's compute part is on a host-bound GPU: the host issuing kernels
LAUNCH_TIME = "launch time"


def _traced(figures: Mapping[str, Any]) -> str:
    return f"{figures['steps']} traced steps, threshold {pct(figures['threshold'])}"


def _launch_time(figures: Mapping[str, Any]) -> str:
    return (
        f"host-bound: the GPU is busy {pct(figures['busy_share'])} of the step "
        f"({_traced(figures)}): its compute is {LAUNCH_TIME}, the GPU waits for Python/launches"
    )


def _probe_launch_time(figures: Mapping[str, Any]) -> str:
    return (
        f"host-bound: the GPU is busy {pct(figures['busy_share'])} of the step (sleep probe): "
        f"its compute is {LAUNCH_TIME}, the GPU waits for Python/launches"
    )


def _gpu_busy(figures: Mapping[str, Any]) -> str:
    return (
        f"not host-bound: the GPU is busy {pct(figures['busy_share'])} of the step "
        f"({_traced(figures)})"
    )


def compute_part(figures: Mapping[str, Any], share: str) -> str:
    """The step split's compute figure on a host-bound GPU: '91.5 % launch time (GPU busy
    12.0 %)', never a bare share a reader takes for the GPU computing."""
    return f"{share} {LAUNCH_TIME} (GPU busy {pct(figures['busy_share'])})"


PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "host_bound.launch_time": _launch_time,
    "host_bound.gpu_busy": _gpu_busy,
    "host_bound.probe_launch_time": _probe_launch_time,
}
