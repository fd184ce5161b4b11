"""Clock offsets between ranks, estimated from the collectives themselves, and arrival order
(docs/profiling.md, "How each figure is computed"). Hosts' clocks may disagree by seconds, but a
blocking collective ends on every rank at nearly the same instant (none can finish before the
last participant's data is in): offset(r) = median over matched instances of end(r) - end(ref),
ref the lowest rank. Only ops that end together are used (all_reduce, all_gather,
reduce_scatter, all_to_all, barrier): a broadcast root or a reduce non-root may leave early.
Aligned time on rank r: t - offset(r), i.e. the reference rank's clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from torchscale.contracts.collective_facts import ops_where
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.profile import note
from torchscale.offline.analysis.trace.collective_matching import Matched
from torchscale.offline.analysis.trace.steps import empty_table

SYMMETRIC_OPS = ops_where(lambda op: op.ends_together)
MAD_TO_SIGMA = 1.4826  # MAD x this estimates a normal standard deviation
OFFSET_COLUMNS = ["rank", "offset_us", "uncertainty_us", "samples"]
ARRIVAL_COLUMNS = ["group", "index", "rank", "aligned_ts", "arrival_lateness_us", "last_by_arrival"]


@dataclass
class Offsets:
    """`table` columns: rank, offset_us (own clock minus the reference rank's clock),
    uncertainty_us (1.4826 x the median absolute deviation of the per-instance differences,
    combined in quadrature along a chain; NaN with one sample), samples (instances used).
    Ranks that share no instance with any aligned rank get NaN (noted)."""

    table: pd.DataFrame
    reference: int | None
    notes: list[Finding] = field(default_factory=list)


def estimate_offsets(matched: Matched) -> Offsets:
    """Offsets of every matched rank against the lowest rank (see the module doc).

    Ranks that never share an instance with the reference (sub-groups) are aligned through the
    already-aligned rank they share most instances with."""
    notes: list[Finding] = []
    use = matched.usable
    if use.empty:
        empty = empty_table(OFFSET_COLUMNS, rank=np.int64, samples=np.int64)
        return Offsets(empty, None, [note("trace.no_clock_offsets")])
    sym = use[use["op"].isin(SYMMETRIC_OPS)]
    if sym.empty:
        notes.append(note("trace.clock_all_ops"))
        sym = use
    wide = sym.pivot_table(index=["group", "index"], columns="rank", values="end", aggfunc="first")
    ranks = sorted(int(r) for r in use["rank"].unique())
    wide = wide.reindex(columns=ranks)
    values = wide.to_numpy(dtype=np.float64)
    present = ~np.isnan(values)
    ref = ranks[0]
    col = {r: i for i, r in enumerate(ranks)}
    solved: dict[int, tuple[float, float, int]] = {ref: (0.0, 0.0, int(present[:, 0].sum()))}
    progress = True
    while progress and len(solved) < len(ranks):
        progress = False
        known = [col[r] for r in solved]
        for r in ranks:
            if r in solved:
                continue
            i = col[r]
            co = (present[:, [i]] & present[:, known]).sum(axis=0)
            if int(co.max()) == 0:
                continue
            j = known[int(np.argmax(co))]
            via = ranks[j]
            both = present[:, i] & present[:, j]
            d = values[both, i] - values[both, j]
            med = float(np.median(d))
            spread = MAD_TO_SIGMA * float(np.median(np.abs(d - med))) if d.size > 1 else np.nan
            off_via, unc_via, _ = solved[via]
            unc = float(np.hypot(unc_via, spread)) if not np.isnan(spread) else float("nan")
            solved[r] = (off_via + med, unc, int(both.sum()))
            progress = True
            if via != ref:
                notes.append(note("trace.clock_via", rank=r, via=via, ref=ref))
    rows = []
    for r in ranks:
        if r not in solved:
            notes.append(note("trace.clock_unaligned", rank=r))
        off, unc, n = solved.get(r, (np.nan, np.nan, 0))
        rows.append({"rank": r, "offset_us": off, "uncertainty_us": unc, "samples": n})
    table = pd.DataFrame(rows, columns=OFFSET_COLUMNS).astype(
        {"rank": np.int64, "samples": np.int64}
    )
    return Offsets(table, ref, notes)


@dataclass
class Arrivals:
    """`table` columns: group, index, rank, aligned_ts (start on the reference clock),
    arrival_lateness_us (aligned start minus the earliest aligned start of the instance),
    last_by_arrival (strictly the latest aligned start). `agreement`: share of instances with
    both a last-by-arrival and a last-by-duration rank where the two are the same rank (a
    cross-check of the clock-free method; None when no instance has both)."""

    table: pd.DataFrame
    agreement: float | None
    notes: list[Finding] = field(default_factory=list)


def arrivals(matched: Matched, offsets: Offsets) -> Arrivals:
    """Arrival order of every matched instance on aligned clocks (see `Arrivals`)."""
    notes: list[Finding] = []
    use = matched.usable
    off = offsets.table.dropna(subset=["offset_us"])
    if use.empty or off.empty:
        empty = empty_table(
            ARRIVAL_COLUMNS, group=object, index=np.int64, rank=np.int64, last_by_arrival=bool
        )
        return Arrivals(empty, None, [note("trace.no_arrivals")])
    shift = off.set_index("rank")["offset_us"]
    m = use[use["rank"].isin(shift.index)].copy()
    m["aligned_ts"] = m["ts"] - m["rank"].map(shift).astype(np.float64)
    by = m.groupby(["group", "index"], sort=False)["aligned_ts"]
    m["arrival_lateness_us"] = m["aligned_ts"] - by.transform("min")
    m = m.sort_values(["group", "index", "aligned_ts", "rank"], ascending=[True, True, False, True])
    pos = m.groupby(["group", "index"], sort=False).cumcount()
    second = m["aligned_ts"].where(pos == 1).groupby([m["group"], m["index"]]).transform("max")
    m["last_by_arrival"] = (pos == 0) & (m["aligned_ts"] > second)
    table = m[ARRIVAL_COLUMNS].sort_values(["group", "index", "rank"]).reset_index(drop=True)
    by_arr = m[m["last_by_arrival"]].set_index(["group", "index"])["rank"]
    by_dur = m[m["last_by_duration"].astype(bool)].set_index(["group", "index"])["rank"]
    both = by_arr.index.intersection(by_dur.index)
    agreement = None
    if len(both):
        same = by_arr.loc[both].to_numpy() == by_dur.loc[both].to_numpy()
        agreement = float(np.mean(same))
    else:
        notes.append(note("trace.no_arrival_cross_check"))
    return Arrivals(table, agreement, notes)
