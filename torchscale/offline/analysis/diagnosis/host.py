"""Is a straggler's extra time its host's? The training thread's wait for a CPU (Linux
schedstat run_delay), read beside the step model's straggler verdict, for every source of
evidence (phase timers and traces alike). Pure functions over (window, step) x rank tables.

A rank whose core was taken by other work is late exactly like a rank with more work; the
scheduler knows the difference (docs/methodology.md, "The kind of a straggler").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import CrossCheck, Estimate, StragglerVerdict
from torchscale.offline.analysis.diagnosis.cost import cost_test
from torchscale.offline.analysis.diagnosis.kind import (
    KindEvidence,
    named_as,
    straggler_kind,
)
from torchscale.offline.analysis.diagnosis.step_model import (
    ALPHA,
    MIN_PAIRED_STEPS,
    gap_estimate,
    over_others,
)
from torchscale.offline.analysis.uncertainty import GapTest, paired_gap_test

CPU_WAIT_UNMEASURED = Finding(code="cross_check.cpu_wait_unmeasured")


def held_off_cpu(
    waits: pd.DataFrame, cpu_time: pd.DataFrame | None, candidate: int
) -> tuple[pd.Series, str]:
    """Per step, the seconds the host held `candidate` off the CPU beyond its fair share, and
    how it was reckoned ('rate' or 'median', contracts/wording/diagnosis_checks.py). A rank with
    more work is runnable longer, so on a loaded host it also waits longer: at the others'
    rate (their median wait over their median time on a CPU), its own time on a CPU would
    have waited that much; only the wait beyond it is the host's ('rate'). Without the time on
    a CPU (results before it, not Linux): its wait beyond the median of the others' ('median')."""
    others_wait = waits.drop(columns=[candidate]).median(axis=1)
    if cpu_time is not None:
        busy = cpu_time.reindex(index=waits.index, columns=waits.columns)
        if bool(busy.notna().all(axis=None)):
            others_busy = busy.drop(columns=[candidate]).median(axis=1)
            rate = (others_wait / others_busy.where(others_busy > 0)).fillna(0.0)
            fair = rate * busy[candidate]
            return waits[candidate] - fair, "rate"
    return waits[candidate] - others_wait, "median"


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
        return verdict, _check(None, None, CPU_WAIT_UNMEASURED)
    min_effect = verdict.min_effect_s
    held, reckoned = held_off_cpu(waits, cpu_time, candidate)
    host = paired_gap_test(held, min_effect_s=min_effect, alpha=ALPHA)
    host_est = gap_estimate(host)
    gap = over_others(table, candidate)
    less_held = gap - np.minimum(held.clip(lower=0.0), table[candidate])
    left = paired_gap_test(less_held, min_effect_s=min_effect, alpha=ALPHA)
    waited = {"rank": candidate, "held_s": host.mean_s, "by": reckoned}
    updated = verdict.model_copy(update={"host_wait_s": host_est})
    agrees: bool | None = None
    detail = Finding(code="cross_check.cpu_wait_neutral", figures=waited)
    if not verdict.named:
        held_rank = _most_held(waits, cpu_time, min_effect)
        # a rank that ran longer on a CPU than the host held it has more to do: not the host's
        more_work = (
            held_rank is not None
            and (test := _on_cpu_test(cpu_time, waits.index, held_rank[0], min_effect)) is not None
            and test.significant
        )
        if held_rank is not None and not more_work:
            rank, test = held_rank
            held_by = {"rank": rank, "held_s": test.mean_s}
            detail = Finding(code="cross_check.cpu_held_other", figures=held_by)
            return _held_verdict(verdict, rank, test, table), _check(
                gap_estimate(test), True, detail
            )
    if verdict.named:
        on_cpu = _on_cpu_test(cpu_time, waits.index, candidate, min_effect)
        if verdict.phase == "data" and verdict.kind == "input":
            on_cpu = None  # a rank waiting for its batch: its time on a CPU is not the question
        kind, rule = straggler_kind(verdict.phase, KindEvidence({}, host, left, on_cpu))
        agrees = True
        waited["left"] = [left.mean_s, left.low_s, left.high_s]
        if kind == "host":
            updated = updated.model_copy(update={"kind": "host", "kind_rule": rule})
            detail = Finding(code="cross_check.cpu_wait_host", figures=waited)
        else:
            if host.significant and verdict.kind_rule is not None:
                # the hold beside a kind that is not the host's, on the verdict's own rule
                also = {"also_held_s": host.mean_s, "held_less": host.mean_s < left.mean_s}
                figures = {**verdict.kind_rule.figures, **also}
                rule = verdict.kind_rule.model_copy(update={"figures": figures})
                updated = updated.model_copy(update={"kind_rule": rule})
            waited["input"] = kind == "input"
            detail = Finding(code="cross_check.cpu_wait_slow", figures=waited)
    return updated, _check(host_est, agrees, detail)


def _check(estimate: Estimate | None, agrees: bool | None, detail: Finding) -> CrossCheck:
    """The CPU-wait cross-check with what the waits showed."""
    return CrossCheck(check="cpu_wait", estimate=estimate, agrees=agrees, detail=detail)


def _on_cpu_test(
    cpu_time: pd.DataFrame | None, index: pd.Index, rank: int, min_effect: float
) -> GapTest | None:
    """Per step, `rank`'s time on a CPU over the median of the others', judged as a cost is
    (`cost.cost_test`: its mean at least the minimum effect, its bound above zero); None when
    not measured on every rank in those steps."""
    if cpu_time is None:
        return None
    busy = cpu_time.reindex(index=index)
    if rank not in busy.columns or busy.shape[1] < 2 or not bool(busy.notna().all(axis=None)):
        return None
    extra = over_others(busy, rank)
    return cost_test(extra, min_effect_s=min_effect, alpha=ALPHA)


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
    gap = over_others(own, rank)
    work = paired_gap_test(gap, min_effect_s=verdict.min_effect_s or 0.0, alpha=ALPHA)
    held_est = gap_estimate(held)
    rule = Finding(
        code="straggler.rule.held_in_wait", figures={"held_s": held.mean_s, "work_s": work.mean_s}
    )
    return named_as(
        verdict,
        rank,
        "host",
        gap=gap_estimate(work),
        p_value=held.p_value,
        rule=rule,
        host_wait_s=held_est,
    )
