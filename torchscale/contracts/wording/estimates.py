"""Words for why a figure has no interval or is not measurable (`Estimate.reason`, a code and
its figures)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording.spell import as_set


def _noise(f: Mapping[str, Any]) -> str:
    edge = as_set(f["edge"]) if "edge" in f else f"above {as_set(f['above'])}"
    return f"not measurable above noise: its 95 % interval reaches {edge}"


def _not_separable(f: Mapping[str, Any]) -> str:
    """`world_size`: one rank of it in the input; None: no collective matched across ranks."""
    size = f.get("world_size")
    cause = f"one rank of {size} in the input" if size else "no collective matched across the ranks"
    return (
        f"not separable: {cause}; the wait is inside exposed transfer (collective time with "
        "nothing computing)"
    )


PHRASES: Phrases = {
    "estimate.one_rank": "one rank: no peers to wait for",
    "estimate.one_step": "one step",
    "estimate.no_step_time": "no step time",
    "estimate.no_interval": "no interval",
    "estimate.few_steps_a_side": "fewer than two steps on a side",
    "estimate.no_busy_probe": "the GPU's busy time was not measured (no busy probe)",
    "estimate.one_unit": "one {unit}: spread unknown",
    "estimate.inside_noise": _noise,
    "estimate.range_only": "range of {n} {unit}s, no interval",
    "estimate.wait_not_separable": _not_separable,
}


def said(code: str) -> Finding:
    """The finding of a figure-less reason: `said('estimate.one_step')`."""
    assert code in PHRASES, code
    return Finding(code=code)
