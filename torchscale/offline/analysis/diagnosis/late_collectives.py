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

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import StragglerVerdict
from torchscale.offline.analysis.diagnosis.kind import named_as
from torchscale.offline.analysis.diagnosis.step_model import (
    ALPHA,
    MIN_EFFECT_SHARE,
    mean_seconds,
    over_others,
    share_of_step,
)
from torchscale.offline.analysis.trace.straggler import StragglerAnalysis
from torchscale.offline.analysis.uncertainty import judged, paired_gap_test


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
    share = share_of_step(extra, step)
    if not share.measurable or share.value is None or (share.low or 0.0) < MIN_EFFECT_SHARE:
        return verdict
    seconds = mean_seconds(extra)
    others_wait = wait.drop(columns=[rank]).mean(axis=1) - wait[rank]
    beyond = (others_wait.loc[keys] - own_gap).dropna().to_numpy(np.float64)
    unexplained = mean_seconds(beyond) if beyond.size else None
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
        else judged(work.mean_s, work.low_s, work.high_s, n=work.steps, lower=None)
    )
    figures = {
        "last": late.instances_last if late is not None else None,
        "matched": late.instances if late is not None else None,
        "expected": late.expected_share if late is not None else None,
        "wait_share": share.value,
        "min_share": MIN_EFFECT_SHARE,
        "work_s": work.mean_s,
    }
    rule = Finding(code="straggler.rule.late_collectives", figures=figures)
    return named_as(
        verdict,
        rank,
        "communication",
        gap=gap,
        p_value=work.p_value,
        rule=rule,
        late_s=seconds,
    )


def _most_waited_for(wait: pd.DataFrame) -> int:
    """The rank the others wait for the most: their mean wait minus its own, over steps."""
    waited = {
        int(rank): float((wait.drop(columns=[rank]).mean(axis=1) - wait[rank]).mean())
        for rank in wait.columns
    }
    return max(waited, key=lambda r: (waited[r], -r))
