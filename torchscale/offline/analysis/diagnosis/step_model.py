"""The one model of a step, and the straggler test. Pure functions over per-step tables.

Every step of every rank splits into five parts that are never negative and add up to the
step by construction (docs/methodology.md, "One model of the step"):

    step = compute + data + wait_for_peers + exposed_transfer + rest

- compute: the rank's own work (forward, backward up to its last gradient, optimizer);
- data: the wait for its batch;
- exposed_transfer + wait_for_peers: the grad-sync wait (last gradient -> backward returned)
  split at the same step across ranks: the rank that arrived last waits only for the transfer
  itself, so `exposed_transfer` is the smallest grad-sync wait of any rank at that step and
  each rank's `wait_for_peers` is its grad-sync wait minus that (the matched-wait idea of the
  trace analysis, applied to the phase timers);
- rest: what the timers see between the phases (the step minus the four above), and the time
  a late launcher's DDP communication hook held its launches beyond the others'
  (`held_launches.late_launcher`): held before its last gradient it leaves compute, held after
  it leaves the grad-sync wait before that is split, so the others' wait for its late launch
  is their wait for peers, not a transfer every rank pays.

Averaged over ranks, compute + wait_for_peers is the slowest rank's own work: the others wait
for it. The cell's figures are means over ranks and steps (means add up; medians do not), each
with a moving-block bootstrap interval over the steps, resampling whole steps so the parts add
up in every resample too.

A straggler is named only when its per-step gap is significant (paired test, stated in
`STRAGGLER_TEST`) and large enough to matter (MIN_EFFECT_SHARE of the step), and the no_sync
windows, where they exist, do not contradict it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from torchscale.contracts.schema.cell_result import (
    PART_NAMES,
    Attribution,
    CrossCheck,
    Estimate,
    StepPart,
    StragglerVerdict,
)
from torchscale.contracts.step_phases import (
    COMM_HOLD,
    COMM_HOLD_BACKWARD,
    COMPUTE_PHASES,
    CPU_TIME,
    CPU_WAIT,
    OWN_WORK_PHASES,
    STEP_PHASES,
)
from torchscale.offline.analysis.diagnosis.held_launches import held_launch_check, late_launcher
from torchscale.offline.analysis.diagnosis.kind import (
    KindEvidence,
    named_summary,
    not_named_reason,
    straggler_kind,
    unnamed_summary,
)
from torchscale.offline.analysis.uncertainty import (
    ONE_UNIT,
    GapTest,
    block_indices,
    judged,
    mean_columns,
    paired_gap_test,
    percentile_interval,
)

MIN_EFFECT_SHARE = 0.05  # a straggler costs the others at least 5 % of the step, or it is noise
ALPHA = 0.01
STRAGGLER_TEST = (
    "one-sided Wilcoxon signed-rank test of the per-step differences (the rank's own work "
    "minus the median of the other ranks' at the same step), p < {alpha:g}, and the lower end "
    "of the 95 % block-bootstrap interval of the mean difference at least {share:.0%} of the "
    "mean step ({min_effect:.3g} ms)"
)
# the smallest one-sided signed-rank p-value with n steps is 2^-n: fewer steps can never pass
MIN_PAIRED_STEPS = math.floor(math.log2(1 / ALPHA)) + 1  # smallest n with 2^-n < ALPHA
PHASE_BASIS = "phase timers of the synchronised steps (every rank, every measured step)"
ONE_RANK = "one rank: no peers to wait for"
CELL_WAIT = "phase timers"  # where the cell model's others' wait for the candidate comes from


@dataclass(frozen=True)
class NoSyncSteps:
    """The interleaved no_sync windows: per rank its free-running step times (seconds)."""

    per_rank: dict[int, list[float]]


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
    transfer = sync_wait.groupby([frame["window"], frame["step"]]).transform("min")
    transfer = transfer.clip(lower=0.0)
    wait = (sync_wait - transfer).clip(lower=0.0)
    compute = (frame[list(COMPUTE_PHASES)].clip(lower=0.0).sum(axis=1) - held_backward).clip(
        lower=0.0
    )
    data = frame["data"].clip(lower=0.0)
    timed = compute + data + wait + transfer
    # the step timer encloses the phase timers; a rest below zero is timer jitter: the step
    # the parts add up to is then the sum of the phases
    rest = (frame["step_s"] - timed).clip(lower=0.0)
    out = frame[["window", "step", "rank"]].copy()
    out["compute"] = compute
    out["data"] = data
    out["wait_for_peers"] = wait
    out["exposed_transfer"] = transfer
    out["rest"] = rest
    out["model_step_s"] = timed + rest
    return out.reset_index(drop=True)


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


def part_estimates(matrix: np.ndarray, ranks: int) -> tuple[Estimate, list[StepPart]]:
    """Mean step and the parts (seconds and shares) with block-bootstrap intervals from a
    (steps, parts) matrix of rank-averaged seconds."""
    steps = matrix.shape[0]
    means, resampled = mean_columns(matrix)
    step_mean = float(means.sum())
    method = f"moving-block bootstrap over {steps} steps (means over {ranks} rank(s))"
    if resampled is None:
        reason = ONE_UNIT.format(unit="step")
        step_est = judged(step_mean, None, None, n=1, method="one step", reason=reason)
        parts = [
            StepPart(
                name=name,
                seconds=judged(float(means[i]), None, None, n=1, method="one step", reason=reason),
                share=judged(
                    float(means[i] / step_mean) if step_mean > 0 else 0.0,
                    None,
                    None,
                    n=1,
                    method="one step",
                    reason=reason,
                ),
            )
            for i, name in enumerate(PART_NAMES)
        ]
        return step_est, parts
    totals = resampled.sum(axis=1)
    low, high = percentile_interval(totals)
    step_est = judged(step_mean, low, high, n=steps, method=method)
    shares = resampled / np.where(totals > 0, totals, np.nan)[:, None]
    parts = []
    for i, name in enumerate(PART_NAMES):
        if ranks == 1 and name in ("wait_for_peers",):
            zero = Estimate(
                value=0.0,
                low=0.0,
                high=0.0,
                n=steps,
                method=method,
                measurable=True,
                reason=ONE_RANK,
            )
            parts.append(StepPart(name=name, seconds=zero, share=zero))
            continue
        s_low, s_high = percentile_interval(resampled[:, i])
        f_low, f_high = percentile_interval(shares[:, i])
        share_value = float(means[i] / step_mean) if step_mean > 0 else 0.0
        parts.append(
            StepPart(
                name=name,
                seconds=judged(float(means[i]), s_low, s_high, n=steps, method=method),
                share=judged(share_value, f_low, f_high, n=steps, method=method, upper=1.0),
            )
        )
    return step_est, parts


def _pivot(parts: pd.DataFrame, column: str) -> pd.DataFrame:
    """(window, step) x rank table of one column."""
    return parts.pivot_table(index=["window", "step"], columns="rank", values=column)


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


def straggler_verdict(
    steps: pd.DataFrame,
    parts: pd.DataFrame,
    step_mean_s: float,
    no_sync: NoSyncSteps | None,
) -> StragglerVerdict:
    """Name the rank whose own work (data + forward + backward + optimizer) per step is
    significantly above the others' at the same step, its slow phase and the kind of its
    extra time (`straggler_kind`; `cpu_wait_check` may then make it host); else say in plain
    words why the largest gap is not named."""
    own = parts.assign(own=parts["compute"] + parts["data"])
    table = _pivot(own, "own").dropna()
    min_effect = MIN_EFFECT_SHARE * step_mean_s
    test = STRAGGLER_TEST.format(alpha=ALPHA, share=MIN_EFFECT_SHARE, min_effect=min_effect * 1e3)
    ranks = list(table.columns)
    untested = None
    if len(ranks) < 2 or table.empty:
        untested = "no straggler test: fewer than two ranks with phase timers"
    elif len(table) < MIN_PAIRED_STEPS:
        untested = (
            f"no straggler test: {len(table)} paired steps, the test needs at least "
            f"{MIN_PAIRED_STEPS} to reach p < {ALPHA:g} (measure more steps)"
        )
    if untested is not None:
        return StragglerVerdict(
            named=False,
            rank=None,
            phase=None,
            candidate_rank=None,
            gap_s=None,
            p_value=None,
            significant=False,
            min_effect_s=min_effect,
            test=test,
            summary=untested,
            not_named=untested.removeprefix("no straggler test: "),
        )
    candidate = int(max(ranks, key=lambda r: (float(table[r].mean()), -int(r))))
    others = table.drop(columns=[candidate]).median(axis=1)
    result = paired_gap_test(table[candidate] - others, min_effect_s=min_effect, alpha=ALPHA)
    gap = _gap_estimate(result.mean_s, result.low_s, result.high_s, result.steps)
    contradiction = _no_sync_contradicts(no_sync, candidate)
    phase_tests = _phase_tests(steps, candidate, min_effect)
    phase, phase_gap = None, None
    if result.significant:
        phase, phase_gap = _slow_phase(phase_tests)
    named = result.significant and contradiction is None
    kind, kind_basis, not_named = None, None, None
    if named:
        kind, kind_basis = straggler_kind(phase, KindEvidence(phase_tests))
        summary = named_summary(
            candidate, kind, (result.mean_s, result.low_s, result.high_s), phase
        )
    else:
        # the no_sync windows withdraw a gap that passed; one that did not is judged by the rule
        not_named = (
            f"withdrawn: {contradiction}"
            if result.significant and contradiction
            else not_named_reason(result, step_mean_s, MIN_EFFECT_SHARE)
        )
        summary = unnamed_summary(
            candidate, (result.mean_s, result.low_s, result.high_s), not_named
        )
    return StragglerVerdict(
        named=named,
        rank=candidate if named else None,
        phase=phase if named else None,
        candidate_rank=candidate,
        gap_s=gap,
        phase_gap_s=phase_gap if named else None,
        p_value=result.p_value,
        significant=result.significant,
        min_effect_s=min_effect,
        test=test,
        summary=summary,
        kind=kind,
        kind_basis=kind_basis,
        not_named=not_named,
    )


def withdraw(verdict: StragglerVerdict, why: str) -> StragglerVerdict:
    """The verdict with its straggler withdrawn because other evidence contradicts it (the
    trace analysis: arrival order, who waits at matched collectives)."""
    gap = verdict.gap_s
    not_named = f"withdrawn: {why}"
    summary = unnamed_summary(
        verdict.candidate_rank,
        (
            gap.value if gap is not None else None,
            gap.low if gap is not None else None,
            gap.high if gap is not None else None,
        ),
        not_named,
    )
    return verdict.model_copy(
        update={
            "named": False,
            "rank": None,
            "phase": None,
            "phase_gap_s": None,
            "withdrawn_by": why,
            "summary": summary,
            "kind": None,
            "kind_basis": None,
            "not_named": not_named,
        }
    )


def _ms(value: float | None) -> str:
    return "?" if value is None else f"{value * 1e3:+.3g} ms"


def _gap_estimate(mean: float, low: float | None, high: float | None, n: int) -> Estimate:
    """A signed gap: its interval is what it is (no domain edge), kept as measured."""
    method = f"moving-block bootstrap of the mean paired difference over {n} steps"
    return judged(mean, low, high, n=n, method=method, lower=None)


def _phase_tests(steps: pd.DataFrame, candidate: int, min_effect: float) -> dict[str, GapTest]:
    """The candidate's per-step gap over the median of the others' in each own-work phase
    the table has (the straggler test on that phase alone)."""
    tests: dict[str, GapTest] = {}
    for phase in OWN_WORK_PHASES:
        if phase not in steps.columns:
            continue
        table = steps.pivot_table(index=["window", "step"], columns="rank", values=phase).dropna()
        if candidate not in table.columns or table.shape[1] < 2:
            continue
        diff = table[candidate] - table.drop(columns=[candidate]).median(axis=1)
        tests[phase] = paired_gap_test(diff, min_effect_s=min_effect, alpha=ALPHA)
    return tests


def _slow_phase(tests: dict[str, GapTest]) -> tuple[str | None, Estimate | None]:
    """The phase with the largest significant per-step gap over the others'."""
    best: tuple[float, str, Estimate] | None = None
    for phase, result in tests.items():
        if result.significant and (best is None or result.mean_s > best[0]):
            gap = _gap_estimate(result.mean_s, result.low_s, result.high_s, result.steps)
            best = (result.mean_s, phase, gap)
    return (best[1], best[2]) if best is not None else (None, None)


