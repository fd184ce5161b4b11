"""Words for why a cell has no MFU: no spec-sheet peak to divide by (contracts/gpu_peaks.py),
no measured peak (rank/worker/measured_peak.py), or an MFU above 100 % of one (a bug, not a
figure). Stored in `CellResult.unavailable` (`mfu`, `mfu_measured`) as codes with figures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases

F = Mapping[str, Any]
RUN_PERF = "run `torchscale validate --level perf` on the node first"


def mfu_above_peak(f: F) -> str:
    """Why an MFU above 100 % of a peak is no figure."""
    return (
        f"MFU above 100 % of the {f['which']} peak ({f['mfu']:.2f}): a FLOP count or peak bug, "
        "not reported"
    )


PHRASES: Phrases = {
    "peak.mig_slice": (
        "'{device}' is a MIG slice: its share of the GPU's peak FLOP/s is not in the table, so "
        "no MFU"
    ),
    "peak.not_in_table": "no peak FLOP/s table entry for '{device}'",
    "peak.no_dtype": "no {dtype} peak known for {device} (read as {model})",
    "peak.tf32_unknown": (
        "cannot tell whether fp32 kernels may use TF32 ({unreadable:list} unreadable), so which "
        "peak applies is unknown"
    ),
    "peak.not_measured": ("no measured peak for host {host}: " + RUN_PERF),
    "peak.dtype_not_measured": "no measured {dtype} peak for host {host} in {path}",
    "peak.not_looked_for": "not looked for",
    "peak.cpu": "MFU is defined against GPU peak FLOP/s; none on CPU",
    "peak.own_job_dtype": (
        "most of your job's FLOPs ran in {dtype}, which has no peak in the table: no MFU"
    ),
    "peak.mfu_above_peak": mfu_above_peak,
}
