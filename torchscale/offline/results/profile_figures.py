"""The headline figures of a profile analysis, each computed here from the one place that holds
it: the run's diagnosis. Every surface (console, reports, `benchmarks/trace_analysis.py`) reads them
here, so a figure is stored once and says the same everywhere.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.diagnosis import Estimate
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.contracts.wording import spell, why

ONE_RANK = (
    "one rank in the input: waiting for peers needs the same collectives on two or more ranks"
)
NO_MATCH = "no collective could be matched across ranks"


@dataclass(frozen=True)
class Shown:
    """A figure as shown: its value, or None with the reason."""

    value: float | None
    reason: str | None = None


def cycle_us(analysis: ProfileAnalysis) -> float | None:
    """The median step over ranks (each rank's median over its complete steps), µs."""
    steps = [r.step_us for r in analysis.ranks if r.step_us is not None]
    return float(statistics.median(steps)) if steps else None


def sync_stall_pct(analysis: ProfileAnalysis) -> Shown:
    """Sync stall, % of the step: ranks waiting for peers with nothing else to do (the
    diagnosis' waiting for peers)."""
    diagnosis = analysis.diagnosis
    wait = diagnosis.part("wait_for_peers") if diagnosis is not None else None
    if diagnosis is not None and diagnosis.source != "traces":
        known = diagnosis.ranks > 1
    else:  # the traces split the waits out where they matched collectives on two ranks
        known = analysis.ranks_analysed > 1 and analysis.collective_wait_pct is not None
    if wait is not None and known:
        return _pct(wait.share)
    if analysis.ranks_analysed < 2:
        return Shown(None, ONE_RANK)
    return Shown(None, why(analysis.unavailable.get("sync_stall_pct")) or NO_MATCH)


def exposed_comm_pct(analysis: ProfileAnalysis) -> Shown:
    """Exposed communication, % of the step: the diagnosis' exposed transfer."""
    diagnosis = analysis.diagnosis
    transfer = diagnosis.part("exposed_transfer") if diagnosis is not None else None
    if transfer is None:
        reasons = analysis.unavailable
        why_not = why(reasons.get("exposed_comm_pct")) or why(reasons.get("diagnosis"))
        return Shown(None, why_not or "no step model")
    return _pct(transfer.share)


def _pct(share: Estimate) -> Shown:
    """A share as %: 0 when it is exactly 0 on every step (interval [0, 0]), None with the
    reason when it is not measurable above noise."""
    if share.measurable and share.value is not None:
        return Shown(100 * share.value)
    if share.value is None and share.high == 0:
        return Shown(0.0)
    return Shown(None, f"not measurable above noise ({not_measurable(share)})")


def not_measurable(estimate: Estimate) -> str:
    """How large a figure inside its noise could be, or why it has no interval."""
    if estimate.high is None:
        return why(estimate.reason) or "no interval"
    return f"{spell.pct_below(estimate.high)} of the step"


def compile_mode(result: CellResult) -> str:
    """'compiled' or 'eager': whether the run trained under torch.compile (training.compile),
    read off its compile record, which a compiled cell always writes."""
    return "compiled" if result.compile is not None else "eager"
