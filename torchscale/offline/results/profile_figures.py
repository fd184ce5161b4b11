"""The headline figures of a profile analysis, each computed here from the one place that holds
it: the run's diagnosis, or, for an analysis without one (schema 1), its own figures
(`before_diagnosis`). Every surface (console, reports, `benchmarks/trace_analysis.py`) reads them
here, so a figure is stored once and says the same everywhere.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from torchscale.contracts.schema.cell_result import Estimate
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis, StragglerFigures, WhatIf
from torchscale.contracts.wording import spelled
from torchscale.contracts.wording.share_bound import share_bound
from torchscale.contracts.wording.unavailable import why

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
    diagnosis, before = analysis.diagnosis, analysis.before_diagnosis
    wait = diagnosis.part("wait_for_peers") if diagnosis is not None else None
    if diagnosis is not None and diagnosis.source != "traces":
        known = diagnosis.ranks > 1
    else:  # the traces split the waits out where they matched collectives on two ranks
        known = analysis.ranks_analysed > 1 and analysis.collective_wait_pct is not None
    if wait is not None and known:
        return _pct(wait.share)
    if diagnosis is None and before is not None and before.sync_stall_pct is not None:
        return Shown(before.sync_stall_pct)
    if analysis.ranks_analysed < 2:
        return Shown(None, ONE_RANK)
    return Shown(None, why(analysis.unavailable.get("sync_stall_pct")) or NO_MATCH)


def exposed_comm_pct(analysis: ProfileAnalysis) -> Shown:
    """Exposed communication, % of the step: the diagnosis' exposed transfer (schema 1: all
    communication not hidden behind compute, waits included)."""
    diagnosis, before = analysis.diagnosis, analysis.before_diagnosis
    if diagnosis is None and before is not None and before.exposed_comm_pct is not None:
        return Shown(before.exposed_comm_pct)
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
    return f"{spelled.under_pct(share_bound(estimate.high))} of the step"


def own_straggler(analysis: ProfileAnalysis) -> StragglerFigures | None:
    """The straggler an analysis without a diagnosis named itself (with one, the diagnosis'
    verdict is the only straggler)."""
    before = analysis.before_diagnosis if analysis.diagnosis is None else None
    return before.straggler if before is not None else None


def own_whatifs(analysis: ProfileAnalysis) -> list[WhatIf]:
    """The what-ifs of an analysis without a diagnosis, largest first (with one, the
    diagnosis' what-if is the only one)."""
    before = analysis.before_diagnosis if analysis.diagnosis is None else None
    return sorted(before.whatif, key=lambda w: -w.speedup_pct) if before is not None else []
