"""The traces as evidence for the one step model (step_model.py): the same five parts as the
phase timers' (timers.py), with the same definitions, so that every figure a profile prints is
one of them or a cross-check of them. Per rank and complete step the idle taxonomy (`idle.py`)
cuts the step window instant by instant, each instant counted once, so the parts are never
negative and add up to the step by construction (the parts' definitions: docs/profiling.md,
"How each figure is computed"; the model: docs/methodology.md, "One model of the step").

The straggler verdict is the one judge's (`verdict.judge`); arrival order is a cross-check,
never a second headline. The what-if and findings are diagnose.py's; the traced steps against
the run's measured windows are inflation.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import (
    PART_NAMES,
    CrossCheck,
    Estimate,
    OwnWork,
    StepPart,
    StepSplit,
    StragglerVerdict,
)
from torchscale.contracts.step_phases import OWN_WORK_PHASES
from torchscale.contracts.wording.profile import note
from torchscale.offline.analysis.diagnosis.device import Calibrated
from torchscale.offline.analysis.diagnosis.step_model import (
    mean_step,
    part_estimates,
    share_of_step,
    wide,
)
from torchscale.offline.analysis.diagnosis.verdict import ArrivalOrder, StragglerEvidence, judge
from torchscale.offline.analysis.trace.collective_matching import Matched
from torchscale.offline.analysis.trace.straggler import StragglerAnalysis

PART_COLUMNS = ["rank", "step", "step_s", *PART_NAMES, "host_wait", "memory"]


@dataclass
class StepModel:
    """The model and what the surfaces need beside it.

    `parts`: per rank and step used (seconds; PART_COLUMNS, host_wait is the part of rest the
    device waited for the host, memory the part of compute that is device copies).
    `per_rank`: each rank's parts over those steps with intervals. `own`: what the straggler
    test compared (step, rank, compute = the own work per step), for the diagnosis' what-if.
    `waits_known`: collectives were matched across ranks, so wait and transfer are split."""

    attribution: StepSplit | None
    parts: pd.DataFrame
    per_rank: dict[int, list[StepPart]] = field(default_factory=dict)
    own: pd.DataFrame | None = None
    host_wait: Estimate | None = None
    memory: Estimate | None = None
    waits_known: bool = False
    own_work: OwnWork = "step_parts"
    reason: str | None = None  # why there is no model: a profile.* code
    notes: list[Finding] = field(default_factory=list)


def trace_parts(taxonomy: pd.DataFrame) -> pd.DataFrame:
    """The five parts per rank and step (seconds) from `idle.idle_taxonomy`; step_s is their
    sum (the step window, up to rounding)."""
    if taxonomy.empty:
        frame = pd.DataFrame({c: pd.Series(dtype=np.float64) for c in PART_COLUMNS})
        return frame.astype({"rank": np.int64, "step": np.int64})
    t = taxonomy
    out = pd.DataFrame(
        {
            "rank": t["rank"].to_numpy(dtype=np.int64),
            "step": t["step"].to_numpy(dtype=np.int64),
            "compute": (t["compute_us"] + t["memory_us"]).to_numpy(np.float64) / 1e6,
            "data": t["data_us"].to_numpy(np.float64) / 1e6,
            "wait_for_peers": t["waiting_for_peers_us"].to_numpy(np.float64) / 1e6,
            "exposed_transfer": t["transfer_us"].to_numpy(np.float64) / 1e6,
            "rest": (t["host_wait_us"] + t["other_idle_us"]).to_numpy(np.float64) / 1e6,
            "host_wait": t["host_wait_us"].to_numpy(np.float64) / 1e6,
            "memory": t["memory_us"].to_numpy(np.float64) / 1e6,
        }
    )
    for name in PART_NAMES:  # float rounding of the interval sums only
        out[name] = out[name].clip(lower=0.0)
    out["step_s"] = out[list(PART_NAMES)].sum(axis=1)
    return out[PART_COLUMNS]


def common_steps(parts: pd.DataFrame, notes: list[Finding]) -> pd.DataFrame:
    """The rows of steps every rank has. Ranks whose captures share no step number are paired
    by position (the k-th complete step of each), with a note."""
    ranks = parts["rank"].nunique()
    if ranks < 2:
        return parts
    present = parts.groupby("step")["rank"].transform("nunique")
    kept = parts[present == ranks]
    if not kept.empty:
        dropped = int(parts["step"].nunique() - kept["step"].nunique())
        if dropped:
            notes.append(note("profile.steps_left_out", count=dropped))
        return kept
    notes.append(note("profile.steps_by_position"))
    by_position = parts.sort_values(["rank", "step"]).assign(
        step=lambda f: f.groupby("rank").cumcount().astype(np.int64)
    )
    present = by_position.groupby("step")["rank"].transform("nunique")
    return by_position[present == ranks]


TRACE_WAIT = "matched collectives"  # where the others' wait for the candidate comes from


def own_work(
    parts: pd.DataFrame, phases_by_rank: Mapping[int, pd.DataFrame], waits_known: bool = True
) -> tuple[pd.DataFrame, pd.DataFrame, OwnWork]:
    """What the straggler test compares, per rank and step, as the cell's `straggler_verdict`
    reads it: (own, phases, basis). `own` has window, step, rank, compute (= the own work) and
    data (0); `phases` has window, step, rank and the seconds of each phase.

    Phase basis when every rank has forward and backward ranges (torchscale's markers) and
    collectives were matched: on GPUs a rank late on the host (a slow data step, a sleep)
    shows in its phases' host time, not in its kernels. Without collectives a phase cannot
    tell its work from a wait inside it (it counts its whole duration), so then, as for
    traces of any job, the compute and data parts, and the phases' busy time for the slow
    phase."""
    keys = parts[["rank", "step"]]
    frames = [t.assign(rank=int(r)) for r, t in sorted(phases_by_rank.items()) if not t.empty]
    ranks = set(int(r) for r in parts["rank"].unique())
    phase_ok = False
    wide = pd.DataFrame()
    if frames:
        allp = pd.concat(frames, ignore_index=True)
        have = allp.groupby("rank")["phase"].agg(lambda s: set(s.astype(str)))
        phase_ok = (
            waits_known
            and set(have.index.astype(int)) >= ranks
            and all({"forward", "backward"} <= have.get(r, set()) for r in ranks)
        )
        # without collectives a phase's duration may hold a wait: compare its work only
        value = "effective_us" if waits_known else "busy_us"
        wide = allp.pivot_table(
            index=["rank", "step"], columns="phase", values=value, aggfunc="sum"
        )
        wide = (wide / 1e6).reset_index()
        wide.columns = [str(c) for c in wide.columns]
        wide = keys.merge(wide, on=["rank", "step"], how="left")
    for phase in OWN_WORK_PHASES:
        if phase not in wide.columns:
            wide[phase] = np.nan
    if wide.empty:
        wide = keys.assign(**{p: np.nan for p in OWN_WORK_PHASES})
    wide = wide.assign(window=0)
    if phase_ok:
        own_s = wide[list(OWN_WORK_PHASES)].sum(axis=1, min_count=1)
        own = wide[["window", "step", "rank"]].assign(compute=own_s.to_numpy(), data=0.0)
        own = own.dropna(subset=["compute"])
        return own, wide, "phase_ranges"
    own = parts[["step", "rank"]].assign(
        window=0, compute=(parts["compute"] + parts["data"]).to_numpy(), data=0.0
    )
    return own, wide, "step_parts"


def build_step_model(
    taxonomy: pd.DataFrame,
    *,
    phases_by_rank: Mapping[int, pd.DataFrame],
    matched: Matched | None,
    arrival: StragglerAnalysis | None,
    waits_known: bool,
    world_size: int | None,
    cpu_wait: pd.DataFrame | None = None,
    calibration: Calibrated | None = None,
) -> StepModel:
    """The trace attribution of one profile (see the module doc). `taxonomy`:
    `idle.idle_taxonomy`; `arrival`: `straggler.attribute_straggler`; `waits_known`:
    collectives were matched, so the wait for peers is split from the transfer; `world_size`:
    as the traces declare it; `cpu_wait`: (rank, step, cpu_wait[, cpu_time]) seconds each
    rank's training thread waited for a CPU (and ran on one) in the traced steps
    (`host.cpu_wait_check`); `calibration`: the ranks' fixed calibration beside the measured
    windows of the same run (device.py; None: none). The what-if
    and findings are the diagnosis' (diagnose.py)."""
    notes: list[Finding] = []
    parts = trace_parts(taxonomy)
    if parts.empty:
        return StepModel(None, parts, reason="profile.no_complete_step", notes=notes)
    parts = common_steps(parts, notes)
    if parts.empty:
        return StepModel(None, parts, reason="profile.no_step_on_every_rank", notes=notes)
    ranks = int(parts["rank"].nunique())
    mean = mean_step(parts, "step", ranks, extra=("host_wait", "memory"))
    per_step, step_est, estimates = mean.per_step, mean.step_s, mean.parts
    step_series = mean.series
    one_of_many = ranks == 1 and (world_size or 1) > 1
    if one_of_many or (ranks > 1 and not waits_known):
        why = Finding(
            code="estimate.wait_not_separable",
            figures={"world_size": world_size if one_of_many else None},
        )
        estimates = [
            p.model_copy(update={"seconds": _unknown(why), "share": _unknown(why)})
            if p.name == "wait_for_peers"
            else p
            for p in estimates
        ]
    host = share_of_step(
        per_step["host_wait"].to_numpy(np.float64),
        step_series,
    )
    memory = share_of_step(
        per_step["memory"].to_numpy(np.float64),
        step_series,
    )
    model = StepModel(
        attribution=None,
        parts=parts,
        host_wait=host,
        memory=memory,
        waits_known=waits_known and ranks > 1,
        notes=notes,
    )
    for rank, rows in parts.groupby("rank"):
        matrix = rows.sort_values("step")[list(PART_NAMES)].to_numpy(np.float64)
        model.per_rank[int(rank)] = part_estimates(matrix, 1, lone=False)[1]
    verdict: StragglerVerdict | None = None
    checks: list[CrossCheck] = []
    if ranks > 1:
        own, phases, model.own_work = own_work(parts, phases_by_rank, model.waits_known)
        model.own = own
        waits, busy = _cpu_tables(cpu_wait)
        evidence = StragglerEvidence(
            own=own,
            phases=phases,
            step_s=step_est.value or 0.0,
            step=step_series,
            wait=wide(parts.assign(window=0), "wait_for_peers") if model.waits_known else None,
            wait_source=TRACE_WAIT,
            cpu_wait=waits,
            cpu_time=busy,
            order=ArrivalOrder(matched, arrival),
            own_work=model.own_work,
            calibration=calibration,
        )
        verdict, checks = judge(evidence)
    model.attribution = StepSplit(
        steps=int(per_step.shape[0]),
        ranks=ranks,
        step_s=step_est,
        parts=estimates,
        straggler=verdict,
        cross_checks=checks,
    )
    return model


def _cpu_tables(cpu_wait: pd.DataFrame | None) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """(wait for a CPU, time on a CPU): (window, step) x rank seconds of the traced steps
    from the (rank, step, cpu_wait[, cpu_time]) frame; None where not measured."""
    if cpu_wait is None or cpu_wait.empty:
        return None, None
    frame = cpu_wait.assign(window=0)
    tables = [
        frame.pivot_table(index=["window", "step"], columns="rank", values=column)
        if column in frame.columns and frame[column].notna().any()
        else None
        for column in ("cpu_wait", "cpu_time")
    ]
    return tables[0], tables[1]


def _unknown(why: Finding) -> Estimate:
    return Estimate(
        value=None,
        low=None,
        high=None,
        n=0,
        measurable=False,
        reason=why,
    )
