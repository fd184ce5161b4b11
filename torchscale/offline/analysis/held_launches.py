"""A communication straggler in the phase timers: a rank whose DDP communication hook holds its
collectives back while its own work is on par.

Every rank's phases come out equal when one rank launches late: the others wait in their
grad-sync wait exactly as long as it spends in its hook. What differs is the time each rank
spends inside its hook (`COMM_HOLD`, timed where a plug-in registers one:
rank/worker/comm_hold.py). The step model already takes that time out of compute and out of
the grad-sync wait (attribution.step_parts), so the own-work test sees the rank's work alone.

Named communication when (docs/methodology.md, "The kind of a straggler"):
- the rank's hold per step over the median of the others' passes the straggler test (the
  paired test and the 5 %-of-step minimum effect of the own-work test), the largest of any
  rank's; and
- its own work (hold taken out) is not named, or is named for this rank with a gap no larger
  than the hold (the larger of the two is its kind);
- no other rank is named with a larger gap (another rank's smaller one gives way: the others
  wait longer for this launch than for that work, and the own-work test's candidate, held up
  by this rank's late launch, may be the one waiting).

A launch held anywhere but a hook (a thread that starts the step late) is not seen here: the
traces read launch holds from every op (trace/steps.launch_holds).

Pure: tables in, a verdict and its cross-check out.
"""

from __future__ import annotations

import pandas as pd

from torchscale.contracts.schema.cell_result import CrossCheck, Estimate, StragglerVerdict
from torchscale.offline.analysis.straggler_kind import KIND_WORDS
from torchscale.offline.analysis.uncertainty import GapTest, judged, paired_gap_test

HELD_CHECK = "held launches (DDP comm hook)"
HELD_METHOD = (
    "per step, the time the rank's DDP communication hook held its launches (its own time "
    "inside the hook, every bucket) minus the median of the other ranks', same step; the "
    "straggler test on that difference"
)


def held_launch_check(
    own: pd.DataFrame, held: pd.DataFrame, verdict: StragglerVerdict, alpha: float
) -> tuple[StragglerVerdict, CrossCheck]:
    """The verdict naming a communication straggler when the rule of the module doc holds,
    else `verdict` unchanged, and the check that says what the holds showed. `own`: (window,
    step) x rank own work with the holds taken out (the table the own-work test compared);
    `held`: the same index x rank seconds held in the hook."""
    min_effect = verdict.min_effect_s or 0.0
    keys = own.dropna().index.intersection(held.dropna().index)
    table = held.loc[keys]
    tests = {
        int(rank): paired_gap_test(
            table[rank] - table.drop(columns=[rank]).median(axis=1),
            min_effect_s=min_effect,
            alpha=alpha,
        )
        for rank in table.columns
    }
    rank = max(tests, key=lambda r: (tests[r].mean_s, -r))
    hold = tests[rank]
    held_est = _estimate(hold)
    if not hold.significant:
        return verdict, CrossCheck(
            name=HELD_CHECK,
            method=HELD_METHOD,
            estimate=held_est,
            agrees=None,
            detail=f"no rank's hook holds its launches a straggler's time longer (the most: "
            f"rank {rank}, {_ms(hold.mean_s)} per step)",
        )
    mine = own.loc[keys]
    work = paired_gap_test(
        mine[rank] - mine.drop(columns=[rank]).median(axis=1),
        min_effect_s=min_effect,
        alpha=alpha,
    )
    held_text = f"rank {rank}'s hook holds its launches {_ms(hold.mean_s)} per step longer"
    other = verdict.headline_gap() if verdict.named and verdict.rank != rank else None
    if other is not None and (other.value is None or other.value >= hold.mean_s):
        return verdict, CrossCheck(
            name=HELD_CHECK,
            method=HELD_METHOD,
            estimate=held_est,
            agrees=None,
            detail=f"{held_text}, less than rank {verdict.rank} is behind: both may be late",
        )
    if work.significant and work.mean_s > hold.mean_s:
        return verdict, CrossCheck(
            name=HELD_CHECK,
            method=HELD_METHOD,
            estimate=held_est,
            agrees=True,
            detail=f"{held_text}, less than its extra work ({_ms(work.mean_s)}): compute",
        )
    return _named(verdict, rank, hold, work, held_est), CrossCheck(
        name=HELD_CHECK,
        method=HELD_METHOD,
        estimate=held_est,
        agrees=True,
        detail=f"{held_text} than the others': they wait for its launch",
    )


def _named(
    verdict: StragglerVerdict, rank: int, hold: GapTest, work: GapTest, held: Estimate
) -> StragglerVerdict:
    basis = (
        f"its DDP communication hook holds its collectives {_ms(hold.mean_s)} per step longer "
        f"than the others' (passes the straggler test), while its own work is "
        f"{_ms(work.mean_s)} per step over theirs: the others wait for its launch"
    )
    summary = (
        f"rank {rank} is a straggler (communication: {KIND_WORDS['communication']}): the others "
        f"wait {_ms(hold.mean_s)} per step longer for it (95 % interval {_ms(hold.low_s)} to "
        f"{_ms(hold.high_s)}) while its own work is on par ({_ms(work.mean_s)})"
    )
    gap = judged(work.mean_s, work.low_s, work.high_s, n=work.steps, method="paired", lower=None)
    return verdict.model_copy(
        update={
            "named": True,
            "rank": rank,
            "phase": None,
            "phase_gap_s": None,
            "candidate_rank": rank,
            "gap_s": gap,
            "p_value": hold.p_value,
            "kind": "communication",
            "kind_basis": basis,
            "late_s": held,
            "not_named": None,
            "withdrawn_by": None,
            "host_bound": False,
            "summary": summary,
        }
    )


def _estimate(test: GapTest) -> Estimate:
    method = f"moving-block bootstrap of the mean paired difference over {test.steps} steps"
    return judged(test.mean_s, test.low_s, test.high_s, n=test.steps, method=method, lower=None)


def _ms(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds * 1e3:+.3g} ms"
