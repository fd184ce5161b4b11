"""The step split and straggler verdict of a result that kept only point figures.

Such a result (no step model: `unavailable["diagnosis"]` says so) measured, for a cell of two
ranks or more, the median synchronised step T, the slowest rank's compute under no_sync, the
exposed communication (T - that compute) and the load imbalance (mean over ranks of the
slowest compute - theirs), each over T, without an interval. This reads them as today's
diagnosis, decided by the phase timers, so the report has one path:

- exposed transfer and waiting for peers are those shares, each a value with no interval;
  a share outside [0, 1], or two that together exceed the step, is noise no interval can
  tell apart: not measurable, with why;
- compute is the rest of the step where both shares are known and together at most 1; data
  and rest are inside compute in these figures: not measurable, with why;
- the straggler is the rank of the highest compute, named where the run delayed it on
  purpose or the others wait for it at least `STRAGGLER_MIN` of the step (no significance
  test was run, and the verdict says so).

A tensor-parallel cell has no no_sync window but may have profiled steps after its windows
(`parallel.profiled_comm`): their exposed-transfer and waiting shares are read the same way,
each a value with no interval from the profiled steps, over their median step.
A measured cell with neither (one rank, pipeline parallel) gets the same diagnosis with every
part not measurable: its step and the findings of its data wait.

Its findings are judged by the rule of the point figures (`point_findings`: no interval, so
thresholds on the shares), not by the diagnosis' rule, which needs intervals; its `rule`
says so (`BASIS`), for the report to show how it judged. No per-rank waits or what-if are
built: they need the per-step table.
"""

from __future__ import annotations

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import (
    PART_NAMES,
    CellResult,
    Diagnosis,
    Estimate,
    Reason,
    StepPart,
    StragglerVerdict,
)
from torchscale.contracts.wording.estimates import SAID, said
from torchscale.contracts.wording.spelled import pct_one, pct_whole
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.results.upgrades.older_blocks import OlderBlocks
from torchscale.offline.results.upgrades.point_findings import (
    DATA_WAIT_MIN,
    EXPOSED_COMM_MIN,
    STRAGGLER_MIN,
    point_figure_findings,
)

NO_INTERVAL = said("estimate.no_interval")
METHOD = "point figure (median synchronised step and no_sync window), no interval"
BASIS = (
    "point figures (median synchronised step, no_sync window and phase timers; no interval), "
    f"judged by thresholds: a straggler the others wait for at least {pct_one(STRAGGLER_MIN)}, "
    f"exposed communication of at least {pct_one(EXPOSED_COMM_MIN)} or a data wait of at "
    f"least {pct_one(DATA_WAIT_MIN)} of the step"
)
PROFILED_METHOD = "point figure (steps profiled after the measured windows), no interval"
PROFILED = said("estimate.profiled")
PROFILED_STEP = said("estimate.profiled_step")
PROFILED_BASIS = (
    "profiled steps after the measured windows (tensor-parallel collectives; no interval), "
    + BASIS.split("), ", 1)[1]
)
SYNC_STEP = said("estimate.sync_step")
POOLED_STEP = said("estimate.pooled_step")
OUTSIDE = said("estimate.outside_share")
OVER_STEP = said("estimate.over_step")
INSIDE_COMPUTE = said("estimate.inside_compute")
NOT_RECORDED = said("estimate.not_recorded")
# the reasons are short: each is said in a table cell, five to a row (the result's
# `unavailable` says more)
NO_WINDOW = said("estimate.no_window")
ONE_RANK = said("estimate.point_one_rank")
TEST = (
    "the run delayed it on purpose or the others wait for it at least "
    f"{pct_whole(STRAGGLER_MIN)} of the step (point figures: no significance test)"
)
NO_TEST = "no significance test"


def _point(
    value: float | None, *, share: bool, reason: Reason = NO_INTERVAL, method: str = METHOD
) -> Estimate:
    """A point figure as an Estimate: the value with no interval, or not measurable with why
    (not recorded; a share outside [0, 1])."""
    if value is None:
        return _unknown(NOT_RECORDED, method)
    if share and not 0.0 <= value <= 1.0:
        return _unknown(OUTSIDE, method)
    return Estimate(
        value=value, low=None, high=None, n=0, method=method, measurable=True, reason=reason
    )