def _no_sync_contradicts(no_sync: NoSyncSteps | None, candidate: int) -> str | None:
    """Why the no_sync windows contradict the candidate, or None: they do when the candidate's
    mean free-running step is below the median of the others' with the bootstrap interval of
    that gap entirely below zero."""
    if no_sync is None or candidate not in no_sync.per_rank or len(no_sync.per_rank) < 2:
        return None
    mine = np.asarray(no_sync.per_rank[candidate], dtype=float)
    others = [np.asarray(v, dtype=float) for r, v in no_sync.per_rank.items() if r != candidate]
    if mine.size < 2 or any(o.size < 2 for o in others):
        return None
    gaps = []
    for seed, series in enumerate([mine, *others]):
        rows = block_indices(series.size, seed=1000 + seed)
        gaps.append(series[rows].mean(axis=1))
    distribution = gaps[0] - np.median(np.vstack(gaps[1:]), axis=0)
    _, high = percentile_interval(distribution)
    if high < 0:
        return "the no_sync windows show it faster than the others"
    return None


def no_sync_cross_check(
    sync_step_s: Sequence[float],
    no_sync: NoSyncSteps,
    transfer: StepPart,
    rest: StepPart,
) -> CrossCheck:
    """Communication's cost measured by removing it: mean synchronised step minus the slowest
    rank's mean no_sync step, from the interleaved windows, against exposed transfer + rest
    of the model. no_sync also removes the interference of communication with compute (its
    threads, memory bandwidth), so a larger cost here means communication slows compute."""
    sync = np.asarray(sync_step_s, dtype=float)
    series = [np.asarray(v, dtype=float) for _, v in sorted(no_sync.per_rank.items())]
    method = (
        "interleaved synchronised and no_sync windows: mean synchronised step minus the "
        "slowest rank's mean no_sync step, moving-block bootstrap of both"
    )
    if sync.size < 2 or any(s.size < 2 for s in series):
        return CrossCheck(
            name="communication cost (no_sync windows)",
            method=method,
            estimate=None,
            agrees=None,
            detail="too few steps for an interval",
        )
    sync_means = sync[block_indices(sync.size, seed=7)].mean(axis=1)
    slowest = np.max(
        np.vstack(
            [s[block_indices(s.size, seed=8 + i)].mean(axis=1) for i, s in enumerate(series)]
        ),
        axis=0,
    )
    distribution = (sync_means - slowest) / sync_means
    value = float(sync.mean() - max(s.mean() for s in series)) / float(sync.mean())
    low, high = percentile_interval(distribution)
    estimate = judged(value, low, high, n=int(sync.size), method=method, upper=1.0)
    model_low = (transfer.share.low or 0.0) + (rest.share.low or 0.0)
    model_high = (transfer.share.high or 0.0) + (rest.share.high or 0.0)
    overlap = low <= model_high and model_low <= high
    if overlap:
        detail = (
            "agrees with exposed transfer + rest of the step model "
            f"({model_low:.1%} to {model_high:.1%})"
        )
    elif low > model_high:
        detail = (
            f"communication costs more ({low:.1%} to {high:.1%}) than its exposed transfer + "
            f"rest ({model_low:.1%} to {model_high:.1%}): it slows compute while it overlaps "
            "(shared cores, memory bandwidth)"
        )
    else:
        detail = (
            f"removing communication saves less ({low:.1%} to {high:.1%}) than exposed "
            f"transfer + rest ({model_low:.1%} to {model_high:.1%}): the no_sync windows ran "
            "on a different machine state or compute is slower without communication"
        )
    return CrossCheck(
        name="communication cost (no_sync windows)",
        method=method,
        estimate=estimate,
        agrees=overlap,
        detail=detail,
    )


