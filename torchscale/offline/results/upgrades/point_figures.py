"""The step split and straggler verdict of a result that kept only point figures.

Such a result (no step model: `unavailable["diagnosis"]` says so) measured, for a cell of two
ranks or more, the median synchronised step T, the slowest rank's compute under no_sync, the
exposed communication (T - that compute) and the load imbalance (mean over ranks of the
slowest compute - theirs), each over T, without an interval. This reads them as today's
diagnosis, decided by the phase timers, so the report has one path:

- exposed transfer and waiting for peers are those shares, each a value with no interval;
  a share outside [0, 1] is noise no interval can tell apart: not measurable, with why;
- compute is the rest of the step where both shares are known and together at most 1; data
  and rest were never split from compute: not measurable, with why;
- the straggler is the rank of the highest compute, named where the run delayed it on
  purpose or the others wait for it at least `STRAGGLER_MIN` of the step (no significance
  test was run, and the verdict says so).

Its findings are judged by the rule of the point figures (`point_findings`: no interval, so
thresholds on the shares), not by the diagnosis' rule, which needs intervals. No per-rank
waits or what-if are built: they need the per-step table.
"""

from __future__ import annotations

from torchscale.contracts.schema.cell_result import (
    PART_NAMES,
    CellResult,
    Diagnosis,
    Estimate,
    StepPart,
    StragglerVerdict,
)
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.results.upgrades.point_findings import STRAGGLER_MIN, point_figure_findings

NO_INTERVAL = "no interval"
METHOD = "point figure (median synchronised step and no_sync window), no interval"
BASIS = "point figures: median synchronised step, no_sync window and phase timers"
OUTSIDE = "a point figure outside 0-100 %: noise no interval can tell apart"
NOT_SPLIT = "not split from compute: the point figures have compute, waits and exposed time only"
NOT_RECORDED = "not recorded"
TEST = (
    f"the run delayed it on purpose or the others wait for it at least {STRAGGLER_MIN:.0%} of "
    "the step (point figures: no significance test)"
)
NO_TEST = "no significance test"


def _point(value: float | None, *, share: bool) -> Estimate:
    """A point figure as an Estimate: the value with no interval, or not measurable with why
    (not recorded; a share outside [0, 1])."""
    if value is None:
        return _unknown(NOT_RECORDED)
    if share and not 0.0 <= value <= 1.0:
        return _unknown(OUTSIDE)
    return Estimate(
        value=value, low=None, high=None, n=0, method=METHOD, measurable=True, reason=NO_INTERVAL
    )


def _unknown(reason: str) -> Estimate:
    return Estimate(
        value=None, low=None, high=None, n=0, method=METHOD, measurable=False, reason=reason
    )


def _part(name: str, seconds: Estimate, share: Estimate) -> StepPart:
    return StepPart.model_validate({"name": name, "seconds": seconds, "share": share})


def step_parts(result: CellResult) -> tuple[Estimate, list[StepPart]]:
    """(the step T, the five parts in `PART_NAMES` order) from the point figures."""
    comm = result.communication
    if comm is not None:
        step = finite(comm.step_time_s)
    else:
        step = finite(result.step_time.p50) if result.step_time is not None else None
    exposed = finite(comm.comm_overhead) if comm else None
    imbalance = finite(comm.load_imbalance) if comm else None
    exposed_share = _point(exposed, share=True)
    waiting_share = _point(imbalance, share=True)
    parts = {
        "exposed_transfer": _part(
            "exposed_transfer",
            _point(finite(comm.exposed_comm_s) if comm else None, share=False)
            if exposed_share.measurable
            else _unknown(exposed_share.reason or OUTSIDE),
            exposed_share,
        ),
        "wait_for_peers": _part(
            "wait_for_peers",
            _point(finite(comm.load_imbalance_s) if comm else None, share=False)
            if waiting_share.measurable
            else _unknown(waiting_share.reason or OUTSIDE),
            waiting_share,
        ),
    }
    pair = (exposed_share.value, waiting_share.value)
    if pair[0] is not None and pair[1] is not None and pair[0] + pair[1] <= 1.0:
        share = 1.0 - pair[0] - pair[1]
        seconds = _point(share * step if step is not None else None, share=False)
        parts["compute"] = _part("compute", seconds, _point(share, share=True))
    else:
        why = NOT_RECORDED if exposed is None or imbalance is None else OUTSIDE
        parts["compute"] = _part("compute", _unknown(why), _unknown(why))
    for name in ("data", "rest"):
        parts[name] = _part(name, _unknown(NOT_SPLIT), _unknown(NOT_SPLIT))
    return _point(step, share=False), [parts[name] for name in PART_NAMES]


def straggler_verdict(result: CellResult) -> StragglerVerdict | None:
    """The slowest rank by compute, named where the run delayed it on purpose or the others
    wait for it at least `STRAGGLER_MIN` of the step (a share it can have); None where the
    result names no slowest rank."""
    straggler, comm = result.straggler, result.communication
    if straggler is None:
        return None
    imbalance = finite(comm.load_imbalance) if comm else None
    waited = imbalance is not None and STRAGGLER_MIN <= imbalance <= 1.0
    named = straggler.injected or waited
    gap = _point(straggler.compute_gap_s, share=False)
    phase_gap = _point(straggler.gap_s, share=False) if straggler.phase else None
    if named:
        summary = f"rank {straggler.rank} named: the slowest compute ({straggler.basis}), {NO_TEST}"
        not_named = None
    else:
        summary = f"nobody named: rank {straggler.rank} has the slowest compute, {NO_TEST}"
        not_named = f"the others wait for it less than {STRAGGLER_MIN:.0%} of the step"
    return StragglerVerdict(
        named=named,
        rank=straggler.rank if named else None,
        phase=straggler.phase if named else None,
        candidate_rank=straggler.rank,
        gap_s=gap,
        phase_gap_s=phase_gap,
        p_value=None,
        min_effect_s=None,
        not_named=not_named,
        injected=straggler.injected if named else None,
        test=TEST,
        summary=summary,
    )


def diagnosis_from_point_figures(result: CellResult) -> Diagnosis | None:
    """The diagnosis of a measured cell of two ranks or more that has none, from its point
    figures; None for others (one rank: nothing to split; a failed cell: nothing measured; a
    cell whose no_sync window gave neither share, e.g. tensor parallel, split elsewhere)."""
    if result.diagnosis is not None or result.status != "ok" or result.cell.world_size < 2:
        return None
    comm = result.communication
    if comm is None or (comm.comm_overhead is None and comm.load_imbalance is None):
        return None
    step, parts = step_parts(result)
    return Diagnosis(
        basis=BASIS,
        steps=result.step_time.count if result.step_time is not None else 0,
        ranks=result.cell.world_size,
        step_s=step,
        parts=parts,
        straggler=straggler_verdict(result),
        findings=point_figure_findings(result),
        source="phase timers",
    )


def is_point_figures(diagnosis: Diagnosis | None) -> bool:
    """Whether `diagnosis` was read from point figures (no interval anywhere in it)."""
    return diagnosis is not None and diagnosis.basis == BASIS


def with_point_figure_diagnosis(result: CellResult) -> CellResult:
    """`result` with `diagnosis_from_point_figures` as its diagnosis (as is where none)."""
    diagnosis = diagnosis_from_point_figures(result)
    if diagnosis is None:
        return result
    return result.model_copy(update={"diagnosis": diagnosis})
