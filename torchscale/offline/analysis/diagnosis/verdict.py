"""The straggler verdict: one judge over the evidence every source gives in one form.

The phase timers (timers.py) and the traces (traces.py) each fill a `StragglerEvidence`;
`judge` reads it in one order (docs/methodology.md, "One judge"): the own-work test, then
host (host.py), held launches (held_launches.py), the cross-checks that may withdraw the name
(`judged_by`), and with no rank named the late collectives (late_collectives.py). Each kind
rule names through `kind.named_as`. Pure: evidence in, a verdict and its checks out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import CrossCheck, Estimate, OwnWork, StragglerVerdict
from torchscale.contracts.step_phases import LOOP, MODEL_FORWARD, OWN_WORK_PHASES
from torchscale.offline.analysis.diagnosis.cost import cost_test, excess_costs, step_pattern
from torchscale.offline.analysis.diagnosis.device import Calibrated, device_check
from torchscale.offline.analysis.diagnosis.held_launches import held_launch_check
from torchscale.offline.analysis.diagnosis.host import cpu_wait_check
from torchscale.offline.analysis.diagnosis.kind import (
    KindEvidence,
    not_named_reason,
    straggler_kind,
    withdrawn,
)
from torchscale.offline.analysis.diagnosis.late_collectives import late_collectives
from torchscale.offline.analysis.diagnosis.step_model import (
    ALPHA,
    MIN_EFFECT_SHARE,
    MIN_PAIRED_STEPS,
    NoSyncSteps,
    gap_estimate,
    over_others,
    share_of_step,
    wide,
)
from torchscale.offline.analysis.trace.collective_matching import Matched
from torchscale.offline.analysis.trace.straggler import (
    StragglerAnalysis,
    decided_instances,
    others_wait_us,
)
from torchscale.offline.analysis.uncertainty import (
    GapTest,
    block_indices,
    mean_columns,
    paired_gap_test,
    percentile_interval,
)


@dataclass(frozen=True)
class ArrivalOrder:
    """The matched collectives and who arrived last at them (the traces; `matched` None: no
    collective matched, said so in the check)."""

    matched: Matched | None
    analysis: StragglerAnalysis | None


@dataclass(frozen=True)
class StragglerEvidence:
    """What one source saw of the ranks' steps, in the one form `judge` reads.

    `own`: window, step, rank, compute and data seconds, the own work the test compares;
    `phases`: window, step, rank and each own-work phase's seconds (the slow phase);
    `step_s`: the mean step; `step`: the mean step at each step key, rows aligned with `wait`,
    the (window, step) x rank wait for peers (None: not split from the transfer, named by
    `wait_source`); `cpu_wait`, `cpu_time`, `holds`: (window, step) x rank seconds the training
    thread waited for a CPU, ran on one, and its DDP comm hook held its launches (None: not
    measured); `order`: arrival order, `no_sync`: the no_sync windows (None: not seen);
    `own_work`: what own work is (the phase timers', or the traces' phase ranges or parts);
    `calibration`: every rank's fixed calibration (None: not timed), which tells a compute
    straggler's slower device from its more work (device.py)."""

    own: pd.DataFrame
    phases: pd.DataFrame
    step_s: float
    step: np.ndarray
    wait: pd.DataFrame | None
    wait_source: str
    cpu_wait: pd.DataFrame | None = None
    cpu_time: pd.DataFrame | None = None
    holds: pd.DataFrame | None = None
    order: ArrivalOrder | None = None
    no_sync: NoSyncSteps | None = None
    own_work: OwnWork = "timers"
    calibration: Calibrated | None = None