def share_of_step(
    numerator: np.ndarray, step: np.ndarray, *, method: str, lower: float | None = 0.0
) -> Estimate:
    """mean(numerator) / mean(step) over the same steps, with the block-bootstrap interval of
    that ratio (whole steps resampled); a share of the step, so at most 1."""
    matrix = np.column_stack([numerator, step])
    means, resampled = mean_columns(matrix)
    value = float(means[0] / means[1]) if means[1] > 0 else 0.0
    if resampled is None:
        reason = ONE_UNIT.format(unit="step")
        return judged(value, None, None, n=1, method="one step", reason=reason, lower=lower)
    ratio = resampled[:, 0] / np.where(resampled[:, 1] > 0, resampled[:, 1], np.nan)
    ratio = ratio[np.isfinite(ratio)]
    if ratio.size == 0:  # no step with any length: nothing to resample
        return judged(value, None, None, n=1, method=method, reason="no step time", lower=lower)
    low, high = percentile_interval(ratio)
    n = int(matrix.shape[0])
    return judged(value, low, high, n=n, method=method, lower=lower, upper=1.0)


def others_wait_check(
    wait: pd.DataFrame, candidate: int, verdict: StragglerVerdict, step: np.ndarray, source: str
) -> CrossCheck:
    """The others' wait for peers minus the candidate's, same step, as a share of the step
    (`wait`: step x rank wait for peers, rows aligned with `step`, the mean step): a straggler
    makes the others wait, not itself. Disagrees (agrees False) when the interval lies
    entirely below 0; for a named candidate, agrees None when the extra wait is not
    measurable (the caller withdraws the name: a straggler nobody waits for costs nothing).
    `source`: where the waits come from, in the check's name and sentences."""
    others = wait.drop(columns=[candidate]).mean(axis=1)
    diff = (others - wait[candidate]).to_numpy(np.float64)
    method = (
        "mean over the other ranks of their wait for peers minus the candidate's, same step, "
        "moving-block bootstrap over steps"
    )
    estimate = share_of_step(diff, step, method=method)
    matrix = np.column_stack([diff, step])
    _, resampled = mean_columns(matrix)
    high = None
    if resampled is not None:
        ratio = resampled[:, 0] / resampled[:, 1]
        high = percentile_interval(ratio)[1]
    mean_step = float(np.mean(step))
    min_share = (verdict.min_effect_s or 0.0) / mean_step if mean_step > 0 else 0.0
    agrees: bool | None
    if high is not None and high < 0:
        agrees = False
        detail = f"at the {source} rank {candidate} waits for the others more than they wait for it"
    elif verdict.named:
        agrees = True if estimate.measurable else None
        detail = (
            f"the other ranks wait for peers this share of the step longer than rank "
            f"{candidate} does: they wait for it"
            if estimate.measurable
            else f"no measurable extra wait of the others for rank {candidate}: its extra work "
            "may be hidden behind their compute"
        )
    else:
        low = estimate.low if estimate.low is not None else estimate.value
        agrees = low is None or low < min_share
        detail = (
            f"the other ranks' extra wait for peers over rank {candidate}'s (share of the "
            "step) is not a straggler's size either"
            if agrees
            else f"the other ranks wait for peers longer than rank {candidate}, above the "
            f"minimum effect ({min_share * 100:.1f} %), though its own work is not "
            f"significantly above theirs: its delay may lie outside the work the {source} measure"
        )
    return CrossCheck(
        name=f"others' wait for it ({source})",
        method=method,
        estimate=estimate,
        agrees=agrees,
        detail=detail,
    )


