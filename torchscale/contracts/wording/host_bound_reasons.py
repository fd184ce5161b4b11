"""Words for why a GPU cell's busy share is null (`CellResult.host_bound.reason`: a code and its
figures): the busy trace's own reasons (rank/worker/busy_trace.py) and what the reader's
arithmetic fallback found (offline/results/host_bound.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.schema.cell_result import Estimate
from torchscale.contracts.wording import Phrases, render
from torchscale.contracts.wording.figures import share_text
from torchscale.contracts.wording.spell import pct_set, pct_small

F = Mapping[str, Any]
CAPTURE_FAILED = "the CUDA trace of the busy share failed"


_WHY = "{why:finding}"


def _mfu(f: F) -> str:
    """The MFU as tables spell it: with its interval where the result gives one."""
    interval = f.get("interval")
    return share_text(Estimate.model_validate(interval)) if interval else pct_small(f["mfu"])


PHRASES: Phrases = {
    "host_bound.pipeline": (
        "pipeline cells: each stage waits for its neighbours' activations and gradients inside "
        "the schedule, so a stage's idle GPU time is the bubble, not the host"
    ),
    "host_bound.trace_failed": (CAPTURE_FAILED + " ({error})"),
    "host_bound.peer_failed": (CAPTURE_FAILED + " on another rank, so no rank traced"),
    "host_bound.none_traced": "no rank traced a step",
    "host_bound.no_probe": "no busy trace was recorded",
    "host_bound.no_mfu": (_WHY + "; no MFU to judge by arithmetic"),
    "host_bound.arithmetic": lambda f: f"{render(_WHY, f)}; MFU {_mfu(f)}",
    "host_bound.not_judged": lambda f: (
        f"{render(_WHY, f)}; MFU {_mfu(f)}, at least {pct_set(f['floor'])}: not judged"
    ),
}