def judge(evidence: StragglerEvidence) -> tuple[StragglerVerdict | None, list[CrossCheck]]:
    """The straggler verdict of one source's evidence and its cross-checks, in the order of
    the module doc (checks: host, held launches, others' wait, arrival order), a compute
    straggler then read as a slower device or more work (`device_check`); (None, []) with
    fewer than two ranks."""
    e = evidence
    ranks = int(e.own["rank"].nunique())
    if ranks < 2:
        return None, []
    verdict, paired_test = straggler_verdict(e.phases, e.own, e.step_s, e.no_sync, e.own_work)
    own = wide(e.own.assign(own=e.own["compute"] + e.own["data"]), "own")
    paired = paired_check(paired_test, verdict)
    verdict, host = cpu_wait_check(own, e.cpu_wait, verdict, e.cpu_time)
    checks = [check for check in (paired, host) if check is not None]
    if e.holds is not None and e.holds.shape[1] == ranks and not e.holds.dropna().empty:
        verdict, held = held_launch_check(own, e.holds, verdict, ALPHA)
        checks.append(held)

    def checks_of(rank: int) -> Callable[[StragglerVerdict], list[CrossCheck]]:
        def made(v: StragglerVerdict) -> list[CrossCheck]:
            out = []
            if e.wait is not None:
                out.append(others_wait_check(e.wait, rank, v, e.step, e.wait_source))
            if e.order is not None:
                out.append(arrival_check(e.order.matched, e.order.analysis, rank, v))
            return out

        return made

    judged_checks: list[CrossCheck] = []
    if verdict.candidate_rank is not None:
        verdict, judged_checks = judged_by(verdict, checks_of(verdict.candidate_rank))
    if e.order is not None and e.wait is not None and not verdict.named:
        arrival = e.order.analysis
        late = late_collectives(verdict, arrival, e.wait, own, e.step)
        if late.named:  # the checks judged the old candidate: judge the named rank
            verdict = late
            rank = int(late.rank) if late.rank is not None else -1
            judged_checks = checks_of(rank)(verdict)
    return device_check(verdict, own, e.calibration), [*checks, *judged_checks]


def straggler_verdict(
    steps: pd.DataFrame,
    parts: pd.DataFrame,
    step_mean_s: float,
    no_sync: NoSyncSteps | None,
    own_work: OwnWork = "timers",
) -> tuple[StragglerVerdict, GapTest | None]:
    """Name the rank whose own work (data + forward + backward + optimizer) per step costs
    the others significantly, its slow phase and the kind of its extra time
    (`straggler_kind`; `cpu_wait_check` may then make it host); else say in plain words why
    the largest gap is not named. Beside it, the candidate's paired per-step test (None:
    not tested), which `paired_check` shows."""
    own = parts.assign(own=parts["compute"] + parts["data"])
    every_step = wide(own, "own")
    table = every_step.dropna()
    min_effect = MIN_EFFECT_SHARE * step_mean_s
    figures = {"alpha": ALPHA, "min_share": MIN_EFFECT_SHARE, "own_work": own_work}
    test = Finding(code="straggler.test", figures=figures)
    ranks = list(table.columns)
    untested = None
    if len(ranks) < 2 or table.empty:
        untested = Finding(code="straggler.too_few_ranks")
    elif len(table) < MIN_PAIRED_STEPS:
        counts = {
            "paired": len(table),
            "left_out": len(every_step) - len(table),
            "steps": len(every_step),
            "needed": MIN_PAIRED_STEPS,
        }
        untested = Finding(code="straggler.too_few_steps", figures=counts)
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
            why_not=untested,
        ), None
    costs = excess_costs(table)
    candidate = int(max(ranks, key=lambda r: (float(costs[r].mean()), -int(r))))
    result = cost_test(
        costs[candidate], min_effect_s=min_effect, alpha=ALPHA, candidates=len(ranks)
    )
    # stored as the verdict's p_value; judge shows it as a cross-check (paired_check)
    paired = paired_gap_test(over_others(table, candidate), min_effect_s=min_effect, alpha=ALPHA)
    result = steady_or_costly(result, paired)
    # a pattern is said of a cost worth acting on (or a gap named by the paired test), never
    # of noise below the minimum effect
    windows = table.index.get_level_values(0).to_numpy()
    numbers = pd.to_numeric(table.index.get_level_values(-1), errors="coerce")
    numbers = None if numbers.isna().any() else numbers.to_numpy(dtype=np.int64)
    pattern = (
        step_pattern(costs[candidate], min_effect, windows, numbers)
        if result.mean_s >= min_effect or result.significant
        else None
    )
    gap = gap_estimate(result)
    contradiction = _no_sync_contradicts(no_sync, candidate)
    phase_tests = _phase_tests(steps, candidate, min_effect, len(ranks))
    phase, phase_gap = None, None
    if result.significant:
        phase, phase_gap = _slow_phase(phase_tests)
    named = result.significant and not contradiction
    kind, kind_rule, not_named = None, None, None
    if named:
        kind, kind_rule = straggler_kind(phase, KindEvidence(phase_tests))
    else:
        # the no_sync windows withdraw a gap that passed; one that did not is judged by the rule
        not_named = (
            withdrawn(["no_sync_windows"])
            if result.significant and contradiction
            else not_named_reason(result, MIN_EFFECT_SHARE)
        )
    verdict = StragglerVerdict(
        named=named,
        rank=candidate if named else None,
        phase=phase if named else None,
        candidate_rank=candidate,
        gap_s=gap,
        phase_gap_s=phase_gap if named else None,
        p_value=paired.p_value,
        significant=result.significant,
        min_effect_s=min_effect,
        test=test,
        kind=kind,
        kind_rule=kind_rule,
        why_not=not_named,
        pattern=pattern,
    )
    return verdict, paired