CPU_WAIT_CHECK = "CPU wait (host)"
CPU_WAIT_METHOD = (
    "per step, the candidate's wait for a CPU (its training thread runnable and not running, "
    "Linux schedstat run_delay over the step) beyond what its own time on a CPU would have "
    "waited at the other ranks' rate (their median wait over their median time on a CPU, same "
    "step; without the time on a CPU: beyond the median of the others' wait); the straggler "
    "test repeated on that held time, and on own work less it (capped at own work)"
)
CPU_WAIT_UNMEASURED = "the wait for a CPU was not measured on every rank in these steps"


def held_off_cpu(
    waits: pd.DataFrame, cpu_time: pd.DataFrame | None, candidate: int
) -> tuple[pd.Series, str]:
    """Per step, the seconds the host held `candidate` off the CPU beyond its fair share, and
    how it was reckoned. A rank with more work is runnable longer, so on a loaded host it also
    waits longer: at the others' rate (their median wait over their median time on a CPU),
    its own time on a CPU would have waited that much; only the wait beyond it is the host's.
    Without the time on a CPU (results before it, not Linux): its wait beyond the median of
    the others' waits."""
    others_wait = waits.drop(columns=[candidate]).median(axis=1)
    if cpu_time is not None:
        busy = cpu_time.reindex(index=waits.index, columns=waits.columns)
        if bool(busy.notna().all(axis=None)):
            others_busy = busy.drop(columns=[candidate]).median(axis=1)
            rate = (others_wait / others_busy.where(others_busy > 0)).fillna(0.0)
            fair = rate * busy[candidate]
            return waits[candidate] - fair, "beyond its time on a CPU at the others' wait rate"
    return waits[candidate] - others_wait, "beyond the median of the others' wait"


