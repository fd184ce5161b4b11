"""The one model of a step, shared by every source of evidence (the phase timers: timers.py;
the traces: traces.py). Pure functions over per-step tables.

Every step of every rank splits into five parts that are never negative and add up to the
step by construction (docs/methodology.md, "One model of the step"):

    step = compute + data + wait_for_peers + exposed_transfer + rest

Each source cuts its own evidence into these parts (per rank and step); from there the
arithmetic is this module's, once: the mean over ranks per step (`mean_step`), the parts'
block-bootstrap intervals over steps (`part_estimates`: whole steps are resampled, so the parts
add up in every resample too) and a share of the step with its interval (`share_of_step`).
The straggler verdict over the same evidence is verdict.py's.

Averaged over ranks, compute + wait_for_peers is the slowest rank's own work: the others wait
for it. The figures are means over ranks and steps (means add up; medians do not).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from torchscale.contracts.schema.diagnosis import PART_NAMES, Estimate, StepPart
from torchscale.contracts.wording.cell_reasons import coded
from torchscale.offline.analysis.uncertainty import (
    GapTest,
    judged,
    mean_columns,
    one_unit,
    percentile_interval,
)

MIN_EFFECT_SHARE = 0.05  # a straggler costs the others at least 5 % of the step, or it is noise
ALPHA = 0.01
MIN_PAIRED_STEPS = math.floor(math.log2(1 / ALPHA)) + 1  # smallest n with 2^-n < ALPHA
NO_STEP_TIME, ONE_STEP = coded("estimate.no_step_time"), coded("estimate.one_step")


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
    matrix: np.ndarray, ranks: int, *, lone: bool | None = None
) -> tuple[Estimate, list[StepPart]]:
    """Mean step and the parts (seconds and shares of the mean step) with block-bootstrap
    intervals from a (steps, parts) matrix of seconds: rank-averaged for the model, one rank's
    own for its per-rank parts. `lone` (default: one rank): no
    peers to wait for, so the wait is 0 by definition; one rank of many may wait 0 too, but
    measured, with an interval."""
    steps = matrix.shape[0]
    means, resampled = mean_columns(matrix)
    step_mean = float(means.sum())
    lone = ranks == 1 if lone is None else lone
    share_values = [float(m / step_mean) if step_mean > 0 else 0.0 for m in means]
    if resampled is None:
        parts = [
            StepPart(name=name, seconds=one_unit(float(means[i])), share=one_unit(share_values[i]))
            for i, name in enumerate(PART_NAMES)
        ]
        return one_unit(step_mean), parts
    totals = resampled.sum(axis=1)
    low, high = percentile_interval(totals)
    step_est = judged(step_mean, low, high, n=steps)
    shares = resampled / np.where(totals > 0, totals, np.nan)[:, None]
    parts = []
    for i, name in enumerate(PART_NAMES):
        if lone and name == "wait_for_peers":
            zero = Estimate(
                value=0.0,
                low=0.0,
                high=0.0,
                n=steps,
                measurable=True,
                reason=coded("estimate.one_rank"),
            )
            parts.append(StepPart(name=name, seconds=zero, share=zero))
            continue
        s_low, s_high = percentile_interval(resampled[:, i])
        f_low, f_high = percentile_interval(shares[:, i])
        seconds = judged(float(means[i]), s_low, s_high, n=steps)
        share = judged(share_values[i], f_low, f_high, n=steps, upper=1.0)
        parts.append(StepPart(name=name, seconds=seconds, share=share))
    return step_est, parts


def wide(
    parts: pd.DataFrame,
    column: str,
    key: str | list[str] = ["window", "step"],  # noqa: B006
) -> pd.DataFrame:
    """step key x rank table of one column (one row per rank and step in `parts`)."""
    return parts.pivot_table(index=key, columns="rank", values=column)


def gap_estimate(test: GapTest) -> Estimate:
    """A signed gap: its interval is what it is (no domain edge), kept as measured."""
    return judged(test.mean_s, test.low_s, test.high_s, n=test.steps, lower=None)


def over_others(table: pd.DataFrame, rank: int) -> pd.Series:
    """Per row of a step x rank table, `rank`'s value minus the median of the others'."""
    return table[rank] - table.drop(columns=[rank]).median(axis=1)


def mean_seconds(values: np.ndarray) -> Estimate:
    """The mean of per-step seconds with its moving-block bootstrap interval (one step: none)."""
    means, resampled = mean_columns(values[:, None])
    if resampled is None:
        return judged(float(means[0]), None, None, n=1, reason=ONE_STEP)
    low, high = percentile_interval(resampled[:, 0])
    return judged(float(means[0]), low, high, n=len(values))


def share_of_step(
    numerator: np.ndarray, step: np.ndarray, *, lower: float | None = 0.0
) -> Estimate:
    """mean(numerator) / mean(step) over the same steps, with the block-bootstrap interval of
    that ratio (whole steps resampled); a share of the step, so at most 1."""
    matrix = np.column_stack([numerator, step])
    means, resampled = mean_columns(matrix)
    value = float(means[0] / means[1]) if means[1] > 0 else 0.0
    if resampled is None:
        return one_unit(value)
    ratio = resampled[:, 0] / np.where(resampled[:, 1] > 0, resampled[:, 1], np.nan)
    ratio = ratio[np.isfinite(ratio)]
    if ratio.size == 0:  # no step with any length: nothing to resample
        return judged(value, None, None, n=1, reason=NO_STEP_TIME, lower=lower)
    low, high = percentile_interval(ratio)
    n = int(matrix.shape[0])
    return judged(value, low, high, n=n, lower=lower, upper=1.0)
