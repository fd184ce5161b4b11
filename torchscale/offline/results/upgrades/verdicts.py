"""Why a straggler verdict that did not name its candidate did not, for verdicts stored
before they said so (`StragglerVerdict.why_not`), read off the verdict's own
fields: a check that withdrew the name, an interval that reaches 0, or a gap below the
minimum effect."""

from __future__ import annotations

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import Diagnosis, StragglerVerdict


def not_named_reason(verdict: StragglerVerdict) -> Finding:
    """The rule that left the candidate unnamed."""
    if verdict.withdrawn_by:
        return Finding(code="straggler.withdrawn", figures={"by": verdict.withdrawn_by})
    gap = verdict.gap_s
    if gap is None or gap.low is None or gap.low <= 0:
        return Finding(code="straggler.noise_interval")
    return Finding(code="straggler.below_minimum")


def with_not_named(diagnosis: Diagnosis | None) -> Diagnosis | None:
    """`diagnosis` whose unnamed, tested verdict says why in `why_not` (as is otherwise: a
    named verdict, one without a tested candidate, or one the host's wait withdrew)."""
    verdict = diagnosis.straggler if diagnosis is not None else None
    if diagnosis is None or verdict is None or verdict.why_not or verdict.stored_not_named:
        return diagnosis
    if verdict.named or verdict.host_bound or verdict.candidate_rank is None:
        return diagnosis
    if verdict.gap_s is None:
        return diagnosis
    named = verdict.model_copy(update={"why_not": not_named_reason(verdict)})
    return diagnosis.model_copy(update={"straggler": named})