def cpu_wait_check(
    own: pd.DataFrame,
    cpu_wait: pd.DataFrame | None,
    verdict: StragglerVerdict,
    cpu_time: pd.DataFrame | None = None,
) -> tuple[StragglerVerdict, CrossCheck | None]:
    """Is the candidate's extra time its host's? `own`, `cpu_wait` and `cpu_time`: (window,
    step) x rank seconds of own work, of the training thread's wait for a CPU and of its time
    on a CPU in the step (`cpu_wait` None: not measured, no check; empty: measured on no step,
    a check that says so; `cpu_time` None: not measured, `held_off_cpu` falls back). A rank
    whose core was taken by other work is late exactly like a rank with more work; the
    scheduler knows the difference. A named rank's kind becomes host when the time the host
    held it off the CPU (`held_off_cpu`) passes the straggler test and is at least the rest of
    its gap (`straggler_kind.straggler_kind`): it stays named (the rank is behind; the host is
    why). The held time is kept beside the verdict either way (`host_wait_s`)."""
    candidate = verdict.candidate_rank
    if candidate is None or verdict.min_effect_s is None or cpu_wait is None:
        return verdict, None
    table = own.dropna()
    waits = cpu_wait.reindex(index=table.index, columns=table.columns)
    keep = waits.notna().all(axis=1)
    table, waits = table.loc[keep], waits.loc[keep]
    if table.shape[0] < MIN_PAIRED_STEPS or candidate not in table.columns:
        return verdict, CrossCheck(
            name=CPU_WAIT_CHECK,
            method=CPU_WAIT_METHOD,
            estimate=None,
            agrees=None,
            detail=CPU_WAIT_UNMEASURED,
        )
    min_effect = verdict.min_effect_s
    held, reckoned = held_off_cpu(waits, cpu_time, candidate)
    host = paired_gap_test(held, min_effect_s=min_effect, alpha=ALPHA)
    host_est = _gap_estimate(host.mean_s, host.low_s, host.high_s, host.steps)
    gap = table[candidate] - table.drop(columns=[candidate]).median(axis=1)
    left = paired_gap_test(
        gap - np.minimum(held.clip(lower=0.0), table[candidate]),
        min_effect_s=min_effect,
        alpha=ALPHA,
    )
    waited = (
        f"rank {candidate} held off the CPU {_ms(host.mean_s)} per step ({reckoned})"
        if host.mean_s > 0
        else f"rank {candidate} not held off the CPU more than the others ({reckoned})"
    )
    left_text = (
        f"its gap less that: {_ms(left.mean_s)} per step "
        f"(95 % interval {_ms(left.low_s)} to {_ms(left.high_s)})"
    )
    updated = verdict.model_copy(update={"host_wait_s": host_est, "host_bound": False})
    agrees: bool | None = None
    detail = f"{waited} (not a straggler either way)"
    if not verdict.named and not verdict.withdrawn_by:
        held_rank = _most_held(waits, cpu_time, min_effect)
        # a rank that ran longer on a CPU than the host held it has more to do: not the host's
        more_work = (
            held_rank is not None
            and (test := _on_cpu_test(cpu_time, waits.index, held_rank[0], min_effect)) is not None
            and test.significant
            and test.mean_s > held_rank[1].mean_s
        )
        if held_rank is not None and not more_work:
            rank, test = held_rank
            return _held_verdict(verdict, rank, test, table), CrossCheck(
                name=CPU_WAIT_CHECK,
                method=CPU_WAIT_METHOD,
                estimate=_gap_estimate(test.mean_s, test.low_s, test.high_s, test.steps),
                agrees=True,
                detail=f"rank {rank} held off the CPU {_ms(test.mean_s)} per step: the host "
                "took its time outside its own work (in the collective everyone waits in)",
            )
    if verdict.named:
        on_cpu = _on_cpu_test(cpu_time, waits.index, candidate, min_effect)
        if verdict.phase == "data" and verdict.kind == "input":
            on_cpu = None  # a rank waiting for its batch: its time on a CPU is not the question
        kind, basis = straggler_kind(verdict.phase, KindEvidence({}, host, left, on_cpu))
        agrees = True
        if kind == "host":
            gap_est = verdict.gap_s
            summary = named_summary(
                candidate,
                "host",
                (
                    gap_est.value if gap_est is not None else None,
                    gap_est.low if gap_est is not None else None,
                    gap_est.high if gap_est is not None else None,
                ),
                verdict.phase,
            )
            updated = updated.model_copy(
                update={"kind": "host", "kind_basis": basis, "host_bound": True, "summary": summary}
            )
            detail = f"{waited}; {left_text}: the host took its time, the work is not slower"
        else:
            if host.significant and verdict.kind_basis is not None:
                more = f"; the host held it off the CPU {_ms(host.mean_s)}, less than its work"
                updated = updated.model_copy(update={"kind_basis": verdict.kind_basis + more})
            detail = f"{waited}; {left_text}: the work itself is slow"
    check = CrossCheck(
        name=CPU_WAIT_CHECK,
        method=CPU_WAIT_METHOD,
        estimate=host_est,
        agrees=agrees,
        detail=detail,
    )
    return updated, check


