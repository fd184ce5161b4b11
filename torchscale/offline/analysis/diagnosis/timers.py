"""The phase timers as evidence for the step model (step_model.py): every rank, every measured
step, no profiler. Pure functions over the per-step phase table.

The grad-sync wait is split at the same step across ranks: the rank that arrived last waits
only for the transfer itself, so `exposed_transfer` is the smallest grad-sync wait of any rank
at that step and each rank's `wait_for_peers` is the rest of its own (the trace analysis'
matched-wait idea). A late launcher's held launches (`held_launches.late_launcher`) leave
compute or the grad-sync wait, so the others' wait for it is wait for peers. The five parts:
docs/methodology.md, "One model of the step". The no_sync windows cross-check communication's
cost (`no_sync_cross_check`) and may contradict a straggler.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import CrossCheck, StepPart, StepSplit
from torchscale.contracts.step_phases import (
    COMM_HOLD,
    COMM_HOLD_BACKWARD,
    COMPUTE_PHASES,
    CPU_TIME,
    CPU_WAIT,
    STEP_PHASES,
)
from torchscale.offline.analysis.diagnosis.device import Calibrated
from torchscale.offline.analysis.diagnosis.held_launches import late_launcher
from torchscale.offline.analysis.diagnosis.step_model import (
    ALPHA,
    MIN_EFFECT_SHARE,
    NoSyncSteps,
    mean_step,
    wide,
)
from torchscale.offline.analysis.diagnosis.verdict import StragglerEvidence, judge
from torchscale.offline.analysis.uncertainty import block_indices, judged, percentile_interval

CELL_WAIT = "phase timers"  # where the cell model's others' wait for the candidate comes from


def step_parts(steps: pd.DataFrame) -> pd.DataFrame:
    """Per (window, step, rank) row of `steps` (columns window, step, rank, step_s and the
    phase seconds of STEP_PHASES), the five parts in seconds and `model_step_s`, their sum.
    Rows without every phase are dropped (phase timing off, or backward not split)."""
    needed = ["window", "step", "rank", "step_s", *STEP_PHASES]
    frame = steps[needed].dropna()
    frame = frame.astype({c: float for c in ["step_s", *STEP_PHASES]})
    step_mean = float(frame["step_s"].mean()) if not frame.empty else 0.0
    late = late_launcher(steps, MIN_EFFECT_SHARE * step_mean, ALPHA)
    held, held_backward = _extra_holds(steps, frame.index, late)
    sync_wait = (frame["grad_sync_wait"] - (held - held_backward).clip(lower=0.0)).clip(lower=0.0)
    transfer = sync_wait.groupby([frame["window"], frame["step"]]).transform("min").clip(lower=0.0)
    wait = (sync_wait - transfer).clip(lower=0.0)
    compute = frame[list(COMPUTE_PHASES)].clip(lower=0.0).sum(axis=1)
    compute = (compute - held_backward).clip(lower=0.0)
    if frame["rank"].nunique() == 1:
        # one rank exchanges nothing: its last gradient -> backward() returned is the autograd
        # engine finishing backward (77 us on an H100), compute, never exposed communication
        compute = compute + sync_wait
        transfer = transfer * 0.0
        wait = wait * 0.0
    data = frame["data"].clip(lower=0.0)
    timed = compute + data + wait + transfer
    # the step timer encloses the phase timers; a rest below zero is timer jitter: the step
    # the parts add up to is then the sum of the phases
    rest = (frame["step_s"] - timed).clip(lower=0.0)
    out = frame[["window", "step", "rank"]].assign(
        compute=compute, data=data, wait_for_peers=wait, exposed_transfer=transfer, rest=rest
    )
    return out.assign(model_step_s=timed + rest).reset_index(drop=True)


def _extra_holds(
    steps: pd.DataFrame, index: pd.Index, late: int | None
) -> tuple[pd.Series, pd.Series]:
    """Per row of `index`, the seconds the late launcher's hook (`held_launches.
    late_launcher`) held its launches beyond the median of the others' at the same step, and
    the part of that before its last gradient; 0 on every other row (every rank's own launch
    cost stays where it is, and a hook that blocks while it waits for peers is a wait)."""
    zero = pd.Series(0.0, index=index)
    if late is None:
        return zero, zero
    rows = steps.loc[index]
    key = [rows["window"], rows["step"]]
    out = []
    for column in (COMM_HOLD, COMM_HOLD_BACKWARD):
        values = rows[column].astype(float).fillna(0.0).clip(lower=0.0)
        others = values.where(rows["rank"] != late).groupby(key).transform("median")
        extra = (values - others.fillna(0.0)).clip(lower=0.0)
        out.append(extra.where(rows["rank"] == late, 0.0))
    held, before = out
    return held, before.clip(upper=held)


def cpu_wait_table(steps: pd.DataFrame, column: str = CPU_WAIT) -> pd.DataFrame | None:
    """(window, step) x rank seconds of the training thread's wait for a CPU (`column`
    CPU_TIME: its time on a CPU; COMM_HOLD: its comm hook's hold), from the steps table's
    column; None without the column (a table built before it), empty where no step has it
    (not Linux; no hook)."""
    if column not in steps.columns:
        return None
    rows = steps[["window", "step", "rank", column]].dropna()
    return rows.astype({column: float}).pivot_table(
        index=["window", "step"], columns="rank", values=column
    )


def no_sync_cross_check(
    sync_step_s: Sequence[float], no_sync: NoSyncSteps, transfer: StepPart, rest: StepPart
) -> CrossCheck:
    """Communication's cost measured by removing it: mean synchronised step minus the slowest
    rank's mean no_sync step, from the interleaved windows, against exposed transfer + rest
    of the model. no_sync also removes the interference of communication with compute (its
    threads, memory bandwidth), so a larger cost here means communication slows compute."""
    sync = np.asarray(sync_step_s, dtype=float)
    series = [np.asarray(v, dtype=float) for _, v in sorted(no_sync.per_rank.items())]
    if sync.size < 2 or any(s.size < 2 for s in series):
        detail = Finding(code="cross_check.no_sync_few_steps")
        return CrossCheck(check="no_sync_comm", estimate=None, agrees=None, detail=detail)
    sync_means = sync[block_indices(sync.size, seed=7)].mean(axis=1)
    means = [s[block_indices(s.size, seed=8 + i)].mean(axis=1) for i, s in enumerate(series)]
    slowest = np.max(np.vstack(means), axis=0)
    distribution = (sync_means - slowest) / sync_means
    value = float(sync.mean() - max(s.mean() for s in series)) / float(sync.mean())
    low, high = percentile_interval(distribution)
    estimate = judged(value, low, high, n=int(sync.size), upper=1.0)
    model_low = (transfer.share.low or 0.0) + (rest.share.low or 0.0)
    model_high = (transfer.share.high or 0.0) + (rest.share.high or 0.0)
    overlap = low <= model_high and model_low <= high
    figures = {"model_low": model_low, "model_high": model_high}
    if overlap:
        code = "cross_check.no_sync_agrees"
    else:
        code = "cross_check.no_sync_" + ("costs_more" if low > model_high else "saves_less")
        figures |= {"low": low, "high": high}
    detail = Finding(code=code, figures=figures)
    return CrossCheck(check="no_sync_comm", estimate=estimate, agrees=overlap, detail=detail)


def timers_step_split(
    steps: pd.DataFrame,
    no_sync: NoSyncSteps | None,
    parts: pd.DataFrame | None = None,
    calibration: Calibrated | None = None,
) -> StepSplit | None:
    """The step model of a cell from its per-step phase table (see step_parts; `parts`: its
    step_parts when the caller has them already; `calibration`: the ranks' fixed calibration,
    device.py); None when no step has every phase."""
    parts = step_parts(steps) if parts is None else parts
    if parts.empty:
        return None
    ranks = int(parts["rank"].nunique())
    model = mean_step(parts, ["window", "step"], ranks)
    evidence = StragglerEvidence(
        own=parts,
        phases=steps,
        step_s=model.step_s.value or 0.0,
        step=model.series,
        wait=wide(parts, "wait_for_peers").loc[model.per_step.index],
        wait_source=CELL_WAIT,
        cpu_wait=cpu_wait_table(steps),
        cpu_time=cpu_wait_table(steps, CPU_TIME),
        holds=cpu_wait_table(steps, COMM_HOLD),
        no_sync=no_sync,
        calibration=calibration,
    )
    verdict, checks = judge(evidence)
    if no_sync is not None and ranks > 1:
        by_name = {p.name: p for p in model.parts}
        sync_steps = parts.groupby(["window", "step"])["model_step_s"].mean().tolist()
        transfer, rest = by_name["exposed_transfer"], by_name["rest"]
        checks.append(no_sync_cross_check(sync_steps, no_sync, transfer, rest))
    return StepSplit(
        steps=int(model.per_step.shape[0]),
        ranks=ranks,
        step_s=model.step_s,
        parts=model.parts,
        straggler=verdict,
        cross_checks=checks,
    )
