"""Words for what a run can and cannot be used for (offline/analysis/run_purpose.py decides the
codes: the first line of a report and of `benchmark`'s end answer, docs/reporting.md "What a
run is for"), and for a steady cell on a busy machine (offline/analysis/reliability.py).
Figures: `cells` (the measured cells the verdict covers), `why` ('cpu' or 'host_bound'),
`world` (the one world size every cell ran at), `node_gpus` (the GPUs its node has, None where
not recorded), `device` ('cuda', 'cpu')."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording.noise import reliable


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _ranks(count: int, device: str) -> str:
    return _plural(count, "CPU rank" if device == "cpu" else "GPU")


def path_check(figures: Mapping[str, Any]) -> str:
    return (
        "A path check, not a measurement: these cells prove the code path runs "
        "(validate --level workload); use no figure of theirs for a decision"
    )


def no_gpu_figure(figures: Mapping[str, Any]) -> str:
    if figures.get("why") == "cpu":
        # a CPU report never names GPUs (its ranks are CPU ranks): 'accelerator'
        return (
            "No accelerator figure here: these cells ran on CPU ranks, so they measure Python, "
            "the host and gloo"
        )
    return (
        "No GPU figure here: these cells measure Python and launches (the GPU waits for the "
        "host in every cell)"
    )


def scaling_unmeasured(figures: Mapping[str, Any]) -> str:
    world, gpus = int(figures["world"]), figures.get("node_gpus")
    device = str(figures.get("device") or "cuda")
    if gpus is not None and int(gpus) <= world and device != "cpu":
        return f"Scaling not measured: this node has {_ranks(int(gpus), device)}"
    return f"Scaling not measured: every cell ran on {_ranks(world, device)}"


def busy_machine(figures: Mapping[str, Any]) -> str:
    """'ran on a busy machine: steady (...), but other processes took its cores or GPUs
    during its windows, so its figures measure the contention'."""
    return (
        f"ran on a busy machine: steady ({reliable(figures)}), but other processes took its "
        "cores or GPUs during its windows, so its figures measure the contention"
    )


PHRASES: Phrases = {
    "purpose.path_check": path_check,
    "purpose.no_gpu_figure": no_gpu_figure,
    "purpose.scaling_unmeasured": scaling_unmeasured,
    "noise.busy_machine": busy_machine,
}