def _on_cpu_test(
    cpu_time: pd.DataFrame | None, index: pd.Index, rank: int, min_effect: float
) -> GapTest | None:
    """Per step, `rank`'s time on a CPU over the median of the others', tested as the
    straggler gap; None when not measured on every rank in those steps."""
    if cpu_time is None:
        return None
    busy = cpu_time.reindex(index=index)
    if rank not in busy.columns or busy.shape[1] < 2 or not bool(busy.notna().all(axis=None)):
        return None
    extra = busy[rank] - busy.drop(columns=[rank]).median(axis=1)
    return paired_gap_test(extra, min_effect_s=min_effect, alpha=ALPHA)


def _most_held(
    waits: pd.DataFrame, cpu_time: pd.DataFrame | None, min_effect: float
) -> tuple[int, GapTest] | None:
    """The rank the host held off the CPU the most (`held_off_cpu`), when that passes the
    straggler test: a rank held while it waits inside a collective is late there, where its own
    work does not show it (the phase timers see the collective slow for everyone)."""
    tests = {
        int(rank): paired_gap_test(
            held_off_cpu(waits, cpu_time, rank)[0], min_effect_s=min_effect, alpha=ALPHA
        )
        for rank in waits.columns
    }
    rank = max(tests, key=lambda r: (tests[r].mean_s, -r))
    return (rank, tests[rank]) if tests[rank].significant else None


