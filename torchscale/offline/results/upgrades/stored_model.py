"""The findings and the busy-machine caveat of a diagnosis read from a stored step model.

A result whose step model was stored without findings (the diagnosis then held only the
model) gets them here from the model's own parts and straggler verdict, by the diagnosis'
rule (`offline/analysis/diagnosis/findings.py`: a cost measurable above noise and at least
2 % of the step), and the caveat from the result's host telemetry. No per-rank waits or
what-if are derived: those need the per-step table, which the stored model does not carry.
"""

from __future__ import annotations

from torchscale.contracts.schema.cell_result import CellResult, Diagnosis, Estimate, Problem
from torchscale.offline.analysis.diagnosis import busy_caveat, with_caveat
from torchscale.offline.analysis.diagnosis.findings import FindingInputs, rank_findings
from torchscale.offline.results.upgrades.point_figures import is_point_figures


def _share(diagnosis: Diagnosis, name: str) -> Estimate | None:
    part = diagnosis.part(name)
    return part.share if part is not None else None


def stored_model_findings(result: CellResult, diagnosis: Diagnosis) -> list[Problem]:
    """The findings of `diagnosis` (a stored model, decided by the phase timers) for its run,
    most expensive first."""
    several = diagnosis.ranks > 1
    inputs = FindingInputs(
        cycle_us=float(diagnosis.step_s.value or 0.0) * 1e6,
        ranks=diagnosis.ranks,
        device_type=result.cell.device,
        backend=result.cell.backend,
        strategy=result.cell.strategy,
        nodes=result.cell.nodes,
        stall=_share(diagnosis, "wait_for_peers") if several else None,
        exposed_transfer=_share(diagnosis, "exposed_transfer") if several else None,
        data=_share(diagnosis, "data"),
        waits_known=several,
        verdict=diagnosis.straggler,
    )
    return [f.stored() for f in rank_findings(inputs)]


def completed_from_model(result: CellResult) -> CellResult:
    """`result` with its stored model's findings and its busy-machine caveat in its diagnosis
    (as is where it has no diagnosis). A diagnosis read from point figures keeps the findings
    their own rule gave: the diagnosis' rule needs intervals they do not have."""
    diagnosis = result.diagnosis
    if diagnosis is None:
        return result
    if not is_point_figures(diagnosis):
        findings = stored_model_findings(result, diagnosis)
        diagnosis = diagnosis.model_copy(update={"findings": findings})
    diagnosis = with_caveat(diagnosis, busy_caveat(result.telemetry))
    return result.model_copy(update={"diagnosis": diagnosis})
