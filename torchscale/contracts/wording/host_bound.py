"""Words for the findings of a GPU cell whose step is host time (the GPU's busy share)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording.spell import pct

# what the step split's compute part is on a host-bound GPU: the host issuing kernels
LAUNCH_TIME = "launch time"


_TRACED = "{steps} traced steps, threshold {threshold:share}"


def compute_part(figures: Mapping[str, Any], share: str) -> str:
    """The step split's compute figure on a host-bound GPU: '91.5 % launch time (GPU busy
    12.0 %)', never a bare share a reader takes for the GPU computing."""
    return f"{share} {LAUNCH_TIME} (GPU busy {pct(figures['busy_share'])})"


PHRASES: Phrases = {
    "host_bound.launch_time": (
        "host-bound: the GPU is busy {busy_share:share} of the step ("
        + _TRACED
        + "): its compute is "
        + LAUNCH_TIME
        + ", the GPU waits for Python/launches"
    ),
    "host_bound.gpu_busy": (
        "not host-bound: the GPU is busy {busy_share:share} of the step (" + _TRACED + ")"
    ),
    "host_bound.probe_launch_time": (
        (
            "host-bound: the GPU is busy {busy_share:share} of the step (sleep probe): its "
            "compute is "
        )
        + LAUNCH_TIME
        + ", the GPU waits for Python/launches"
    ),
}
