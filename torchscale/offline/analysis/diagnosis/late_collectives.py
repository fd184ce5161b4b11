"""A communication straggler: a rank whose collectives start late while its work is on par.

The own-work test (verdict.straggler_verdict) cannot see it: the rank's operators take no
longer than anyone's, its time goes between its work and its collective launch, so the others
wait for it at every matched collective. Only the traces show that: the phase timers see the
others' wait but not who launched late (everyone's wait ends together).

Named only when three things hold together (docs/methodology.md, "The kind of a straggler"):
the rank is the one arrival order names (or, where order alone names nobody, the one the
others wait for the most: on shared cores the others also arrive last now and then, by
little); the others' extra wait for it clears the minimum effect; and its own work is not
significantly above the others' nor explains that wait (a noisy own-work gap that missed the
test is no evidence that the work is on par; a wait beyond it by a straggler's size is).

Pure: tables in, a verdict out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from torchscale.contracts.schema.cell_result import StragglerVerdict
from torchscale.contracts.wording import say, spelled
from torchscale.contracts.wording.figures import pct
from torchscale.offline.analysis.diagnosis.kind import late_summary, named_as
from torchscale.offline.analysis.diagnosis.step_model import (
    ALPHA,
    MIN_EFFECT_SHARE,
    mean_seconds,
    over_others,
    share_of_step,
)
from torchscale.offline.analysis.trace.straggler import StragglerAnalysis
from torchscale.offline.analysis.uncertainty import judged, paired_gap_test

LATE_METHOD = (
    "per step, the mean over the other ranks of their wait for peers at the matched "
    "collectives minus the named rank's; mean over steps, moving-block bootstrap over steps"
)


def late_collectives(
    verdict: StragglerVerdict,
    arrival: StragglerAnalysis | None,
    wait: pd.DataFrame,
    own: pd.DataFrame,
    step: np.ndarray,
) -> StragglerVerdict:
    """The verdict naming a communication straggler when the rule of the module doc holds,
    else `verdict` unchanged. `wait`: step x rank wait for peers (rows aligned with `step`,
    the mean step); `own`: step x rank own work, the table the own-work test compared."""
    late = arrival.straggler if arrival is not None else None
    if verdict.named or verdict.min_effect_s is None or wait.shape[1] < 2:
        return verdict
    rank = late.rank if late is not None else _most_waited_for(wait)
    if rank not in wait.columns or rank not in own.columns or wait.shape[1] < 2:
        return verdict
    keys = own.dropna().index.intersection(wait.index)
    own_gap = over_others(own.loc[keys], rank)
    work = paired_gap_test(own_gap, min_effect_s=verdict.min_effect_s, alpha=ALPHA)
    if work.significant:  # its own work is behind: the own-work test's to name
        return verdict
    extra = (wait.drop(columns=[rank]).mean(axis=1) - wait[rank]).to_numpy(np.float64)
    share = share_of_step(extra, step, method=LATE_METHOD)
    mean_step = float(np.mean(step)) if len(step) else 0.0
    if not share.measurable or share.value is None or (share.low or 0.0) < MIN_EFFECT_SHARE:
        return verdict
    seconds = mean_seconds(extra, LATE_METHOD)
    others_wait = wait.drop(columns=[rank]).mean(axis=1) - wait[rank]
    beyond = (others_wait.loc[keys] - own_gap).dropna().to_numpy(np.float64)
    unexplained = mean_seconds(beyond, LATE_METHOD) if beyond.size else None
    if (
        unexplained is None
        or unexplained.low is None
        or unexplained.value is None
        or unexplained.low < verdict.min_effect_s
    ):  # its own work could explain the others' wait
        return verdict
    gap = (
        verdict.gap_s
        if verdict.candidate_rank == rank
        else judged(work.mean_s, work.low_s, work.high_s, n=work.steps, method="paired", lower=None)
    )
    order = (
        f"it arrives last at {late.instances_last} of {late.instances} matched collectives "
        f"(chance: {spelled.pct_whole(late.expected_share)})"
        if late is not None
        else "the others wait for it the most (arrival order alone does not single it out: "
        f"{say(arrival.reason) if arrival is not None else 'no matched collectives'})"
    )
    basis = (
        f"{order}, the others wait {pct(share.value)} of the step "
        f"longer than it does (at least {spelled.pct_whole(MIN_EFFECT_SHARE)}), and its own "
        f"work is not significantly above theirs ({spelled.ms_signed_sig(work.mean_s)} per "
        "step) nor explains that wait (the wait exceeds its work gap by "
        f"{spelled.ms_signed_sig(unexplained.value)} per step, 95 % interval from "
        f"{spelled.ms_signed_sig(unexplained.low)})"
    )
    summary = late_summary(rank, (seconds.value, seconds.low, seconds.high), work.mean_s, mean_step)
    return named_as(
        verdict,
        rank,
        "communication",
        gap=gap,
        p_value=work.p_value,
        basis=basis,
        summary=summary,
        late_s=seconds,
    )


def _most_waited_for(wait: pd.DataFrame) -> int:
    """The rank the others wait for the most: their mean wait minus its own, over steps."""
    waited = {
        int(rank): float((wait.drop(columns=[rank]).mean(axis=1) - wait[rank]).mean())
        for rank in wait.columns
    }
    return max(waited, key=lambda r: (waited[r], -r))
