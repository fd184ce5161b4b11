"""What-if: how much faster would the steps be if one rank arrived with the others?

Clock-free, from matched durations only. When rank r arrives last at an instance, the instance
could not end before r arrived; had r arrived with the second-last rank, every other rank would
have left `gap = second-smallest dur - smallest dur` earlier. On each other rank that saving is
the last `gap` us of its wait: [ts + wait - gap, ts + wait) on its own clock. Savings are
merged per rank and step (gloo's two runloop threads wait concurrently; a saving must not count
twice), the *least* saving of any other rank is the step's saving (a synchronised step ends
when its last rank is done: a rank that did not wait for r, or waited with compute to do, gains
nothing, and the step with it), and the mean over steps divided by the median step time is the
speed-up.

An upper bound, never more than the wait it removes: each rank's saving is part of its own
exposed wait for peers, so the step's saving is at most the exposed wait of the other rank that
waited least. The step model (`step_model.py`) also caps it by the other ranks' wait for peers
of the partition, step by step. Assumption: the rest of the step is unchanged (the time saved
is not spent elsewhere, nothing else moves onto the critical path).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from torchscale.analysis.trace.collective_matching import Matched, stack_steps
from torchscale.analysis.trace.intervals import Intervals, clip_pieces, grouped_union_length

WHATIF_COLUMNS = ["rank", "instances_last", "saved_us_per_step", "speedup_pct"]


def _empty() -> pd.DataFrame:
    frame = pd.DataFrame({c: pd.Series(dtype=np.float64) for c in WHATIF_COLUMNS})
    return frame.astype({"rank": np.int64, "instances_last": np.int64})


def savings_by_step(
    matched: Matched,
    steps_by_rank: Mapping[int, pd.DataFrame],
    exposed_by_rank: Mapping[int, Intervals] | None = None,
) -> pd.DataFrame:
    """Per rank that arrived last at least once (`last`) and full step of the other ranks:
    `saved_us`, the least saving of any other rank in that step (0 where it saved nothing).
    Columns: last, step, saved_us. See the module doc and `what_if` for `exposed_by_rank`."""
    empty = pd.DataFrame(
        {
            "last": pd.Series(dtype=np.int64),
            "step": pd.Series(dtype=np.int64),
            "saved_us": pd.Series(dtype=np.float64),
        }
    )
    use = matched.usable
    steps = stack_steps(steps_by_rank)
    if use.empty or steps.empty:
        return empty
    use = use[use["step"].notna()]
    lasts = use[use["last_by_duration"].astype(bool)]
    if lasts.empty:
        return empty
    keys = lasts[["group", "index", "rank", "gap_us"]].rename(columns={"rank": "last"})
    pairs = use.drop(columns="gap_us").merge(keys, on=["group", "index"], how="inner")
    pairs = pairs[pairs["rank"] != pairs["last"]]
    if pairs.empty:
        return empty
    hi = (pairs["ts"] + pairs["wait_us"]).to_numpy(np.float64)
    saving = pd.DataFrame(
        {
            "last": pairs["last"].to_numpy(dtype=np.int64),
            "rank": pairs["rank"].to_numpy(dtype=np.int64),
            "step": pairs["step"].to_numpy(dtype=np.int64),
            "s_lo": hi - pairs["gap_us"].to_numpy(np.float64),
            "s_hi": hi,
        }
    )
    if exposed_by_rank is not None:
        saving = _only_exposed(saving, exposed_by_rank)
    per = grouped_union_length(saving, ["last", "rank", "step"], "s_lo", "s_hi").rename("saved")
    per = per.reset_index()
    # every (straggler, other rank of the matched collectives, full step of that rank), 0 where
    # nothing was saved
    ranks = use[["rank"]].drop_duplicates()
    grid = lasts[["rank"]].drop_duplicates().rename(columns={"rank": "last"}).merge(ranks, "cross")
    grid = grid[grid["rank"] != grid["last"]]
    grid = grid.merge(steps[["rank", "step"]], on="rank")
    grid = grid.merge(per, on=["last", "rank", "step"], how="left").fillna({"saved": 0.0})
    # a step counts only where every other rank has it (the least saving needs them all)
    others = grid.groupby("last")["rank"].transform("nunique")
    present = grid.groupby(["last", "step"])["rank"].transform("nunique")
    grid = grid[present == others]
    out = grid.groupby(["last", "step"], as_index=False)["saved"].min()
    out = out.rename(columns={"saved": "saved_us"})
    return out.astype({"last": np.int64, "step": np.int64, "saved_us": np.float64})


def what_if(
    matched: Matched,
    steps_by_rank: Mapping[int, pd.DataFrame],
    exposed_by_rank: Mapping[int, Intervals] | None = None,
) -> pd.DataFrame:
    """One row per rank that arrived last (by duration) at least once, largest saving first.

    Columns: rank, instances_last (consistent instances where it was last), saved_us_per_step
    (mean over full steps of the per-step saving, the least over the other ranks),
    speedup_pct (saved_us_per_step / median step time x 100: at most this share of step time
    would go). With `exposed_by_rank` (`idle.IdleBase.exposed` per rank) a saving counts only
    where the waiting rank had nothing else to do: a wait hidden behind compute shortens
    nothing."""
    use = matched.usable
    steps = stack_steps(steps_by_rank)
    if use.empty or steps.empty:
        return _empty()
    lasts = use[use["step"].notna() & use["last_by_duration"].astype(bool)]
    if lasts.empty:
        return _empty()
    per_step = savings_by_step(matched, steps_by_rank, exposed_by_rank)
    saved = per_step.groupby("last")["saved_us"].mean()
    median_step = float(steps.groupby("rank")["step_us"].median().median())
    counts = lasts.groupby("rank").size()
    out = pd.DataFrame(
        {
            "rank": counts.index.to_numpy(dtype=np.int64),
            "instances_last": counts.to_numpy(dtype=np.int64),
        }
    )
    out["saved_us_per_step"] = out["rank"].map(saved).fillna(0.0).astype(np.float64)
    out["speedup_pct"] = (
        100.0 * out["saved_us_per_step"] / median_step if median_step > 0 else np.nan
    )
    return out.sort_values("saved_us_per_step", ascending=False).reset_index(drop=True)


def _only_exposed(saving: pd.DataFrame, exposed: Mapping[int, Intervals]) -> pd.DataFrame:
    """Cut each saving interval to the waiting rank's exposed-communication intervals."""
    parts = []
    for rank, sub in saving.groupby("rank", sort=False):
        iv = exposed.get(int(rank))
        if iv is None:
            parts.append(sub)  # unknown: keep the whole saving
            continue
        p_lo, p_hi, owner = clip_pieces(iv, sub["s_lo"].to_numpy(), sub["s_hi"].to_numpy())
        piece = sub.iloc[owner].assign(s_lo=p_lo, s_hi=p_hi)
        parts.append(piece)
    return pd.concat(parts, ignore_index=True) if parts else saving.iloc[0:0]
