"""Words for which peak an MFU divides by (a cell result's `compute.peak_basis`, made by
contracts/gpu_peaks.py `cell_peak`) and where a measured peak comes from
(`compute.measured_peak_basis`, rank/worker/measured_peak.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.spell import spec_tflops

F = Mapping[str, Any]
UNITS = {"conv": "cuDNN convolutions", "matmul": "cuBLAS matmuls"}


def _spec(f: F) -> str:
    """'NVIDIA H100 80GB HBM3 (as H100 SXM): fp32 dense peak 67 TFLOP/s (no TF32: ...)'."""
    row = f" (as {f['row']})" if f.get("row") else ""
    peak = f" {spec_tflops(f['tflops'])}" if f.get("tflops") is not None else ""
    text = f"{f['device']}{row}: {f['dtype']} dense peak{peak}"
    settings = f.get("tf32") or []
    on = [s for s in settings if s["on"]]
    why = "; ".join(f"{UNITS[s['unit']]} may use TF32: {s['source']}" for s in on)
    if on and f["dtype"] == "fp32":
        why += "; no TF32 units on this GPU"
    elif settings and not on:
        why = "no TF32: " + ", ".join(s["source"] for s in settings)
    return f"{text} ({why})" if why else text


def _report(r: F) -> str:
    where = f"on {r['host']} at {r['created_at']}: {r['dtype']} ({r['path']})"
    return f"measured by `torchscale validate` {where}"


def _measured(f: F) -> str:
    reports = f["reports"]
    said = "; ".join(map(_report, reports))
    return said if len(reports) == 1 else f"mean over {f['ranks']} ranks: {said}"


def peak_basis(basis: Finding | None, tflops: float | None) -> str | None:
    """The spec-sheet peak's basis with the peak it names (a field beside it)."""
    if basis is None:
        return None
    return _spec({**basis.figures, "tflops": tflops})


PHRASES: dict[str, Callable[[F], str]] = {
    "peak.spec": _spec,
    "peak.measured": _measured,
}