def _held_verdict(
    verdict: StragglerVerdict, rank: int, held: GapTest, own: pd.DataFrame
) -> StragglerVerdict:
    """A rank named host because the host held it off the CPU (`_most_held`), its own work
    not significantly behind: what it costs per step is the held time (`host_wait_s`)."""
    gap = own[rank] - own.drop(columns=[rank]).median(axis=1)
    work = paired_gap_test(gap, min_effect_s=verdict.min_effect_s or 0.0, alpha=ALPHA)
    held_est = _gap_estimate(held.mean_s, held.low_s, held.high_s, held.steps)
    basis = (
        f"the host held it off the CPU {_ms(held.mean_s)} per step (passes the straggler "
        f"test), while its own work is {_ms(work.mean_s)} per step over the others': the time "
        "was lost where it waits with them"
    )
    summary = named_summary(rank, "host", (held.mean_s, held.low_s, held.high_s), None)
    return verdict.model_copy(
        update={
            "named": True,
            "rank": rank,
            "phase": None,
            "phase_gap_s": None,
            "candidate_rank": rank,
            "gap_s": _gap_estimate(work.mean_s, work.low_s, work.high_s, work.steps),
            "p_value": held.p_value,
            "host_wait_s": held_est,
            "host_bound": True,
            "kind": "host",
            "kind_basis": basis,
            "not_named": None,
            "summary": summary,
        }
    )


