"""Where each rank's step time went, with "waiting for peers" as its own category (HTA counts
the time a rank sits in an NCCL kernel for a late peer as busy communication). Each instant of
the step window is attributed once, by priority

    compute > memory > waiting_for_peers > transfer > data > host_wait > other_idle

so the categories (us per rank and step) are never negative and add up to the step time by
construction: the partition the step model (`diagnosis/traces.py`) is built from, as
docs/profiling.md, "How each figure is computed", gives it. Compute first (like HTA:
communication hidden behind compute costs nothing). Exposed time inside any collective's
[ts, ts + wait_us) is waiting for peers even while a concurrent collective transfers (gloo runs
two at once): the rank cannot finish the step before the late peer arrives, so the wait is what
holds it. Idle time is host wait when the device work that ended the gap was launched after the
gap began (HTA's rule, GPU only: a CPU rank has no launch queue), else other idle.

Per-rank reducer `idle_reducer` keeps only per-step totals and the exposed communication
intervals (about one per collective); `idle_taxonomy` adds the cross-rank waits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.profile import note
from torchscale.offline.analysis.trace.breakdown import activity, data_ranges
from torchscale.offline.analysis.trace.collective_matching import Matched
from torchscale.offline.analysis.trace.intervals import (
    EMPTY,
    Intervals,
    intersect,
    merge,
    subtract,
    union,
)
from torchscale.offline.analysis.trace.steps import empty_table, full_steps, launch_times

_OWN = ["step_us", "compute_us", "memory_us"]
_IDLE = ["data_us", "host_wait_us", "other_idle_us"]
BASE_COLUMNS = ["step", "start", "end", *_OWN, "comm_exposed_us", *_IDLE]
IDLE_COLUMNS = ["rank", "step", *_OWN, "transfer_us", "waiting_for_peers_us", *_IDLE]
CATEGORIES = IDLE_COLUMNS[3:]


@dataclass
class IdleBase:
    """Per-rank part of the idle taxonomy.

    `per_step` columns: step, start, end, step_us, compute_us, memory_us (memory not under
    compute), comm_exposed_us (collectives under neither), data_us (data phase under none of
    these), host_wait_us, other_idle_us.
    `exposed`: merged exposed-communication intervals inside the full steps (own clock), what
    the cross-rank step splits into transfer and waiting. `device`: GPU rank."""

    per_step: pd.DataFrame
    exposed: Intervals
    device: bool
    notes: list[Finding] = field(default_factory=list)


def idle_reducer(events: pd.DataFrame, steps: pd.DataFrame) -> IdleBase:
    """Reduce one rank's events to an `IdleBase`."""
    steps = full_steps(steps)
    notes: list[Finding] = []
    act = activity(events)
    lo = steps["start"].to_numpy(np.float64)
    hi = steps["end"].to_numpy(np.float64)
    cm = union(act.compute, act.memory)
    busy = union(cm, act.comm)
    exposed = subtract(act.comm, cm)
    data = subtract(data_ranges(events), busy)
    step_us = hi - lo
    data_us = data.within(lo, hi)
    idle = np.maximum(step_us - busy.within(lo, hi) - data_us, 0.0)
    if act.device:
        host = subtract(_host_wait(events, busy), data).within(lo, hi)
    else:
        host = np.zeros(lo.size)
        if lo.size:
            notes.append(note("trace.cpu_no_launch_queue"))
    window = merge(lo, hi)
    per_step = pd.DataFrame(
        {
            "step": steps["step"].to_numpy(dtype=np.int64),
            "start": lo,
            "end": hi,
            "step_us": step_us,
            "compute_us": act.compute.within(lo, hi),
            "memory_us": subtract(act.memory, act.compute).within(lo, hi),
            "comm_exposed_us": exposed.within(lo, hi),
            "data_us": data_us,
            "host_wait_us": np.minimum(host, idle),
            "other_idle_us": np.maximum(idle - np.minimum(host, idle), 0.0),
        }
    )
    return IdleBase(per_step[BASE_COLUMNS], intersect(exposed, window), act.device, notes)


def _host_wait(events: pd.DataFrame, busy: Intervals) -> Intervals:
    """Gaps in device activity that end with work launched after the gap began."""
    if not busy.count:
        return EMPTY
    dev = events[
        events["kind"].isin(["kernel", "memory", "collective"]) & events["device_side"].astype(bool)
    ]
    if dev.empty:
        return EMPTY
    launch = launch_times(events, dev).to_numpy(dtype=np.float64)
    ts = dev["ts"].to_numpy(dtype=np.float64)
    # the row that opens each busy interval starts exactly at its start; take the latest launch
    # among rows starting there (the one the device actually waited for)
    frame = pd.DataFrame({"ts": ts, "launch": launch}).groupby("ts")["launch"].max()
    opening = frame.reindex(busy.starts).to_numpy(dtype=np.float64)
    gap_lo = np.concatenate(([-np.inf], busy.ends[:-1]))
    host = ~np.isnan(opening) & (opening >= gap_lo)
    # before the first device work the device waited for the host since the trace began
    gap_lo[0] = min(float(events["ts"].min()), float(busy.starts[0]))
    return merge(gap_lo[host], busy.starts[host])


def idle_taxonomy(bases: Mapping[int, IdleBase], matched: Matched | None) -> pd.DataFrame:
    """Per rank and full step. Columns: rank, step, step_us, compute_us, memory_us,
    transfer_us, waiting_for_peers_us, data_us, host_wait_us, other_idle_us (us; the
    categories add up to step_us). Without matched collectives all exposed communication is
    transfer."""
    parts = []
    use = matched.usable if matched is not None else pd.DataFrame()
    for rank, base in sorted(bases.items()):
        ps = base.per_step
        if ps.empty:
            continue
        lo = ps["start"].to_numpy(np.float64)
        hi = ps["end"].to_numpy(np.float64)
        waiting = np.zeros(lo.size)
        mine = use[use["rank"] == rank] if not use.empty else use
        if not mine.empty and base.exposed.count:
            ts = mine["ts"].to_numpy(np.float64)
            w_end = ts + mine["wait_us"].to_numpy(np.float64)
            waiting = intersect(base.exposed, merge(ts, w_end)).within(lo, hi)
        exposed = ps["comm_exposed_us"].to_numpy(np.float64)
        waiting = np.minimum(waiting, exposed)
        copied = {c: ps[c].to_numpy(np.float64) for c in (*_OWN, *_IDLE)}
        table = pd.DataFrame({"rank": int(rank), "step": ps["step"].to_numpy(dtype=np.int64)})
        parts.append(
            table.assign(**copied, transfer_us=exposed - waiting, waiting_for_peers_us=waiting)
        )
    if not parts:
        return empty_table(IDLE_COLUMNS, rank=np.int64, step=np.int64)
    return pd.concat(parts, ignore_index=True)[IDLE_COLUMNS]