def _unknown(reason: Reason, method: str = METHOD) -> Estimate:
    return Estimate(
        value=None, low=None, high=None, n=0, method=method, measurable=False, reason=reason
    )


def _part(name: str, seconds: Estimate, share: Estimate) -> StepPart:
    return StepPart.model_validate({"name": name, "seconds": seconds, "share": share})


def _unknown_part(name: str, reason: Reason, method: str = METHOD) -> StepPart:
    return _part(name, _unknown(reason, method), _unknown(reason, method))


def _share_part(name: str, share: Estimate, seconds: float | None, method: str) -> StepPart:
    """A part read from its share and its seconds: the seconds only where the share is one."""
    if not share.measurable:
        return _unknown_part(name, share.reason or OUTSIDE, method)
    return _part(
        name, _point(seconds, share=False, reason=share.reason or NO_INTERVAL, method=method), share
    )


def _compute_why(exposed: Estimate, waiting: Estimate) -> Finding:
    """Why compute, the rest of the step after the two shares, is not measurable."""
    if exposed.reason == OVER_STEP:
        return OVER_STEP
    label, share = ("exposed comm", exposed) if not exposed.measurable else ("waiting", waiting)
    why = share.reason or OUTSIDE
    figures = {"label": label, "reason": why.model_dump() if isinstance(why, Finding) else why}
    return Finding(code="estimate.rest_after", figures=figures)


def step_parts(result: CellResult, older: OlderBlocks) -> tuple[Estimate, list[StepPart]]:
    """(the step T, the five parts in `PART_NAMES` order) from the point figures."""
    comm = older.communication
    if comm is not None:
        step = _point(finite(comm.step_time_s), share=False, reason=SYNC_STEP)
    else:
        step = _pooled_step(result)
    exposed = _point(finite(comm.comm_overhead) if comm else None, share=True)
    waiting = _point(finite(comm.load_imbalance) if comm else None, share=True)
    seconds = (
        finite(comm.exposed_comm_s) if comm else None,
        finite(comm.load_imbalance_s) if comm else None,
    )
    return step, _split(step, exposed, waiting, seconds, METHOD)


def profiled_parts(result: CellResult) -> tuple[Estimate, list[StepPart]] | None:
    """(the profiled step, the five parts) from a tensor-parallel cell's profiled steps, each
    share a value with no interval; None where it profiled no share."""
    profiled = result.parallel.profiled_comm if result.parallel is not None else None
    if profiled is None or (
        profiled.exposed_transfer is None and profiled.waiting_for_peers is None
    ):
        return None
    step_s = finite(profiled.step_s)
    step = _point(step_s, share=False, reason=PROFILED_STEP, method=PROFILED_METHOD)

    def share(value: float | None) -> Estimate:
        return _point(finite(value), share=True, reason=PROFILED, method=PROFILED_METHOD)

    exposed, waiting = share(profiled.exposed_transfer), share(profiled.waiting_for_peers)
    seconds = tuple(
        e.value * step_s if e.value is not None and step_s is not None else None
        for e in (exposed, waiting)
    )
    return step, _split(step, exposed, waiting, (seconds[0], seconds[1]), PROFILED_METHOD)


def _split(
    step: Estimate,
    exposed: Estimate,
    waiting: Estimate,
    seconds: tuple[float | None, float | None],
    method: str,
) -> list[StepPart]:
    """The five parts from the exposed-transfer and waiting shares (and their seconds): compute
    the rest of the step; data and rest inside compute; two shares over the step both not
    measurable."""
    both = exposed.value is not None and waiting.value is not None
    if both and (exposed.value or 0.0) + (waiting.value or 0.0) > 1.0:
        exposed, waiting = _unknown(OVER_STEP, method), _unknown(OVER_STEP, method)
    parts = {
        "exposed_transfer": _share_part("exposed_transfer", exposed, seconds[0], method),
        "wait_for_peers": _share_part("wait_for_peers", waiting, seconds[1], method),
    }
    if exposed.value is not None and waiting.value is not None:
        share = 1.0 - exposed.value - waiting.value
        rest_s = share * step.value if step.value is not None else None
        parts["compute"] = _part(
            "compute",
            _point(rest_s, share=False, reason=exposed.reason or NO_INTERVAL, method=method),
            _point(share, share=True, reason=exposed.reason or NO_INTERVAL, method=method),
        )
    else:
        parts["compute"] = _unknown_part("compute", _compute_why(exposed, waiting), method)
    for name in ("data", "rest"):
        parts[name] = _unknown_part(name, INSIDE_COMPUTE, method)
    return [parts[name] for name in PART_NAMES]