def evidence_against(checks: Sequence[CrossCheck]) -> list[str]:
    """What withdraws a named straggler: only a check that disagrees, i.e. significantly
    points at another rank (arrival order naming a different rank by its binomial test, the
    others waiting significantly less than the candidate). A check that merely fails to
    confirm (not judged, not measurable) withdraws nothing: the own-work test decides."""
    return [f"{c.name}: {c.detail}" for c in checks if c.agrees is False]


def cell_attribution(
    steps: pd.DataFrame, no_sync: NoSyncSteps | None, parts: pd.DataFrame | None = None
) -> Attribution | None:
    """The step model of a cell from its per-step phase table (see step_parts; `parts`: its
    step_parts when the caller has them already); None when no step has every phase."""
    parts = step_parts(steps) if parts is None else parts
    if parts.empty:
        return None
    ranks = int(parts["rank"].nunique())
    per_step = parts.groupby(["window", "step"])[list(PART_NAMES)].mean()
    step_est, estimates = part_estimates(per_step.to_numpy(), ranks)
    verdict = None
    checks: list[CrossCheck] = []
    if ranks > 1:
        verdict = straggler_verdict(steps, parts, step_est.value or 0.0, no_sync)
        own = parts.assign(own=parts["compute"] + parts["data"])
        verdict, host = cpu_wait_check(
            _pivot(own, "own"),
            cpu_wait_table(steps),
            verdict,
            cpu_wait_table(steps, CPU_TIME),
        )
        if host is not None:
            checks.append(host)
        held = cpu_wait_table(steps, COMM_HOLD)
        if held is not None and held.shape[1] == ranks and not held.dropna().empty:
            verdict, held_check = held_launch_check(_pivot(own, "own"), held, verdict, ALPHA)
            checks.append(held_check)
        candidate = verdict.candidate_rank
        if candidate is not None:
            wait = _pivot(parts, "wait_for_peers").loc[per_step.index]
            step_series = per_step[list(PART_NAMES)].sum(axis=1).to_numpy(np.float64)
            check = others_wait_check(wait, candidate, verdict, step_series, CELL_WAIT)
            found = evidence_against([check])
            if verdict.named and found:
                verdict = withdraw(verdict, "; ".join(found))
                check = others_wait_check(wait, candidate, verdict, step_series, CELL_WAIT)
            checks.append(check)
    if no_sync is not None and ranks > 1:
        by_name = {p.name: p for p in estimates}
        sync_steps = parts.groupby(["window", "step"])["model_step_s"].mean()
        checks.append(
            no_sync_cross_check(
                sync_steps.tolist(), no_sync, by_name["exposed_transfer"], by_name["rest"]
            )
        )
    return Attribution(
        basis=PHASE_BASIS,
        steps=int(per_step.shape[0]),
        ranks=ranks,
        step_s=step_est,
        parts=estimates,
        straggler=verdict,
        cross_checks=checks,
    )
