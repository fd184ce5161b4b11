"""Collective instances per rank, matched across ranks: transfer time, wait time, sync stall.

The clock-free method (docs/profiling.md, "Wait and transfer"): the last arriver runs shortest,
`transfer = min over ranks of dur`, `wait(r) = dur(r) - transfer`, each on its rank's own clock
(unlike TraceLens, which subtracts raw start times, and HTA, one global t_min across ranks).

Split: `collective_table` is the per-rank reducer (one rank's events in, a small table out);
`match_collectives` and `sync_stall` work on those small tables only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from torchscale.contracts.collective_facts import ops_where
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.profile import note
from torchscale.offline.analysis.trace.intervals import (
    Intervals,
    clip_pieces,
    grouped_union_length,
    window_index,
)
from torchscale.offline.analysis.trace.steps import empty_table, is_device_trace, launch_times
from torchscale.offline.traces.kernel_ops import kernel_launches
from torchscale.offline.traces.rank_trace import UNKNOWN_OP

META = ["pg", "seq", "nelems", "dtype", "group_size"]
# point-to-point ops pair a sender with one receiver, whom the trace does not name: the k-th
# send of rank a is not the k-th recv of every other rank, so they are never matched
P2P_OPS = ops_where(lambda op: op.point_to_point)
# ops whose size must agree on every rank (all_to_all and gather/scatter may be uneven)
SIZE_STRICT_OPS = ops_where(lambda op: op.same_size)
# one instance on one rank: what it was and when it ran (on the rank's own clock)
_INSTANCE_COLUMNS = ["op", "nelems", "dtype", "ts", "dur", "end", "step"]
COLLECTIVE_COLUMNS = ["group", "index", *_INSTANCE_COLUMNS, "tid", "by_seq"]
_STALL_COLUMNS = ["wait_us", "transfer_us", "gap_us", "last_by_duration", "consistent"]
MATCHED_COLUMNS = ["group", "index", "rank", *_INSTANCE_COLUMNS, *_STALL_COLUMNS]
MAX_EXAMPLES = 3  # mismatch examples quoted per group


def _empty_collectives() -> pd.DataFrame:
    return empty_table(
        COLLECTIVE_COLUMNS,
        group=object,
        index=np.int64,
        op=object,
        nelems="Int64",
        dtype=object,
        step="Int64",
        tid=np.int64,
        by_seq=bool,
    )


def collective_table(
    events: pd.DataFrame, steps: pd.DataFrame, notes: list[Finding] | None = None
) -> pd.DataFrame:
    """The collectives one rank executed, each numbered within its process group.

    Columns: group (pg name; else "size=<group_size>"; else "default"), index (matching key:
    the recorded `seq` when every row of the group has a distinct one, else the position by
    start time), op, nelems, dtype, ts, dur, end (us, own clock), step (the step whose window
    holds the start; on GPU ranks the start of the *launch*, since a kernel may run after its
    step's host range; <NA> outside every step), tid (thread or stream), by_seq (index is `seq`).

    Ordering: by start time (ties: thread, then size). gloo runs DDP buckets on two runloop
    threads at once, so neither thread alone nor end order gives issue order; a bucket is
    dequeued, and so started, in the order it was enqueued. A recorded seq is preferred: it is
    the issue order itself. Metadata missing on the execution rows is filled from the
    host-side calls that enqueued them (`_fill_from_calls`). `notes` (if given) receives what
    was odd."""
    coll = events[events["kind"] == "collective"] if not events.empty else events
    if coll.empty:
        return _empty_collectives()
    notes_out = notes if notes is not None else []
    coll = _fill_from_calls(events, coll, notes_out)
    ts = coll["ts"].to_numpy(dtype=np.float64)
    dur = coll["dur"].to_numpy(dtype=np.float64)
    op = coll["coll_op"].astype(object).where(coll["coll_op"].notna(), UNKNOWN_OP)
    pg = coll["pg"].astype(object)
    gsize = coll["group_size"].astype("Int64")
    group = np.where(
        pg.notna(), pg.astype(str), np.where(gsize.notna(), "size=" + gsize.astype(str), "default")
    )
    table = pd.DataFrame(
        {
            "group": group,
            "op": op.astype(str).to_numpy(),
            "nelems": coll["nelems"].astype("Int64").to_numpy(),
            "dtype": coll["dtype"].astype(object).where(coll["dtype"].notna(), None).to_numpy(),
            "ts": ts,
            "dur": dur,
            "end": ts + dur,
            "tid": coll["tid"].to_numpy(dtype=np.int64),
            "seq": coll["seq"].astype("Int64").to_numpy(),
        }
    )
    table["step"] = _assign_steps(events, coll, steps)
    table = table.sort_values(["group", "ts", "tid", "nelems"], kind="stable")
    # seq keys only when every row has one and none repeats (coalesced ops may share one)
    seq_complete = table.groupby("group")["seq"].transform(
        lambda s: bool(s.notna().all() and s.is_unique)
    )
    table["by_seq"] = seq_complete.astype(bool)
    order = table.groupby("group").cumcount()
    table["index"] = np.where(table["by_seq"], table["seq"].fillna(-1).astype(np.int64), order)
    table["index"] = table["index"].astype(np.int64)
    return table[COLLECTIVE_COLUMNS].reset_index(drop=True)


def _assign_steps(events: pd.DataFrame, coll: pd.DataFrame, steps: pd.DataFrame) -> pd.Series:
    if steps.empty:
        return pd.Series(pd.array([pd.NA] * len(coll), dtype="Int64"))
    st = steps.sort_values("start")
    when = coll["ts"].to_numpy(dtype=np.float64)
    if is_device_trace(events):
        launch = launch_times(events, coll).to_numpy(dtype=np.float64)
        when = np.where(np.isnan(launch), when, launch)
    k = window_index(st["start"].to_numpy(np.float64), st["end"].to_numpy(np.float64), when)
    numbers = st["step"].to_numpy(dtype=np.int64)
    values = pd.array(np.where(k >= 0, numbers[np.clip(k, 0, None)], 0), dtype="Int64")
    values[k < 0] = pd.NA
    return pd.Series(values)


def _call_meta(events: pd.DataFrame) -> pd.DataFrame:
    """Outermost collective_call ranges per thread, each with the first known value of every
    metadata column among the calls nested in it (`c10d::allreduce_` wraps
    `record_param_comms`, which holds the sizes). Columns: tid, ts, end, coll_op, META."""
    calls = events[events["kind"] == "collective_call"]
    if calls.empty:
        return pd.DataFrame()
    calls = calls[["tid", "ts", "dur", "coll_op", *META]].assign(
        end=calls["ts"] + calls["dur"], coll_op=calls["coll_op"].astype(object)
    )
    calls = calls.sort_values(["tid", "ts", "end"], ascending=[True, True, False], kind="stable")
    prev = calls.groupby("tid", sort=False)["end"].cummax().groupby(calls["tid"]).shift(1)
    outer = prev.isna() | (calls["ts"] >= prev)
    calls = calls.assign(outer=outer.cumsum())
    agg = calls.groupby("outer", sort=True).first()
    agg["ts"] = calls.groupby("outer", sort=True)["ts"].min()
    agg["end"] = calls.groupby("outer", sort=True)["end"].max()
    return agg.reset_index(drop=True)


def _fill_from_calls(
    events: pd.DataFrame, coll: pd.DataFrame, notes: list[Finding]
) -> pd.DataFrame:
    """Fill metadata missing on collective executions from the calls that enqueued them.

    GPU: kernel -> runtime launch (same correlation) -> the outermost call on the launching
    thread that contains the launch. CPU (gloo has no correlation): the k-th call of an op is
    the k-th execution of that op (gloo dequeues in order), used only when the counts agree.
    Only missing values are filled."""
    if not bool(coll[META].isna().to_numpy().any()):
        return coll
    meta = _call_meta(events)
    if meta.empty:
        return coll
    coll = coll.copy()
    if is_device_trace(events) and coll["correlation"].notna().any():
        launch = kernel_launches(events, coll)
        if launch.empty:
            return coll
        right = meta.astype({"ts": np.float64, "tid": np.int64}).sort_values("ts")
        joined = pd.merge_asof(
            launch,
            right.rename(columns={"ts": "call_ts"}),
            left_on="ts",
            right_on="call_ts",
            by="tid",
            direction="backward",
        )
        joined = joined[joined["ts"] < joined["end"]].drop_duplicates("_row").set_index("_row")
        for col in META:
            fill = joined[col].reindex(coll.index)
            coll[col] = coll[col].astype(object).where(coll[col].notna(), fill.astype(object))
    else:
        calls = meta.sort_values("ts")
        execs = coll.sort_values("ts")
        skipped: list[list[Any]] = []
        for op, ex in execs.groupby(execs["coll_op"].astype(object), sort=True):
            cl = calls[calls["coll_op"] == op]
            if len(cl) != len(ex):
                skipped.append([str(op), len(cl), len(ex)])
                continue
            for col in META:
                values = pd.Series(cl[col].to_numpy(dtype=object), index=ex.index)
                held = coll.loc[ex.index, col]
                coll.loc[ex.index, col] = held.astype(object).where(held.notna(), values)
        if skipped:
            notes.append(note("trace.metadata_not_from_calls", ops=skipped))
    for col in ("seq", "nelems", "group_size"):
        coll[col] = pd.to_numeric(coll[col], errors="coerce").astype("Int64")
    return coll


@dataclass
class Matched:
    """Collectives matched across ranks.

    `matched` columns: group, index (the instance key within the group), rank, op, nelems,
    dtype, ts, dur, end (us, that rank's own clock), step, wait_us (dur - min dur of the
    instance: time this rank waited for the last arrival), transfer_us (min dur of the
    instance: the transfer itself), gap_us (second-smallest dur - smallest: how late the last
    arrival was behind the second-last, same on every row of the instance), last_by_duration
    (this rank's instance is the strictly shortest: it arrived last), consistent (op, size and
    dtype agree on every rank; inconsistent instances are kept for inspection but left out of
    every figure). `mismatches`: disagreements and unequal counts, a finding each. `notes`: what
    could not be matched and why."""

    matched: pd.DataFrame
    mismatches: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)

    @property
    def usable(self) -> pd.DataFrame:
        """Rows of consistent instances: what the figures are computed from."""
        if self.matched.empty:
            return self.matched
        return self.matched[self.matched["consistent"].astype(bool)]


def empty_matched() -> pd.DataFrame:
    frame = _empty_collectives().drop(columns=["tid", "by_seq"])
    frame.insert(2, "rank", pd.Series(dtype=np.int64))
    rest = empty_table(["wait_us", "transfer_us", "gap_us"])
    flags = empty_table(["last_by_duration", "consistent"], default=bool)
    return pd.concat([frame, rest, flags], axis=1)[MATCHED_COLUMNS]


def match_collectives(tables: Mapping[int, pd.DataFrame]) -> Matched:
    """Pair the k-th collective of each process group across ranks (see `collective_table` for
    the key). Groups seen on one rank only cannot be matched (noted: a single-rank trace gives
    communication and overlap figures but no stall). With unequal counts only keys present on
    every rank are matched (the common prefix when keyed by order); without `seq`, ranks whose
    capture began at different steps are first trimmed to the first common step."""
    notes: list[Finding] = []
    mismatches: list[Finding] = []
    frames = [t.assign(rank=int(r)) for r, t in sorted(tables.items()) if not t.empty]
    if not frames:
        notes.append(note("trace.no_collectives_anywhere"))
        return Matched(empty_matched(), mismatches, notes)
    allc = pd.concat(frames, ignore_index=True)
    p2p = allc["op"].isin(P2P_OPS)
    if p2p.any():
        notes.append(note("trace.p2p_unmatched", count=int(p2p.sum())))
        allc = allc[~p2p]
    out: list[pd.DataFrame] = []
    for group, g in allc.groupby("group", sort=True):
        ranks = sorted(int(r) for r in g["rank"].unique())
        if len(ranks) < 2:
            notes.append(note("trace.group_one_rank", group=str(group), rank=ranks[0]))
            continue
        m = _match_group(str(group), g, mismatches, notes)
        if not m.empty:
            out.append(m)
    matched = pd.concat(out, ignore_index=True)[MATCHED_COLUMNS] if out else empty_matched()
    return Matched(matched, mismatches, notes)


def _match_group(
    group: str, g: pd.DataFrame, mismatches: list[Finding], notes: list[Finding]
) -> pd.DataFrame:
    by_seq = bool(g["by_seq"].all())
    if not by_seq:
        if g["by_seq"].any():
            notes.append(note("trace.seq_partial", group=group))
        if g["step"].notna().all():
            first = g.groupby("rank")["step"].min()
            common = int(first.max())
            if int(first.min()) != common:
                notes.append(note("trace.captures_start_apart", group=group, step=common))
                g = g[g["step"] >= common]
        g = g.sort_values(["rank", "ts", "tid", "nelems"], kind="stable")
        g = g.assign(index=g.groupby("rank").cumcount().astype(np.int64))
        if g["rank"].nunique() < 2:
            notes.append(note("trace.group_too_few", group=group))
            return g.iloc[0:0]
    counts = g.groupby("rank")["index"].nunique()
    keys_per_rank = g.groupby("rank")["index"].agg(lambda s: set(s.tolist()))
    common_keys: set[int] = set.intersection(*keys_per_rank.tolist())
    if counts.nunique() > 1:
        figures = {
            "group": group,
            "counts": [[int(r), int(n)] for r, n in counts.items()],
            "matched": len(common_keys),
            "by_seq": by_seq,
        }
        mismatches.append(Finding(code="trace.unequal_counts", figures=figures))
    elif any(len(k) != len(common_keys) for k in keys_per_rank):
        spans = [[int(r), min(k), max(k)] for r, k in keys_per_rank.items() if k]
        figures = {"spans": spans, "matched": len(common_keys), "by_seq": by_seq}
        notes.append(note("trace.different_collectives", group=group, **figures))
    m = g[g["index"].isin(common_keys)].copy()
    if m.empty:
        return m
    m = m.drop_duplicates(["rank", "index"])
    _check_consistency(group, m, mismatches)
    m = m.sort_values(["index", "dur", "rank"], kind="stable")
    pos = m.groupby("index").cumcount()
    mins = m.groupby("index")["dur"].transform("min")
    second = m["dur"].where(pos == 1).groupby(m["index"]).transform("max")
    m["wait_us"] = m["dur"] - mins
    m["transfer_us"] = mins
    m["gap_us"] = (second - mins).fillna(0.0)
    m["last_by_duration"] = (pos == 0) & (m["gap_us"] > 0)
    return m.sort_values(["index", "rank"]).reset_index(drop=True)


def _check_consistency(group: str, m: pd.DataFrame, mismatches: list[Finding]) -> None:
    """Mark instances whose op, size (for ops that need equal sizes) or dtype differ across
    ranks; quote a few examples."""
    by = m.groupby("index")
    bad_op = by["op"].nunique() > 1
    strict = m[m["op"].isin(SIZE_STRICT_OPS)]
    bad_size = strict.groupby("index")["nelems"].nunique().reindex(bad_op.index, fill_value=0) > 1
    bad_dtype = by["dtype"].nunique() > 1
    bad = bad_op | bad_size | bad_dtype
    m["consistent"] = ~m["index"].map(bad).astype(bool)
    if not bad.any():
        return
    examples = []
    for idx in bad[bad].index[:MAX_EXAMPLES]:
        rows = m[m["index"] == idx].sort_values("rank")
        ranks = [[int(r.rank), r.op, _elems(r.nelems), r.dtype or None] for r in rows.itertuples()]
        examples.append({"index": int(idx), "ranks": ranks})
    kinds = [n for n, f in (("op", bad_op), ("size", bad_size), ("dtype", bad_dtype)) if f.any()]
    figures = {"group": group, "count": int(bad.sum()), "kinds": kinds, "examples": examples}
    mismatches.append(Finding(code="trace.disagreeing_collectives", figures=figures))


def _elems(n: Any) -> int | None:
    return None if n is None or pd.isna(n) else int(n)


@dataclass
class SyncStall:
    """Time ranks spent waiting for peers inside collectives.

    `table` columns: rank, step, step_us, stall_us (union over the step's matched collectives
    of [ts, ts + wait_us): the waiting happens before the transfer, and concurrent collectives
    on two gloo threads must not count twice), stall_pct (stall_us / step_us x 100).
    `overall_pct`: sum of stall over sum of step time, over the ranks and full steps that took
    part in matched collectives; None when nothing was matched. Waits hidden behind compute
    are included here; `idle.idle_taxonomy` gives the exposed part."""

    table: pd.DataFrame
    overall_pct: float | None
    notes: list[Finding] = field(default_factory=list)


def stack_steps(steps_by_rank: Mapping[int, pd.DataFrame]) -> pd.DataFrame:
    """Full steps of every rank as one table: rank, step, step_us. Accepts step tables
    (`dur`, `partial`) or breakdown tables (`step_us`)."""
    parts = []
    for rank, st in sorted(steps_by_rank.items()):
        if st.empty:
            continue
        s = st[~st["partial"].astype(bool)] if "partial" in st.columns else st
        dur = s["step_us"] if "step_us" in s.columns else s["dur"]
        step, step_us = s["step"].to_numpy(dtype=np.int64), dur.to_numpy(dtype=np.float64)
        parts.append(pd.DataFrame({"rank": int(rank), "step": step, "step_us": step_us}))
    if not parts:
        return empty_table(["rank", "step", "step_us"], rank=np.int64, step=np.int64)
    return pd.concat(parts, ignore_index=True)


def sync_stall(
    matched: Matched,
    steps_by_rank: Mapping[int, pd.DataFrame],
    exposed_by_rank: Mapping[int, Intervals] | None = None,
) -> SyncStall:
    """Per rank and full step: how long the rank waited for peers (see `SyncStall`). With
    `exposed_by_rank` (`idle.IdleBase.exposed`), only waiting with nothing else to do counts."""
    notes: list[Finding] = []
    steps = stack_steps(steps_by_rank)
    use = matched.usable
    if use.empty:
        notes.append(note("trace.no_matched_collectives"))
        table = steps.assign(stall_us=np.nan, stall_pct=np.nan).iloc[0:0]
        return SyncStall(table, None, notes)
    use = use[use["step"].notna()]
    waits = use.assign(
        rank=use["rank"].astype(np.int64),
        step=use["step"].astype(np.int64),
        w_end=use["ts"] + use["wait_us"],
    )
    if exposed_by_rank is not None:
        waits = _cut_to(waits, exposed_by_rank)
    stall = grouped_union_length(waits, ["rank", "step"], "ts", "w_end").rename("stall_us")
    ranks = sorted(int(r) for r in matched.usable["rank"].unique())
    table = steps[steps["rank"].isin(ranks)].merge(
        stall.reset_index(), on=["rank", "step"], how="left"
    )
    table["stall_us"] = table["stall_us"].fillna(0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        table["stall_pct"] = 100.0 * table["stall_us"] / table["step_us"]
    total = float(table["step_us"].sum())
    overall = 100.0 * float(table["stall_us"].sum()) / total if total > 0 else None
    if total <= 0:
        notes.append(note("trace.no_full_steps"))
    return SyncStall(table.reset_index(drop=True), overall, notes)


def _cut_to(waits: pd.DataFrame, exposed: Mapping[int, Intervals]) -> pd.DataFrame:
    """Cut each [ts, w_end) to its rank's exposed-communication intervals."""
    parts = []
    for rank, sub in waits.groupby("rank", sort=False):
        iv = exposed.get(int(rank))
        if iv is None:
            parts.append(sub)
            continue
        lo, hi, owner = clip_pieces(iv, sub["ts"].to_numpy(np.float64), sub["w_end"].to_numpy())
        parts.append(sub.iloc[owner].assign(ts=lo, w_end=hi))
    return pd.concat(parts, ignore_index=True) if parts else waits.iloc[0:0]
