"""Per-step time breakdown of one rank: compute, communication, overlap, idle, data wait.

Per-rank reducer only (no cross-rank input). All intervals are merged with numpy (sort +
cumulative max) and measured inside each step window with cumulative sums, so a million events
cost a few sorts, not a Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from torchscale.offline.analysis.trace.intervals import (
    EMPTY,
    Intervals,
    from_frame,
    intersect,
    subtract,
    union,
)
from torchscale.offline.analysis.trace.steps import (
    cpu_busy_by_tid,
    empty_table,
    full_steps,
    is_device_trace,
)

_COMM_COLUMNS = ["comm_us", "exposed_comm_us", "overlap_pct"]
BREAKDOWN_COLUMNS = ["step", "step_us", "compute_us", *_COMM_COLUMNS, "idle_us", "data_wait_us"]


@dataclass(frozen=True)
class Activity:
    """What a rank's timeline was doing, as merged interval sets on its own clock."""

    compute: Intervals
    comm: Intervals
    memory: Intervals
    device: bool  # True: device-side (GPU) timeline; False: CPU rank


def activity(events: pd.DataFrame) -> Activity:
    """Classify a rank's rows into compute, communication and memory time.

    GPU ranks: compute = "kernel" rows (device side), comm = "collective" rows (communication
    kernels), memory = memcpy/memset. CPU ranks: compute = cpu_op rows on threads that run no
    collective (gloo runs its ops on its own runloop threads, whose helper ops are not model
    compute), less each thread's own waits for collectives (`steps.cpu_busy_by_tid`), comm =
    the gloo ops; no memory rows."""
    if events.empty:
        return Activity(EMPTY, EMPTY, EMPTY, device=False)
    kind = events["kind"]
    device = is_device_trace(events)
    comm = from_frame(events[kind == "collective"])
    if device:
        compute = from_frame(events[(kind == "kernel") & events["device_side"].astype(bool)])
        memory = from_frame(events[kind == "memory"])
    else:
        coll_tids = set(events.loc[kind == "collective", "tid"].unique().tolist())
        busy = cpu_busy_by_tid(events)
        compute = union(*(iv for tid, iv in busy.items() if tid not in coll_tids))
        memory = EMPTY
    return Activity(compute=compute, comm=comm, memory=memory, device=device)


def data_ranges(events: pd.DataFrame) -> Intervals:
    """Union of the data-phase ranges of a rank (its own clock)."""
    if events.empty:
        return EMPTY
    return from_frame(events[(events["kind"] == "phase") & (events["phase"] == "data")])


def rank_breakdown(events: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Per full step of one rank (partial steps dropped), in us unless named: step, step_us,
    compute_us, comm_us, exposed_comm_us (no compute running), overlap_pct (HTA's, NaN without
    communication), idle_us (covered by none of compute, comm, memory) and data_wait_us (the
    part of idle_us in data phases: `idle.idle_reducer`'s `data_us`); docs/profiling.md,
    "Breakdown per rank and step".

    Every interval is clipped to the step window. Kernels queued in one step may run in the
    next step's host window; the totals over steps are exact, the split between neighbouring
    steps is only as good as the host/device lag is short."""
    steps = full_steps(steps)
    if steps.empty:
        return empty_table(BREAKDOWN_COLUMNS, step=np.int64)
    act = activity(events)
    lo = steps["start"].to_numpy(np.float64)
    hi = steps["end"].to_numpy(np.float64)
    step_us = hi - lo
    compute = act.compute.within(lo, hi)
    comm = act.comm.within(lo, hi)
    overlap = intersect(act.compute, act.comm).within(lo, hi)
    busy = union(act.compute, act.comm, act.memory)
    with np.errstate(invalid="ignore", divide="ignore"):
        overlap_pct = np.where(comm > 0, 100.0 * overlap / comm, np.nan)
    return pd.DataFrame(
        {
            "step": steps["step"].to_numpy(dtype=np.int64),
            "step_us": step_us,
            "compute_us": compute,
            "comm_us": comm,
            "exposed_comm_us": comm - overlap,
            "overlap_pct": overlap_pct,
            "idle_us": np.maximum(step_us - busy.within(lo, hi), 0.0),
            "data_wait_us": subtract(data_ranges(events), busy).within(lo, hi),
        }
    )[BREAKDOWN_COLUMNS]


def overlap_pct(compute: Intervals, comm: Intervals) -> float:
    """HTA's comm/comp overlap over whole sets: |compute and comm| / |comm| x 100 (NaN when
    there is no communication)."""
    total = comm.total()
    if total <= 0:
        return float("nan")
    return 100.0 * intersect(compute, comm).total() / total
