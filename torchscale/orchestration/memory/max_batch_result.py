"""Building the result of one max-batch search from its outcome (the document itself is
contracts/schema/max_batch.py, read back by offline/results/documents.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any, Literal

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.max_batch import MaxBatchProbe, MaxBatchResult
from torchscale.orchestration.memory.search import SearchOutcome

CPU_UTILISATION = Finding(code="max_batch.cpu_no_device_limit")
CPU_ALLOCATOR = Finding(code="max_batch.cpu_no_allocator")
NO_MAX_BATCH = Finding(code="max_batch.no_answer")


def build_result(
    identity: Mapping[str, Any],
    outcome: SearchOutcome,
    probe_steps: int,
    device_total: tuple[int | None, Finding | None] = (None, None),
    *,
    warmup_min: int,
    compiled: bool,
    started_at: str | None = None,
    wall_s: float | None = None,
) -> MaxBatchResult:
    """The result of one search. `identity`: group, definition_sha256, model, label,
    world_size, precision, strategy, device, backend, nodes. `device_total`: (bytes, None) or
    (None, why), CUDA only. `warmup_min`: the warm-up steps each probe was set to run (each
    probe's outcome says how many it ran); `compiled`: whether the probes compiled."""
    device = identity["device"]
    unavailable: dict[str, Finding] = {}
    warnings = list(outcome.warnings)
    at_max = outcome.at_max
    peaks = at_max.outcome if at_max is not None else None
    allocated = peaks.peak_allocated_bytes if peaks else None
    reserved = peaks.peak_reserved_bytes if peaks else None
    rss = peaks.peak_rss_bytes if peaks else None
    total, total_note = device_total if device == "cuda" else (None, None)
    utilisation: float | None = None
    basis: Literal["reserved", "rss"]
    status: Literal["ok", "failed"]
    if device == "cpu":
        peak_bytes, basis = rss, "rss"
        allocated = reserved = None  # what unavailable says, whatever a probe reported
        unavailable |= dict.fromkeys(("memory_utilisation", "device_total_bytes"), CPU_UTILISATION)
        unavailable |= dict.fromkeys(("peak_allocated_bytes", "peak_reserved_bytes"), CPU_ALLOCATOR)
    else:
        peak_bytes, basis = reserved, "reserved"
        if total is None:
            unavailable["device_total_bytes"] = total_note or Finding(
                code="max_batch.total.unknown"
            )
            unavailable["memory_utilisation"] = unavailable["device_total_bytes"]
        elif reserved is not None and total > 0:
            utilisation = reserved / total
    if peaks is None:
        for name in ("peak_bytes", "memory_utilisation"):
            unavailable.setdefault(name, NO_MAX_BATCH)
    warmup_ran = peaks.warmup_steps if peaks is not None else None
    if warmup_ran is None:
        figures = {"answer": peaks is not None, "least": warmup_min, "compiled": compiled}
        unavailable["probe_warmup_steps"] = Finding(
            code="max_batch.warmup_not_recorded", figures=figures
        )
    if peaks is not None and peaks.alloc_retries:
        retried = {"batch": outcome.max_batch, "retries": peaks.alloc_retries}
        warnings.append(Finding(code="max_batch.alloc_retries", figures=retried))
    finding: Finding | None
    if outcome.failure is not None:
        status, finding = "failed", outcome.failure
    elif outcome.limit_reached:
        status = "ok"
        finding = Finding(code="max_batch.at_least", figures={"limit": outcome.limit})
    else:
        status, finding = "ok", None
    probes = [
        MaxBatchProbe(
            batch=r.batch,
            phase=r.phase,
            outcome=r.outcome.kind,
            seconds=round(r.seconds, 3),
            # the rest of a probe's outcome, by the same names: reason, peaks, retries, id, warm-up
            **{k: v for k, v in asdict(r.outcome).items() if k != "kind"},
        )
        for r in outcome.probes
    ]
    return MaxBatchResult(
        **identity,
        status=status,
        finding=finding,
        max_batch=outcome.max_batch,
        limit=outcome.limit,
        limit_reached=outcome.limit_reached,
        largest_fit=outcome.largest_fit,
        start=outcome.start,
        probe_steps=probe_steps,
        probe_warmup_min=warmup_min,
        probe_warmup_steps=warmup_ran,
        probe_compiled=compiled,
        probes=probes,
        peak_bytes=peak_bytes if peaks is not None else None,
        peak_basis=basis,
        peak_allocated_bytes=allocated,
        peak_reserved_bytes=reserved,
        peak_rss_bytes=rss,
        device_total_bytes=total,
        memory_utilisation=utilisation,
        warnings=warnings,
        unavailable=unavailable,
        started_at=started_at,
        wall_s=wall_s,
    )
