"""A communication straggler in the phase timers: a rank whose DDP communication hook holds its
collectives back while its own work is on par.

Every rank's phases come out equal when one rank launches late: the others wait in their
grad-sync wait exactly as long as it spends in its hook. What differs is the time each rank
spends inside its hook (`COMM_HOLD`, timed where a plug-in registers one:
rank/worker/comm_hold.py). The step model already takes that time out of compute and out of
the grad-sync wait (timers.step_parts), so the own-work test sees the rank's work alone.

Named communication when its hold passes the straggler test and no larger own-work gap is
named (docs/methodology.md, "The kind of a straggler"). Two traps the rule avoids: a hook that
blocks inside its own collective holds longest on the ranks that wait there for a slow one (so
a rank with less work, or a tie with another rank's own-work gap, keeps the own-work name),
and a hook's wall time grows with its thread's wait for a CPU (so a rank the host held at
least as long stays host).

A launch held anywhere but a hook is not seen here: the traces read launch holds from every
op (trace/steps.launch_holds). Pure: tables in, a verdict and its cross-check out.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import CrossCheck, Estimate, StragglerVerdict
from torchscale.contracts.step_phases import COMM_HOLD, COMM_HOLD_BACKWARD, OWN_WORK_PHASES
from torchscale.offline.analysis.diagnosis.kind import named_as
from torchscale.offline.analysis.diagnosis.step_model import gap_estimate, over_others
from torchscale.offline.analysis.uncertainty import GapTest, judged, paired_gap_test


def hold_tests(held: pd.DataFrame, min_effect: float, alpha: float) -> dict[int, GapTest]:
    """Per rank, the straggler test on its hold per step over the median of the others'."""
    return {
        int(rank): paired_gap_test(over_others(held, rank), min_effect_s=min_effect, alpha=alpha)
        for rank in held.columns
    }


def late_launcher(steps: pd.DataFrame, min_effect: float, alpha: float) -> int | None:
    """The rank whose hook holds its launches a straggler's time longer than the others',
    its own work (in-backward hold taken out) not below theirs by `min_effect`; None without
    holds or without such a rank. Read from the raw steps table (window, step, rank, the own
    work phases, COMM_HOLD, COMM_HOLD_BACKWARD), before the step model, which takes only
    this rank's extra hold out of its compute and grad-sync wait (timers.step_parts)."""
    if COMM_HOLD not in steps.columns or COMM_HOLD_BACKWARD not in steps.columns:
        return None
    rows = steps.dropna(subset=[COMM_HOLD, *OWN_WORK_PHASES])
    if rows.empty or rows["rank"].nunique() < 2:
        return None
    before = rows[COMM_HOLD_BACKWARD].astype(float).fillna(0.0)
    own_work = rows[list(OWN_WORK_PHASES)].astype(float).sum(axis=1) - before
    key = ["window", "step"]
    held = rows.pivot_table(index=key, columns="rank", values=COMM_HOLD).dropna()
    own = rows.assign(own=own_work).pivot_table(index=key, columns="rank", values="own")
    own = own.reindex(held.index).dropna()
    if held.shape[1] < 2 or own.empty:
        return None
    tests = hold_tests(held.loc[own.index], min_effect, alpha)
    rank = max(tests, key=lambda r: (tests[r].mean_s, -r))
    if not tests[rank].significant:
        return None
    work = paired_gap_test(over_others(own, rank), min_effect_s=min_effect, alpha=alpha)
    return None if work.high_s is not None and work.high_s < -min_effect else rank


def held_launch_check(
    own: pd.DataFrame, held: pd.DataFrame, verdict: StragglerVerdict, alpha: float
) -> tuple[StragglerVerdict, CrossCheck]:
    """The verdict naming a communication straggler when the rule of the module doc holds,
    else `verdict` unchanged, and the check that says what the holds showed. `own`: (window,
    step) x rank own work with the holds taken out (the table the own-work test compared);
    `held`: the same index x rank seconds held in the hook."""
    min_effect = verdict.min_effect_s or 0.0
    keys = own.dropna().index.intersection(held.dropna().index)
    tests = hold_tests(held.loc[keys], min_effect, alpha)
    rank = max(tests, key=lambda r: (tests[r].mean_s, -r))
    hold = tests[rank]
    held_est = gap_estimate(hold)
    figures = {"rank": rank, "held_s": hold.mean_s}
    if not hold.significant:
        return verdict, _check(held_est, None, "held_none", figures)
    work = paired_gap_test(over_others(own.loc[keys], rank), min_effect_s=min_effect, alpha=alpha)
    if work.high_s is not None and work.high_s < -min_effect:
        # less work than the others by a straggler's size: its hook waits for them inside its
        # own collective (a blocking hook), it does not make them wait
        return verdict, _check(held_est, None, "held_waits", {**figures, "work_s": work.mean_s})
    # another rank named by its own work keeps the name unless this hold is larger beyond
    # doubt: a hook that blocks inside its own collective holds longest on the ranks that wait
    # for a slow one, by about what that one is behind
    if verdict.named and verdict.rank != rank:
        other = verdict.headline_gap()
        if other is None or other.value is None or (hold.low_s or 0.0) <= other.value:
            return verdict, _check(
                held_est, None, "held_behind", {**figures, "named": verdict.rank}
            )
    # a rank the host held off the CPU: its hook's wall time grows with the hold too
    host = verdict.host_wait_s if verdict.named and verdict.kind == "host" else None
    if host is not None and host.value is not None and host.value >= hold.mean_s:
        return verdict, _check(held_est, True, "held_host", figures)
    if work.significant and work.mean_s > hold.mean_s:
        return verdict, _check(held_est, True, "held_compute", {**figures, "work_s": work.mean_s})
    return _named(verdict, rank, hold, work, held_est), _check(held_est, True, "held_late", figures)


def _named(
    verdict: StragglerVerdict, rank: int, hold: GapTest, work: GapTest, held: Estimate
) -> StragglerVerdict:
    figures = {"held_s": hold.mean_s, "work_s": work.mean_s}
    rule = Finding(code="straggler.rule.held_launches", figures=figures)
    gap = judged(work.mean_s, work.low_s, work.high_s, n=work.steps, lower=None)
    return named_as(
        verdict,
        rank,
        "communication",
        gap=gap,
        p_value=hold.p_value,
        rule=rule,
        late_s=held,
    )


def _check(
    estimate: Estimate, agrees: bool | None, code: str, figures: dict[str, Any]
) -> CrossCheck:
    """The held-launch cross-check with what the holds showed (a `cross_check.held_*` code)."""
    detail = Finding(code=f"cross_check.{code}", figures=figures)
    return CrossCheck(check="held_launches", estimate=estimate, agrees=agrees, detail=detail)