def paired_check(paired: GapTest | None, verdict: StragglerVerdict) -> CrossCheck | None:
    """The candidate's per-step paired test (is it slower at the median step?) beside its
    cost: it confirms a steady straggler and misses a periodic one, so it never withdraws a
    name (agrees None when it does not confirm). `paired`: `straggler_verdict`'s, None when
    nothing was tested."""
    rank = verdict.candidate_rank
    if paired is None or rank is None:
        return None
    estimate = gap_estimate(paired)
    slower = paired.p_value is not None and paired.p_value < ALPHA
    code = "cross_check.paired_slower" if slower else "cross_check.paired_not_slower"
    return CrossCheck(
        check="paired",
        estimate=estimate,
        agrees=True if slower else None,
        detail=Finding(code=code, figures={"rank": rank, "p": paired.p_value}),
    )


def withdraw(verdict: StragglerVerdict, by: list[str]) -> StragglerVerdict:
    """The verdict with its straggler withdrawn because other evidence contradicts it (`by`:
    the cross-checks that did, e.g. arrival order, who waits at matched collectives)."""
    return verdict.model_copy(
        update={
            "named": False,
            "rank": None,
            "phase": None,
            "phase_gap_s": None,
            "kind": None,
            "kind_rule": None,
            "why_not": withdrawn(by),
        }
    )


def steady_or_costly(cost: GapTest, paired: GapTest) -> GapTest:
    """The cost's test, significant also where the paired per-step test is (p < ALPHA and its
    interval's low end at least the minimum effect) and the cost is above zero: the bootstrap
    bound of a steady gap on a loaded machine can reach zero through a few outlier steps that
    the signed-rank test shrugs off, so nothing the paired test names goes unnamed."""
    if cost.significant or not paired.significant or cost.mean_s <= 0:
        return cost
    return replace(cost, significant=True)


def _phase_tests(
    steps: pd.DataFrame, candidate: int, min_effect: float, ranks: int
) -> dict[str, GapTest]:
    """The candidate's per-step gap over the median of the others' in each own-work phase
    the table has, judged as its cost is (`cost_test`): a stall every k-th step in one phase
    is that phase's. A user's job's forward is its model's and its loop's apart (`with_loop`)."""
    tests: dict[str, GapTest] = {}
    steps = with_loop(steps)
    for phase in (*OWN_WORK_PHASES, LOOP):
        if phase not in steps.columns:
            continue
        table = steps.pivot_table(index=["window", "step"], columns="rank", values=phase).dropna()
        if candidate not in table.columns or table.shape[1] < 2:
            continue
        diff = over_others(table, candidate)
        cost = cost_test(diff, min_effect_s=min_effect, alpha=ALPHA, candidates=ranks)
        tests[phase] = steady_or_costly(
            cost, paired_gap_test(diff, min_effect_s=min_effect, alpha=ALPHA)
        )
    return tests


