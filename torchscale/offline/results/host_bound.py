"""The host-bound verdict of a GPU cell, in one shape for every result as it is read.

A result whose GPU busy share was measured (`CellResult.host_bound.host_bound` true or false:
the CUDA trace's verdict) is read as written: the measured share decides, whatever the MFU.
Without one (a share that was not measured) one documented fallback judges it: on CUDA, a
cell whose MFU is under `HOST_BOUND_MFU` (1 %: the step's FLOPs at the GPU's peak fill under
1 % of the step) is host-bound by arithmetic; otherwise it is not judged ("not measured"). A
host-bound cell gets its one finding in `diagnosis.findings` (`findings.host_bound_finding`),
so every surface renders the same verdict. CPU cells get none: every CPU step is host time.
docs/methodology.md, "Host-bound".
"""

from __future__ import annotations

from typing import Any

from torchscale.contracts.cell import Status
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult, HostBound
from torchscale.contracts.schema.diagnosis import Problem
from torchscale.contracts.wording import reason_of
from torchscale.offline.analysis.diagnosis.findings import (
    HOST_BOUND_MFU,
    host_bound_finding,
    is_host_bound_verdict,
)
from torchscale.offline.analysis.uncertainty import mfu_estimate

NO_PROBE = Finding(code="host_bound.no_probe")
# the reasons this fallback writes, each with the reason it judged beside (`why`)
JUDGED = ("host_bound.no_mfu", "host_bound.arithmetic", "host_bound.not_judged")


def _base_reason(probe: HostBound | None) -> Finding:
    """Why the probe measured nothing, without what an earlier read of it judged."""
    reason = probe.reason if probe is not None and probe.reason else NO_PROBE
    return reason_of(reason.figures["why"]) if reason.code in JUDGED else reason


def judged_host_bound(result: CellResult) -> HostBound | None:
    """The cell's host-bound record: the probe's where it judged, else the arithmetic fallback
    (CUDA, ok cells with an MFU); None for other cells."""
    probe = result.host_bound
    if probe is not None and probe.host_bound is not None:
        return probe
    if result.cell.device != "cuda" or result.status is not Status.OK:
        return probe
    base = _base_reason(probe)
    figures: dict[str, Any] = {"why": base.model_dump()}
    mfu = result.compute.mfu if result.compute is not None else None
    step_s = result.step_time.p50 if result.step_time is not None else None
    spread = mfu_estimate(result)  # as tables spell it
    if spread is not None and spread.value is not None:
        figures["interval"] = spread.model_dump()  # the MFU with its interval, once
    elif mfu is not None:
        figures["mfu"] = mfu
    if mfu is None:
        bound, reason = None, Finding(code="host_bound.no_mfu", figures=figures)
    elif mfu < HOST_BOUND_MFU:
        bound, reason = True, Finding(code="host_bound.arithmetic", figures=figures)
    else:
        figures |= {"floor": HOST_BOUND_MFU}
        bound, reason = None, Finding(code="host_bound.not_judged", figures=figures)
    return HostBound(
        gpu_busy_s=None,
        step_s=step_s,
        gpu_busy_share=None,
        host_bound=bound,
        method="arithmetic" if bound else None,
        reason=reason,
    )


def host_bound_of(result: CellResult) -> Problem | None:
    """The finding a host-bound GPU cell gets; None for every other cell."""
    record = result.host_bound
    if result.cell.device != "cuda" or record is None or not record.host_bound:
        return None
    mfu = result.compute.mfu if result.compute is not None else None
    return host_bound_finding(
        verdict=record.verdict,
        busy_share=record.gpu_busy_share,
        mfu=mfu,
        gpu_busy_s=record.gpu_busy_s,
        step_s=record.step_s,
        compiled=result.compile is not None
        or (result.warmup is not None and result.warmup.compile_s is not None),
        mfu_interval=mfu_estimate(result),
    ).stored()


def with_host_bound(result: CellResult) -> CellResult:
    """`result` with its host-bound record judged (`judged_host_bound`) and, when host-bound,
    its finding first among the diagnosis' findings (once: a result that has it keeps it)."""
    record = judged_host_bound(result)
    if record is not result.host_bound:
        result = result.model_copy(update={"host_bound": record})
    finding = host_bound_of(result)
    diagnosis = result.diagnosis
    if finding is None or diagnosis is None:
        return result
    if any(is_host_bound_verdict(f) for f in diagnosis.findings):
        return result
    # first whatever its cost: on a host-bound GPU the other findings describe host time too
    diagnosis = diagnosis.model_copy(update={"findings": [finding, *diagnosis.findings]})
    return result.model_copy(update={"diagnosis": diagnosis})
