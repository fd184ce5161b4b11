"""Words for why a cell has no MFU: no spec-sheet peak to divide by (contracts/gpu_peaks.py),
no measured peak (rank/worker/measured_peak.py), or an MFU above 100 % of one (a bug, not a
figure). Stored in `CellResult.unavailable` (`mfu`, `mfu_measured`) as codes with figures."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

F = Mapping[str, Any]
RUN_PERF = "run `torchscale validate --level perf` on the node first"


def mfu_above_peak(f: F) -> str:
    """Why an MFU above 100 % of a peak is no figure."""
    return (
        f"MFU above 100 % of the {f['which']} peak ({f['mfu']:.2f}): a FLOP count or peak bug, "
        "not reported"
    )


def _tf32_unknown(f: F) -> str:
    return (
        f"cannot tell whether fp32 kernels may use TF32 ({', '.join(f['unreadable'])} "
        "unreadable), so which peak applies is unknown"
    )


PHRASES: dict[str, Callable[[F], str]] = {
    "peak.mig_slice": lambda f: (
        f"'{f['device']}' is a MIG slice: its share of the GPU's peak "
        "FLOP/s is not in the table, so no MFU"
    ),
    "peak.not_in_table": lambda f: f"no peak FLOP/s table entry for '{f['device']}'",
    "peak.no_dtype": lambda f: (
        f"no {f['dtype']} peak known for {f['device']} (read as {f['model']})"
    ),
    "peak.tf32_unknown": _tf32_unknown,
    "peak.not_measured": lambda f: f"no measured peak for host {f['host']}: {RUN_PERF}",
    "peak.dtype_not_measured": lambda f: (
        f"no measured {f['dtype']} peak for host {f['host']} in {f['path']}"
    ),
    "peak.not_looked_for": lambda f: "not looked for",
    "peak.cpu": lambda f: "MFU is defined against GPU peak FLOP/s; none on CPU",
    "peak.own_job_dtype": lambda f: (
        f"most of your job's FLOPs ran in {f['dtype']}, which has no peak in the table: no MFU"
    ),
    "peak.mfu_above_peak": mfu_above_peak,
}
