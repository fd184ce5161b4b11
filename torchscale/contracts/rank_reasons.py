"""Several reasons for one null figure as one reason (a rank's figure missing for more than
one cause, a cell's total missing on some ranks): a finding whose figures hold the reasons,
worded by contracts/wording/cell_telemetry.py. Built here, below the wording layer, so that
the clock verdict's rules (gpu_clocks.py) can use it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from torchscale.contracts.finding import Finding

NO_RANK_SAMPLED = Finding(code="unavailable.no_rank_sampled")


def _stored(reason: Finding) -> Any:
    return reason.model_dump()


def several(reasons: Iterable[Finding]) -> Finding:
    """Distinct reasons as one (in their order): the one, or all of them worded in turn."""
    distinct: dict[str, Finding] = {}
    for reason in reasons:
        distinct.setdefault(_key(reason), reason)
    ordered = list(distinct.values())
    if len(ordered) == 1:
        return ordered[0]
    return Finding(code="telemetry.several", figures={"reasons": [_stored(r) for r in ordered]})


def by_rank(reasons: Mapping[int, Finding], ranks: int) -> Finding:
    """The reasons of the ranks that lack a figure: once when all `ranks` share it, else
    named by rank."""
    if len(reasons) == ranks and len({_key(r) for r in reasons.values()}) == 1:
        return next(iter(reasons.values()))
    ranked = [{"rank": rank, "reason": _stored(r)} for rank, r in reasons.items()]
    return Finding(code="telemetry.by_rank", figures={"ranks": ranked})


def _key(reason: Finding) -> str:
    return reason.model_dump_json()
