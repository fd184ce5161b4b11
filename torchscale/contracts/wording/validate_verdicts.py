"""Words for the conclusions of `torchscale validate` not found in its checks' modules: a node
where torch sees no GPU, and a run stopped before it was judged (`ValidateReport.verdict_basis`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases

F = Mapping[str, Any]


def _reason(f: F) -> list[str]:
    """Why torch sees no GPU, most fundamental first."""
    if f.get("torch_error") is not None:
        return [f"torch cannot be imported ({f['torch_error']})"]
    reasons = []
    if f.get("cpu_only_torch"):
        reasons.append(f"torch {f['cpu_only_torch']} is a CPU-only build")
    if f.get("nvml_error") is not None:
        reasons.append(f"NVML: {f['nvml_error']}")
    elif f.get("driver_lists_none"):
        reasons.append("the NVIDIA driver lists no GPU")
    return reasons or ["torch sees no CUDA device (check CUDA_VISIBLE_DEVICES)"]


def _no_gpu(f: F) -> str:
    text = "GPU training is impossible on this node: " + "; ".join(_reason(f)) + "."
    if f["cpu_works"]:
        return text + (
            " The CPU path works (gloo smoke test passed): `torchscale validate "
            "--device cpu` checks it, and `device: cpu` in a config runs each rank as "
            "a CPU process with gloo."
        )
    return text + (
        " The CPU path (gloo) may still work: check it with `torchscale validate --device cpu`."
    )


PHRASES: Phrases = {
    "validate.no_gpu": _no_gpu,
    "validate.not_judged": (
        "Not judged: {why}, before every figure was measured (the ones measured are below)."
    ),
}