def _pooled_step(result: CellResult) -> Estimate:
    p50 = finite(result.step_time.p50) if result.step_time is not None else None
    return _point(p50, share=False, reason=POOLED_STEP)


def _why_not_named(imbalance: float | None) -> str:
    """Why the slowest rank is not named: its wait was not recorded, is no share the step can
    have, or is below `STRAGGLER_MIN`."""
    if imbalance is None:
        return "the others' wait for it was not recorded"
    if not 0.0 <= imbalance <= 1.0:
        return f"the others' wait for it is {SAID['estimate.outside_share']}"
    return f"the others wait for it less than {pct_whole(STRAGGLER_MIN)} of the step"


def straggler_verdict(older: OlderBlocks) -> StragglerVerdict | None:
    """The slowest rank by compute, named where the run delayed it on purpose or the others
    wait for it at least `STRAGGLER_MIN` of the step (a share it can have); None where the
    result names no slowest rank."""
    straggler, comm = older.straggler, older.communication
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
        not_named = _why_not_named(imbalance)
    return StragglerVerdict(
        named=named,
        rank=straggler.rank if named else None,
        phase=straggler.phase if named else None,
        candidate_rank=straggler.rank,
        gap_s=gap,
        phase_gap_s=phase_gap,
        p_value=None,
        min_effect_s=None,
        stored_not_named=not_named,
        injected=straggler.injected if named else None,
        test=TEST,
        stored_summary=summary,
    )


def diagnosis_from_point_figures(result: CellResult, older: OlderBlocks) -> Diagnosis | None:
    """The diagnosis of a measured cell that has none, from its point figures (its step split
    where its no_sync window gave a share, else every part not measurable) and the findings
    of their rule; None for a cell with a diagnosis or one that measured nothing."""
    if result.diagnosis is not None or result.status != "ok":
        return None
    comm = older.communication
    split = (
        result.cell.world_size >= 2
        and comm is not None
        and (comm.comm_overhead is not None or comm.load_imbalance is not None)
    )
    profiled = None if split or result.cell.world_size < 2 else profiled_parts(result)
    basis = PROFILED_BASIS if profiled is not None else BASIS
    if split:
        step, parts = step_parts(result, older)
    elif profiled is not None:
        step, parts = profiled
    else:
        why = ONE_RANK if result.cell.world_size < 2 else NO_WINDOW
        step, parts = _pooled_step(result), [_unknown_part(n, why) for n in PART_NAMES]
    return Diagnosis(
        basis=basis,
        steps=result.step_time.count if result.step_time is not None else 0,
        ranks=result.cell.world_size,
        step_s=step,
        parts=parts,
        straggler=straggler_verdict(older) if result.cell.world_size >= 2 else None,
        findings=point_figure_findings(result, older),
        source="phase timers",
        rule=basis,
        no_sync=older.no_sync(),
    )


def is_point_figures(diagnosis: Diagnosis | None) -> bool:
    """Whether `diagnosis` was read from point figures (no interval anywhere in it)."""
    return diagnosis is not None and diagnosis.basis in (BASIS, PROFILED_BASIS)


def with_point_figure_diagnosis(result: CellResult, older: OlderBlocks) -> CellResult:
    """`result` with `diagnosis_from_point_figures` as its diagnosis (as is where none)."""
    diagnosis = diagnosis_from_point_figures(result, older)
    return result if diagnosis is None else result.model_copy(update={"diagnosis": diagnosis})
