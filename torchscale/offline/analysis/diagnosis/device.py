"""A compute straggler: a slower device, or more work? Read from the fixed calibration every
rank timed after each window (rank/worker/calibration.py).

A rank whose own work takes longer either runs on a slower device (a throttled or worse GPU, a
slower core: the same fixed work takes longer there too) or was given more work (its fixed work
is on par). Where every rank is known to be given the same work per step (`work_equal`: a zoo
model's plan), it is never "more work": a calibration on par then says the device was slower
while it worked, not after (a slowdown inside the windows: another process on its core, a
clock drop). The calibration's per-repetition gap over the median of the others' is judged by
the straggler's own paired test (`uncertainty.paired_gap_test`, ALPHA, the 5 % minimum effect
of the others' calibration); the rule: docs/methodology.md, "Slower device or more work".

Pure: tables in, the verdict with its `device` finding and `device_ratio` out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from torchscale.contracts.catalog import BUILTIN_MODELS
from torchscale.contracts.cell import CellIdentity
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import RankCalibration
from torchscale.contracts.schema.diagnosis import Estimate, StragglerVerdict
from torchscale.offline.analysis.diagnosis.step_model import (
    ALPHA,
    MIN_EFFECT_SHARE,
    MIN_PAIRED_STEPS,
)
from torchscale.offline.analysis.uncertainty import GapTest, judged, paired_gap_test

# the calibration's extra time must explain at least this share of the work's extra time for
# "a slower device" alone (its interval's top below it for "more work")
EXPLAINS = 0.5
UNMEASURED = "straggler.device_unmeasured"
# ranks sharing a GPU (launcher.ranks_per_gpu): each rank's calibration times the GPU its
# neighbours also drive, so it reads no device apart from the others'
SHARED_GPU = "straggler.device_shared_gpu"
# strategies whose ranks all run the same shapes each step (the whole model, or an even shard
# of every layer); a pipeline's stages, and the hybrids' mixes, differ by design
SAME_WORK_STRATEGIES = ("ddp", "fsdp", "tp")


@dataclass(frozen=True)
class Calibrated:
    """Every rank's calibration: (window, rep) x rank seconds (`table`), timed by `timer`
    (RankCalibration.timer: the thread's CPU clock or CUDA events)."""

    table: pd.DataFrame
    timer: str
    equal_work: bool | None = None  # every rank given the same work per step (work_equal)
    ranks_per_gpu: int = 1  # the cell's (CellIdentity.ranks_per_gpu)


def work_equal(cell: CellIdentity) -> bool | None:
    """Whether every rank was given the same work per step, by the cell's plan: for the zoo's
    models alone (fixed shapes on every rank) in SAME_WORK_STRATEGIES; None for a plug-in or a
    user's job, whose work per rank is its own (a job's label shows a placeholder strategy)."""
    if cell.model not in BUILTIN_MODELS:
        return None
    return cell.strategy in SAME_WORK_STRATEGIES


def calibration_table(
    per_rank: Mapping[int, RankCalibration | None],
    equal_work: bool | None = None,
    ranks_per_gpu: int = 1,
) -> Calibrated | None:
    """The ranks' calibrations as one (window, rep) x rank table, with whether their work was
    the same (`work_equal`) and how many ranks shared each GPU; None when a rank has none (a
    path that timed none) or they were timed differently."""
    if len(per_rank) < 2 or any(c is None for c in per_rank.values()):
        return None
    timers = {c.timer for c in per_rank.values() if c is not None}
    if len(timers) != 1:
        return None
    columns = {
        rank: pd.Series(
            {(w, r): s for w, reps in enumerate(c.device_s) for r, s in enumerate(reps)},
            dtype=float,
        )
        for rank, c in per_rank.items()
        if c is not None
    }
    table = pd.DataFrame(columns).sort_index()
    table.index.names = ["window", "rep"]
    return Calibrated(
        table=table, timer=timers.pop(), equal_work=equal_work, ranks_per_gpu=ranks_per_gpu
    )


def device_check(
    verdict: StragglerVerdict, own: pd.DataFrame, calibrated: Calibrated | None
) -> StragglerVerdict:
    """`verdict` with its compute straggler read as a slower device or more work (`device`,
    and `device_ratio`, its calibration over the others'); any other verdict unchanged.
    `own`: (window, step) x rank own work, as the straggler test read it."""
    rank = verdict.rank
    if not verdict.named or verdict.kind != "compute" or rank is None:
        return verdict
    if calibrated is not None and calibrated.ranks_per_gpu > 1:
        shared = Finding(code=SHARED_GPU, figures={"ranks_per_gpu": calibrated.ranks_per_gpu})
        return _with(verdict, shared, None)
    table = calibrated.table.dropna() if calibrated is not None else None
    if (
        calibrated is None
        or table is None
        or rank not in table.columns
        or table.shape[1] < 2
        or len(table) < MIN_PAIRED_STEPS
    ):
        return _with(verdict, Finding(code=UNMEASURED), None)
    others = table.drop(columns=[rank]).median(axis=1)
    base = float(others.mean())
    work = own.dropna()
    work_others = float(work.drop(columns=[rank]).median(axis=1).mean())
    if base <= 0 or work_others <= 0 or rank not in work.columns:
        return _with(verdict, Finding(code=UNMEASURED), None)
    test = paired_gap_test(table[rank] - others, min_effect_s=MIN_EFFECT_SHARE * base, alpha=ALPHA)
    work_ratio = float(work[rank].mean()) / work_others
    code = device_reading(test, base, work_ratio, calibrated.equal_work)
    low, high = _ratio(test.low_s, base), _ratio(test.high_s, base)
    ratio = 1.0 + test.mean_s / base
    estimate = judged(ratio, low, high, n=test.steps, lower=None)
    figures = {
        "rank": int(rank),
        "ratio": [ratio, low, high],
        "work_ratio": work_ratio,
        "timer": calibrated.timer,
    }
    return _with(verdict, Finding(code=code, figures=figures), estimate)


def device_reading(
    test: GapTest, base_s: float, work_ratio: float, equal_work: bool | None = None
) -> str:
    """The code of a compute straggler's calibration test (`test`: its calibration minus the
    others', per repetition; `base_s`: the others' mean calibration; `work_ratio`: its own
    work over the others'): slower by about its work's ratio (at least EXPLAINS of the work's
    extra share), slower by less, on par (the interval's top explains less than that), or
    neither shown (undecided). With the same work on every rank (`equal_work`) it is the
    device either way: slower in the calibration too, or only while it worked."""
    if equal_work:
        return "straggler.device_slower" if test.significant else "straggler.device_in_window"
    need = EXPLAINS * max(work_ratio - 1.0, 0.0)
    excess = test.mean_s / base_s
    high = (test.high_s if test.high_s is not None else test.mean_s) / base_s
    if test.significant:
        return "straggler.device_slower" if excess >= need else "straggler.device_partly"
    if high < need:
        return "straggler.more_work"
    return "straggler.device_undecided"


def _ratio(gap_s: float | None, base_s: float) -> float | None:
    return None if gap_s is None else 1.0 + gap_s / base_s


def _with(verdict: StragglerVerdict, device: Finding, ratio: Estimate | None) -> StragglerVerdict:
    """The verdict with its device reading."""
    return verdict.model_copy(update={"device": device, "device_ratio": ratio})