def with_loop(steps: pd.DataFrame) -> pd.DataFrame:
    """`steps` with a user's job's forward phase cut in two where its model's forward was
    marked on every step of every rank: `forward` its model's forward, `loop` the rest (the
    loop's own work outside its model's forward and backward); as it is elsewhere."""
    if MODEL_FORWARD not in steps.columns or "forward" not in steps.columns:
        return steps
    timed = steps["forward"].notna()
    model = steps[MODEL_FORWARD]
    if not timed.any() or model[timed].isna().any():
        return steps
    forward = steps["forward"].astype(float)
    model = model.astype(float).clip(upper=forward)
    return steps.assign(forward=model, **{LOOP: (forward - model).clip(lower=0.0)})


def _slow_phase(tests: dict[str, GapTest]) -> tuple[str | None, Estimate | None]:
    """The phase with the largest significant per-step gap over the others'."""
    significant = {phase: result for phase, result in tests.items() if result.significant}
    if not significant:
        return None, None
    phase = max(significant, key=lambda name: significant[name].mean_s)
    return phase, gap_estimate(significant[phase])


def _no_sync_contradicts(no_sync: NoSyncSteps | None, candidate: int) -> bool:
    """Whether the no_sync windows contradict the candidate: they do when the candidate's mean
    free-running step is below the median of the others' with the bootstrap interval of that
    gap entirely below zero."""
    if no_sync is None or candidate not in no_sync.per_rank or len(no_sync.per_rank) < 2:
        return False
    mine = np.asarray(no_sync.per_rank[candidate], dtype=float)
    others = [np.asarray(v, dtype=float) for r, v in no_sync.per_rank.items() if r != candidate]
    if mine.size < 2 or any(o.size < 2 for o in others):
        return False
    gaps = []
    for seed, series in enumerate([mine, *others]):
        rows = block_indices(series.size, seed=1000 + seed)
        gaps.append(series[rows].mean(axis=1))
    distribution = gaps[0] - np.median(np.vstack(gaps[1:]), axis=0)
    _, high = percentile_interval(distribution)
    return high < 0


def others_wait_check(
    wait: pd.DataFrame, candidate: int, verdict: StragglerVerdict, step: np.ndarray, source: str
) -> CrossCheck:
    """The others' wait for peers minus the candidate's, same step, as a share of the step
    (`wait`: step x rank wait for peers, rows aligned with `step`, the mean step): a straggler
    makes the others wait, not itself. Disagrees (agrees False) when the interval lies
    entirely below 0; for a named candidate, agrees None when the extra wait is not
    measurable (the caller withdraws the name: a straggler nobody waits for costs nothing).
    `source`: where the waits come from, said in its detail."""
    others = wait.drop(columns=[candidate]).mean(axis=1)
    diff = (others - wait[candidate]).to_numpy(np.float64)
    estimate = share_of_step(diff, step)
    matrix = np.column_stack([diff, step])
    _, resampled = mean_columns(matrix)
    high = None
    if resampled is not None:
        ratio = resampled[:, 0] / resampled[:, 1]
        high = percentile_interval(ratio)[1]
    mean_step = float(np.mean(step))
    min_share = (verdict.min_effect_s or 0.0) / mean_step if mean_step > 0 else 0.0
    agrees: bool | None
    figures: dict[str, Any] = {"rank": candidate}
    if high is not None and high < 0:
        agrees, code = False, "cross_check.waits_reversed"
        figures["source"] = source
    elif verdict.named:
        agrees = True if estimate.measurable else None
        code = "cross_check.waited_for" if estimate.measurable else "cross_check.not_waited_for"
    else:
        low = estimate.low if estimate.low is not None else estimate.value
        agrees = low is None or low < min_share
        code = "cross_check.waits_small" if agrees else "cross_check.waits_outside"
        figures |= {} if agrees else {"min_share": min_share, "source": source}
    detail = Finding(code=code, figures={**figures, "source": source})
    return CrossCheck(check="others_wait", estimate=estimate, agrees=agrees, detail=detail)


