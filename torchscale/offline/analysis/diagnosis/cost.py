"""What a rank costs the others: how much later each step ends because of it.

A synchronous step ends when its last rank arrives, so a rank's cost at a step is how far its
own work runs past the slowest of the others' (zero where it is not last): the time every
other rank waits for it, and the step time saved were it on par. A rank is named by the mean
of that cost over the others' (a stall of 60 ms every 4th step costs 15 ms a step, though
three steps in four are on par and a per-step median test calls it noise), judged by a
moving-block bootstrap whose blocks span the periods users meet (up to `LONGEST_PERIOD`).
How the cost falls over the steps is said in words: every k-th step, all or most steps, or
k of n steps (docs/methodology.md, "What a straggler costs").

Pure: a step x rank table of own-work seconds in, tests and words out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from torchscale.contracts.schema.diagnosis import StepPattern
from torchscale.offline.analysis.uncertainty import (
    SMALL,
    GapTest,
    block_indices,
    block_length,
    finite_steps,
    percentile_interval,
    t_interval,
    untested_gap,
)

LONGEST_PERIOD = 8  # steps: a stall every 2nd..8th step is said as periodic
STEADY_SHARE = 0.6  # of the steps carrying the cost: 'most steps'
BEAT_FILLED = 0.7  # of the repeats of a period's costly step that carry the cost
SPORADIC_CARRY = 0.7  # of the cost that a few costly steps carry: 'k of n steps'


def step_delays(table: pd.DataFrame) -> pd.DataFrame:
    """step x rank: how much later each step ends because of each rank (its own work over
    the slowest other's, zero where it is not last). `table`: step x rank own-work seconds,
    no missing values, at least two ranks."""
    values = table.to_numpy(np.float64)
    delays = np.zeros_like(values)
    for column in range(values.shape[1]):
        slowest_other = np.delete(values, column, axis=1).max(axis=1)
        delays[:, column] = np.clip(values[:, column] - slowest_other, 0.0, None)
    return pd.DataFrame(delays, index=table.index, columns=table.columns)


def excess_costs(table: pd.DataFrame) -> pd.DataFrame:
    """step x rank: each rank's cost at each step over the mean of the others' costs (two
    ranks: simply its own work minus the other's)."""
    delays = step_delays(table)
    total = delays.sum(axis=1)
    others = (total.to_numpy()[:, None] - delays.to_numpy()) / (delays.shape[1] - 1)
    return pd.DataFrame(delays.to_numpy() - others, index=table.index, columns=table.columns)


def cost_block(n: int) -> int:
    """Block length for the cost's bootstrap: long enough to hold a period up to
    LONGEST_PERIOD where the steps allow three blocks, never shorter than n^(1/3)."""
    return max(block_length(n), min(LONGEST_PERIOD, n // 3))


def cost_test(
    costs: np.ndarray | pd.Series, *, min_effect_s: float, alpha: float, candidates: int = 1
) -> GapTest:
    """Is this cost real and large enough to act on? Significant when the one-sided
    block-bootstrap bound of its mean at `alpha / candidates` (the largest of `candidates`
    ranks was picked) is above zero AND the mean is at least `min_effect_s`. The interval
    shown is the 95 % one; `p_value` is the bootstrap's share of resampled means at or below
    zero. With 2-3 steps: Student t, never significant (too few steps to judge)."""
    data = finite_steps(costs)
    if data.size < 2:
        return untested_gap(data, min_effect_s)
    mean = float(data.mean())
    if data.size < SMALL:
        low, high = t_interval(data, log=False)
        return GapTest(mean, low, high, None, min_effect_s, False, int(data.size))
    means = data[block_indices(data.size, block=cost_block(data.size))].mean(axis=1)
    low, high = percentile_interval(means)
    bound = float(np.quantile(means, alpha / max(candidates, 1)))
    p_value = float(np.mean(means <= 0.0))
    significant = bound > 0.0 and mean >= min_effect_s
    return GapTest(mean, low, high, p_value, min_effect_s, significant, int(data.size))


def step_pattern(
    costs: np.ndarray | pd.Series,
    min_effect_s: float,
    windows: np.ndarray | None = None,
    steps: np.ndarray | None = None,
) -> StepPattern | None:
    """How the cost falls over the steps (in step order), or None when it costs nothing on
    average: one step of each period carries it (periodic: 'every 4th step +60 ms'), every
    step or most steps (steady), a few steps (sporadic: the steps at least half its largest
    cost, carrying SPORADIC_CARRY of it), else unevenly (a steady extra the others' noise
    scatters). `typical_s`: the typical cost of the steps that carry it. `windows`: each
    step's window, where the step count restarts (a period is looked for inside each window:
    the steps between windows shift its phase); `steps`: each step's number, so that a step
    left out (cut by a capture, missing on a rank) shifts no phase (default: consecutive)."""
    data = np.nan_to_num(np.asarray(costs, dtype=np.float64))
    n = data.size
    mean = float(data.mean()) if n else 0.0
    if n < 2 or mean <= 0:
        return None
    numbers = np.arange(n) if steps is None else np.asarray(steps, dtype=np.int64)
    periodic = _period(data, min_effect_s, windows, numbers)
    if periodic is not None:
        k, typical = periodic
        return StepPattern(shape="periodic", period=k, typical_s=typical)
    steady = data >= mean / 2
    if steady.all():
        return StepPattern(shape="every")  # the figure beside it is its mean already
    if steady.sum() >= STEADY_SHARE * n:
        typical = float(np.median(data[steady]))
        return StepPattern(shape="most", steps=int(steady.sum()), of=n, typical_s=typical)
    costly = data >= max(min_effect_s, float(data.max()) / 2)
    carried = float(data[costly].sum()) / max(float(data[data > 0].sum()), 1e-12)
    if carried >= SPORADIC_CARRY:
        typical = float(np.median(data[costly]))
        return StepPattern(shape="sporadic", steps=int(costly.sum()), of=n, typical_s=typical)
    # neither steady nor a few events: a steady extra scattered by the others' noise (no
    # figure: its median step can cost nothing, and the mean stands beside these words)
    return StepPattern(shape="uneven")


def _period(
    data: np.ndarray, min_effect_s: float, windows: np.ndarray | None, steps: np.ndarray
) -> tuple[int, float] | None:
    """(k, the typical cost on its step) for the k in 2..LONGEST_PERIOD where one step of
    every k carries the cost: its mean at least twice the minimum effect, every other step of
    the period under a quarter of it, and BEAT_FILLED of its repeats at least half its mean;
    None when no period does (each other beat by its median and by how many of its repeats
    carry the cost). Of several, the one whose repeats carry it most often, the
    shortest among equals: a stall every 4th step also passes as every 2nd when noise fills
    the 2nd's empty repeats (seen at load 12), and a multiple of the true period never passes
    (its other beat holds the same stall). Each window is folded on its own step numbers,
    its costliest step of the period aligned with the others' (a window shorter than k is
    left out)."""
    labels = np.zeros(data.size) if windows is None else np.asarray(windows)
    groups = [
        (data[labels == label], steps[labels == label]) for label in dict.fromkeys(labels.tolist())
    ]
    found: tuple[float, int, float] | None = None  # (carried, k, typical)
    for k in range(2, LONGEST_PERIOD + 1):
        usable = [(group, numbers) for group, numbers in groups if group.size >= k]
        if sum(group.size for group, _ in usable) < 2 * k:
            continue
        beats: list[list[float]] = [[] for _ in range(k)]
        for group, numbers in usable:
            residue = numbers % k
            here = [
                group[residue == r].mean() if (residue == r).any() else -np.inf for r in range(k)
            ]
            top_here = int(np.argmax(here))
            for offset in range(k):
                beats[offset].extend(group[residue == (top_here + offset) % k].tolist())
        if any(not beat for beat in beats):
            continue
        means = np.array([np.mean(beat) for beat in beats])
        top = int(np.argmax(means))
        carried = float(np.mean(np.asarray(beats[top]) >= means[top] / 2))
        # each other beat quiet by its median, and carrying the cost on at most the share of
        # its repeats the top one may miss: one step a loaded host held back (130 ms once, at
        # load 4) must not hide the period, nor a beat filled on 4 repeats in 10 make one
        quiet = all(
            np.median(beat) < means[top] / 4
            and np.mean(np.asarray(beat) >= means[top] / 2) <= 1 - BEAT_FILLED
            for offset, beat in enumerate(beats)
            if offset != top
        )
        alone = means[top] >= 2 * min_effect_s and quiet
        if alone and carried >= BEAT_FILLED and (found is None or carried > found[0]):
            found = (carried, k, float(np.median(beats[top])))
    return None if found is None else (found[1], found[2])
