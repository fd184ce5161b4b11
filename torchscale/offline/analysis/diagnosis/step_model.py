"""The one model of a step, and the straggler test, shared by every source of evidence (the
phase timers: timers.py; the traces: traces.py). Pure functions over per-step tables.

Every step of every rank splits into five parts that are never negative and add up to the
step by construction (docs/methodology.md, "One model of the step"):

    step = compute + data + wait_for_peers + exposed_transfer + rest

Each source cuts its own evidence into these parts (per rank and step); from there the
arithmetic is this module's, once: the mean over ranks per step (`mean_step`), the parts'
block-bootstrap intervals over steps (`part_estimates`: whole steps are resampled, so the parts
add up in every resample too), a share of the step with its interval (`share_of_step`), the
straggler rule (`straggler_verdict`) and the cross-checks that may withdraw its name
(`judged_by`, `others_wait_check`).

Averaged over ranks, compute + wait_for_peers is the slowest rank's own work: the others wait
for it. The figures are means over ranks and steps (means add up; medians do not).

A straggler is named only when its per-step gap is significant (paired test, stated in
`STRAGGLER_TEST`) and large enough to matter (MIN_EFFECT_SHARE of the step), and the no_sync
windows, where they exist, do not contradict it. Other evidence withdraws the name only when
it significantly names another rank (`evidence_against`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from torchscale.contracts.schema.cell_result import (
    PART_NAMES,
    CrossCheck,
    Estimate,
    StepPart,
    StragglerVerdict,
)
from torchscale.contracts.step_phases import (
    OWN_WORK_PHASES,
)
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
ONE_RANK = "one rank: no peers to wait for"


@dataclass(frozen=True)
class NoSyncSteps:
    """The interleaved no_sync windows: per rank its free-running step times (seconds)."""

    per_rank: dict[int, list[float]]


@dataclass(frozen=True)
class MeanStep:
    """The model over steps: per step key the parts' mean over ranks (`per_step`, seconds, the
    part columns first), the mean step and the parts with their intervals."""

    per_step: pd.DataFrame
    step_s: Estimate
    parts: list[StepPart]

    @property
    def series(self) -> np.ndarray:
        """The mean step at each step key (seconds), rows aligned with `per_step`."""
        series: np.ndarray = self.per_step[list(PART_NAMES)].sum(axis=1).to_numpy(np.float64)
        return series


def mean_step(
    parts: pd.DataFrame, key: str | list[str], ranks: int, extra: Sequence[str] = ()
) -> MeanStep:
    """The model of `parts` (one row per rank and step, the five part columns in seconds, and
    `extra` columns averaged beside them): the mean over ranks at each step `key`, then
    `part_estimates` over those steps."""
    per_step = parts.groupby(key)[[*PART_NAMES, *extra]].mean()
    step_s, estimates = part_estimates(per_step[list(PART_NAMES)].to_numpy(), ranks)
    return MeanStep(per_step=per_step, step_s=step_s, parts=estimates)


def part_estimates(
    matrix: np.ndarray, ranks: int, *, method: str | None = None, lone: bool | None = None
) -> tuple[Estimate, list[StepPart]]:
    """Mean step and the parts (seconds and shares of the mean step) with block-bootstrap
    intervals from a (steps, parts) matrix of seconds: rank-averaged for the model, one rank's
    own for its per-rank parts (`method` names its resampling). `lone` (default: one rank): no
    peers to wait for, so the wait is 0 by definition; one rank of many may wait 0 too, but
    measured, with an interval."""
    steps = matrix.shape[0]
    means, resampled = mean_columns(matrix)
    step_mean = float(means.sum())
    if method is None:
        method = f"moving-block bootstrap over {steps} steps (means over {ranks} rank(s))"
    lone = ranks == 1 if lone is None else lone
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
        if lone and name == "wait_for_peers":
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


def wide(
    parts: pd.DataFrame,
    column: str,
    key: str | list[str] = ["window", "step"],  # noqa: B006
) -> pd.DataFrame:
    """step key x rank table of one column (one row per rank and step in `parts`)."""
    return parts.pivot_table(index=key, columns="rank", values=column)


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
    table = wide(own, "own").dropna()
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
    gap = gap_estimate(result.mean_s, result.low_s, result.high_s, result.steps)
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


def ms(value: float | None) -> str:
    return "?" if value is None else f"{value * 1e3:+.3g} ms"


def gap_estimate(mean: float, low: float | None, high: float | None, n: int) -> Estimate:
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
            gap = gap_estimate(result.mean_s, result.low_s, result.high_s, result.steps)
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


def judged_by(
    verdict: StragglerVerdict, checks_for: Callable[[StragglerVerdict], list[CrossCheck]]
) -> tuple[StragglerVerdict, list[CrossCheck]]:
    """The verdict and its cross-checks (`checks_for` makes them for a verdict): a named rank
    a check significantly contradicts (`evidence_against`) is withdrawn, and the checks, judged
    against a named rank, are made again against the withdrawn verdict."""
    checks = checks_for(verdict)
    found = evidence_against(checks)
    if verdict.named and found:
        verdict = withdraw(verdict, "; ".join(found))
        checks = checks_for(verdict)
    return verdict, checks


def evidence_against(checks: Sequence[CrossCheck]) -> list[str]:
    """What withdraws a named straggler: only a check that disagrees, i.e. significantly
    points at another rank (arrival order naming a different rank by its binomial test, the
    others waiting significantly less than the candidate). A check that merely fails to
    confirm (not judged, not measurable) withdraws nothing: the own-work test decides."""
    return [f"{c.name}: {c.detail}" for c in checks if c.agrees is False]