def judged_by(
    verdict: StragglerVerdict, checks_for: Callable[[StragglerVerdict], list[CrossCheck]]
) -> tuple[StragglerVerdict, list[CrossCheck]]:
    """The verdict and its cross-checks (`checks_for` makes them for a verdict): a named rank
    a check significantly contradicts (`evidence_against`) is withdrawn, and the checks, judged
    against a named rank, are made again against the withdrawn verdict."""
    checks = checks_for(verdict)
    found = evidence_against(checks)
    if verdict.named and found:
        verdict = withdraw(verdict, found)
        checks = checks_for(verdict)
    return verdict, checks


def evidence_against(checks: Sequence[CrossCheck]) -> list[str]:
    """What withdraws a named straggler: only a check that disagrees, i.e. significantly
    points at another rank (arrival order naming a different rank by its binomial test, the
    others waiting significantly less than the candidate). A check that merely fails to
    confirm (not judged, not measurable) withdraws nothing: the own-work test decides."""
    return [c.check for c in checks if c.agrees is False]


def _last_counts(decided: pd.DataFrame) -> dict[int, tuple[int, int]]:
    """Per rank: (instances it arrived last at, instances with a clear last arriver)."""
    if decided.empty:
        return {}
    agg = decided.groupby("rank")["last_by_duration"].agg(["sum", "size"])
    return {int(r): (int(row["sum"]), int(row["size"])) for r, row in agg.iterrows()}


def _costs_the_others_more(decided: pd.DataFrame, candidate: int, other: int) -> dict[str, Any]:
    """The figures that keep a named rank when another is last more often: the wait each one's
    late arrivals cost the others in all (a stall every 4th step is last at a quarter of the
    collectives, yet outweighs a rank late by microseconds at the rest). Empty when the
    candidate does not cost more."""
    mine = float(others_wait_us(decided, candidate).sum())
    theirs = float(others_wait_us(decided, other).sum())
    return {"wait_us": mine, "other_wait_us": theirs} if mine > theirs else {}


def arrival_check(
    matched: Matched | None,
    arrival: StragglerAnalysis | None,
    candidate: int,
    verdict: StragglerVerdict,
) -> CrossCheck:
    """Arrival order at the matched collectives (clock-free: the shortest instance arrived
    last) against the verdict; a different rank standing out contradicts it."""
    decided = decided_instances(matched) if matched is not None else pd.DataFrame()
    counts = _last_counts(decided)
    if candidate not in counts:
        detail = Finding(code="cross_check.arrival_undecided")
        return CrossCheck(check="arrival_order", estimate=None, agrees=None, detail=detail)
    k, n = counts[candidate]
    interval = scipy_stats.binomtest(k, n).proportion_ci(confidence_level=0.95)
    estimate = Estimate(
        value=k / n if n else 0.0,
        low=float(interval.low),
        high=float(interval.high),
        n=n,
        measurable=True,
    )
    top = arrival.straggler if arrival is not None else None
    figures: dict[str, Any] = {"rank": candidate, "last": k, "matched": n}
    if top is None:
        figures["reason"] = arrival.reason.model_dump() if arrival is not None else None
    elif top.rank != candidate:
        figures |= {"other": top.rank, "other_share": top.share_last}
    else:
        figures |= {"expected": top.expected_share, "p": top.p_value}
    agrees: bool | None
    if verdict.named:
        # only a different rank standing out (its binomial test) and costing the others more
        # wait contradicts the own-work test; an arrival order that does not stand out, or
        # whose rank costs less, confirms nothing and denies nothing
        agrees = None if top is None else top.rank == candidate
        code = {None: "no_standout", True: "confirms", False: "other"}[agrees]
        if top is not None and top.rank != candidate:
            outweighed = _costs_the_others_more(decided, candidate, top.rank)
            if outweighed:
                agrees, code = None, "other_costs_less"
                figures |= outweighed
    else:
        agrees = top is None
        alone = top is not None and top.rank == candidate
        code = "chance" if top is None else "alone_names" if alone else "names_other"
    detail = Finding(code=f"cross_check.arrival_{code}", figures=figures)
    return CrossCheck(check="arrival_order", estimate=estimate, agrees=agrees, detail=detail)
