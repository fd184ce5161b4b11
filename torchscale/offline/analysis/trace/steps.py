"""Step boundaries and per-step phase times of one rank (per-rank reducers). Why phase *busy*
time and not phase duration: under DDP the backward range of a fast rank includes its wait for
the slow rank's gradients (the main thread is blocked, nothing is recorded), so raw phase
durations come out equal on every rank and hide the straggler; the time spent working does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.step_phases import INJECTED_DELAY_RANGE
from torchscale.contracts.wording.profile import note
from torchscale.offline.analysis.trace.intervals import (
    Intervals,
    from_frame,
    grouped_merge,
    intersect,
    merge,
    slices_union,
    subtract,
    union,
    window_index,
)

PARTIAL_FRACTION = 0.5  # a step shorter than this x the median step was cut by the capture
STEP_COLUMNS = ["step", "start", "end", "dur", "partial"]
PHASE_COLUMNS = ["step", "phase", "dur_us", "busy_us", "has_comm", "effective_us"]


@dataclass
class Steps:
    """Steps of one rank.

    `table` columns: step (int, ProfilerStep number), start, end, dur (us, own clock),
    partial (bool: shorter than PARTIAL_FRACTION x the median, cut by the end of the capture;
    excluded from every per-step figure). `notes`: what was odd, one line each."""

    table: pd.DataFrame
    notes: list[Finding] = field(default_factory=list)

    @property
    def full(self) -> pd.DataFrame:
        """Steps that count in figures (partial ones dropped)."""
        return full_steps(self.table)


def full_steps(steps: pd.DataFrame) -> pd.DataFrame:
    """Drop partial steps when the table says which they are; sorted by start."""
    out = steps
    if "partial" in out.columns:
        out = out[~out["partial"].astype(bool)]
    return out.sort_values("start").reset_index(drop=True)


def is_device_trace(events: pd.DataFrame) -> bool:
    """A GPU (or other accelerator) rank: some device-side rows are present."""
    return bool(not events.empty and events["device_side"].astype(bool).any())


def empty_table(columns: Sequence[str], default: Any = np.float64, **dtypes: Any) -> pd.DataFrame:
    """A table with no rows, each column of `default` dtype unless `dtypes` names it: what an
    analysis returns for nothing, so concatenating and comparing keeps the dtypes."""
    return pd.DataFrame({c: pd.Series(dtype=dtypes.get(c, default)) for c in columns})


def step_table(events: pd.DataFrame) -> Steps:
    """Step windows from kind == "step" rows (ProfilerStep#N, nsys NVTX step ranges).

    Without any, one pseudo-step 0 spans the whole trace (noted), so that single-window traces
    still get a breakdown. The same step number twice (two tools marking it) keeps the longest
    range. A step shorter than half the median is flagged partial: the last step is often cut
    by the end of the capture and would drag every per-step mean down."""
    notes: list[Finding] = []
    if events.empty:
        return Steps(
            empty_table(STEP_COLUMNS, step=np.int64, partial=bool), [note("trace.no_events")]
        )
    rows = events[events["kind"] == "step"]
    if rows.empty:
        ts = events["ts"].to_numpy(dtype=np.float64)
        end = ts + events["dur"].to_numpy(dtype=np.float64)
        start, stop = float(np.nanmin(ts)), float(np.nanmax(end))
        notes.append(note("trace.pseudo_step"))
        table = pd.DataFrame({"step": [0], "start": [start], "end": [stop], "dur": [stop - start]})
        table["partial"] = False
        return Steps(table.astype({"step": np.int64}), notes)
    table = pd.DataFrame(
        {
            "step": rows["step"].astype("Int64").to_numpy(),
            "start": rows["ts"].to_numpy(dtype=np.float64),
            "dur": rows["dur"].to_numpy(dtype=np.float64),
        }
    ).sort_values("start", kind="stable")
    if table["step"].isna().any():
        notes.append(note("trace.steps_unnumbered"))
        table["step"] = np.arange(len(table))
    table["step"] = table["step"].astype(np.int64)
    before = len(table)
    table = table.sort_values(["step", "dur"], ascending=[True, False]).drop_duplicates("step")
    if len(table) < before:
        notes.append(note("trace.duplicate_steps", count=before - len(table)))
    table = table.sort_values("start").reset_index(drop=True)
    table["end"] = table["start"] + table["dur"]
    median = float(table["dur"].median())
    table["partial"] = table["dur"] < PARTIAL_FRACTION * median
    for _, row in table[table["partial"]].iterrows():
        dur, step = float(row["dur"]), int(row["step"])
        partial = {"step_us": dur, "median_us": median, "fraction": PARTIAL_FRACTION}
        notes.append(note("trace.partial_step", step=step, **partial))
    return Steps(table[STEP_COLUMNS], notes)


def launch_times(events: pd.DataFrame, rows: pd.DataFrame) -> pd.Series:
    """Host start time of the runtime call (cudaLaunchKernel, ...) that launched each device row,
    joined on `correlation`; NaN where there is none. Indexed like `rows`."""
    runtime = events[(events["kind"] == "runtime") & events["correlation"].notna()]
    if runtime.empty or rows.empty:
        return pd.Series(np.nan, index=rows.index, dtype=np.float64)
    first = runtime.groupby("correlation", sort=False)["ts"].min()
    return rows["correlation"].map(first).astype(np.float64)


def _empty_phases() -> pd.DataFrame:
    return empty_table(PHASE_COLUMNS, step=np.int64, phase=object, has_comm=bool)


def phase_table(events: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Per step and phase: how long the phase lasted and how long the rank *worked* in it.

    Columns: step, phase (data|forward|backward|optimizer), dur_us (union of the phase's ranges
    in the step, clipped to the step window), busy_us, has_comm (a collective or collective call
    starts inside the phase), effective_us (the figure straggler attribution compares).

    busy_us: CPU ranks: union of the cpu_op rows nested in the phase on the same thread, less
    its waits for collectives (`cpu_busy_by_tid`; a `torchscale:injected_delay` range is a
    cpu_op and counts). GPU ranks: union of the compute kernels whose launching runtime event
    (same correlation) lies inside the phase range, on any host thread (autograd runs backward
    on its own thread), or the union of the host's cpu_op rows in the phase range on any
    thread, whichever is longer (host-late or device-slow).

    effective_us: busy_us when the phase holds communication (its duration may include waiting
    for peers, which is not this rank's cost); otherwise the phase cannot wait for peers, so
    max(dur_us, busy_us): a data phase blocked on DataLoader workers records no ops, but its
    whole duration is this rank's own delay; on GPU a forward pass may be short on the host and
    long on the device."""
    steps = full_steps(steps)
    if events.empty or steps.empty:
        return _empty_phases()
    ph = events[(events["kind"] == "phase") & events["phase"].notna()]
    if ph.empty:
        return _empty_phases()
    starts = steps["start"].to_numpy(dtype=np.float64)
    ends = steps["end"].to_numpy(dtype=np.float64)
    k = window_index(starts, ends, ph["ts"].to_numpy(dtype=np.float64))
    inside = k >= 0
    if not inside.any():
        return _empty_phases()
    ph = ph[inside]
    kk = k[inside]
    lo = np.maximum(ph["ts"].to_numpy(dtype=np.float64), starts[kk])
    hi = np.minimum(ph["ts"].to_numpy(dtype=np.float64) + ph["dur"].to_numpy(np.float64), ends[kk])
    frame = pd.DataFrame(
        {
            "k": kk,
            "step": steps["step"].to_numpy()[kk],
            "phase": ph["phase"].astype(str).to_numpy(),
            "tid": ph["tid"].to_numpy(dtype=np.int64),
            "lo": lo,
            "hi": hi,
        }
    )
    device = is_device_trace(events)
    # a phase holds communication when a collective starts inside it (on any thread: GPU
    # backward launches them from autograd's thread); one still running from before it does
    # not (gloo records an all-reduce past the backward that waited for it, into the next
    # data phase, which would then count only its ops and lose a slow input's whole wait)
    comm = events["kind"].isin(["collective", "collective_call"])
    comm_starts = np.sort(events.loc[comm, "ts"].to_numpy(dtype=np.float64))
    # union of each phase's ranges in the step (nested or repeated ranges count once)
    spans = grouped_merge(frame, ["step", "phase"], "lo", "hi")
    lo_s = spans["lo"].to_numpy(np.float64)
    hi_s = spans["hi"].to_numpy(np.float64)
    started = np.searchsorted(comm_starts, hi_s) - np.searchsorted(comm_starts, lo_s)
    spans = spans.assign(dur_us=hi_s - lo_s, comm=started > 0)
    out = spans.groupby(["step", "phase"], sort=True).agg(
        dur_us=("dur_us", "sum"), has_comm=("comm", "any")
    )
    if device:
        gid = out.index.get_indexer(pd.MultiIndex.from_frame(spans[["step", "phase"]]))
        kernels = _kernel_busy(events, lo_s, hi_s, gid.astype(np.int64), len(out))
        # the host's own work in the phase, on any thread (autograd's included): a rank can be
        # late because its host issues the phase late (a slow data step, an injected delay,
        # Python overhead) while its kernels take as long as everyone's
        host_ops = union(*cpu_busy_by_tid(events).values())
        host = np.bincount(gid, weights=host_ops.within(lo_s, hi_s), minlength=len(out))
        out["busy_us"] = np.maximum(kernels, host[: len(out)])
    else:
        per_tid = grouped_merge(frame, ["step", "phase", "tid"], "lo", "hi")
        busy = np.zeros(len(per_tid))
        tids = per_tid["tid"].to_numpy(dtype=np.int64)
        lo_t = per_tid["lo"].to_numpy(np.float64)
        hi_t = per_tid["hi"].to_numpy(np.float64)
        for tid, ops in cpu_busy_by_tid(events).items():
            mask = tids == tid
            if mask.any():
                busy[mask] = ops.within(lo_t[mask], hi_t[mask])
        busy_sum = per_tid.assign(busy=busy).groupby(["step", "phase"], sort=True)["busy"].sum()
        out["busy_us"] = busy_sum.reindex(out.index, fill_value=0.0)
    out["has_comm"] = out["has_comm"].astype(bool)
    out["effective_us"] = np.where(
        out["has_comm"], out["busy_us"], np.maximum(out["dur_us"], out["busy_us"])
    )
    out = out.reset_index()
    out["phase"] = out["phase"].astype(object)
    return out[PHASE_COLUMNS].astype({"step": np.int64})


def cpu_busy_by_tid(events: pd.DataFrame) -> dict[int, Intervals]:
    """Per host thread: the union of its cpu_op rows less the time it was blocked in a wait
    for a collective (a `comm_wait` row) or inside a collective call (`c10d::allreduce_`,
    `record_param_comms`: enqueueing, and on gloo CPU ranks sometimes blocking for the whole
    all-reduce inside DDP's last AccumulateGrad node). The subtraction matters because a wait
    is nested in ops that enclose it (a DTensor op, an autograd node), whose span alone would
    count the blocked thread as computing. Threads are kept apart: one thread's wait says
    nothing about what another thread did meanwhile."""
    ops = events[events["kind"] == "cpu_op"]
    ops = ops[~_loader_range(ops["name"])]
    blocking = events[events["kind"].isin(["comm_wait", "collective_call"])]
    waits = {int(tid): from_frame(g) for tid, g in blocking.groupby("tid", sort=False)}
    # an injected delay in the data phase stands for a slow loader: its wait, not work
    stalls = _loader_stalls(events, ops)
    calls = events[events["kind"] == "collective_call"]
    out: dict[int, Intervals] = {}
    for tid, group in ops.groupby("tid", sort=False):
        busy = from_frame(group)
        for blocked in (waits.get(int(tid)), stalls.get(int(tid))):
            if blocked is not None:
                busy = subtract(busy, blocked)
        held = launch_holds(group, calls[calls["tid"] == tid])
        out[int(tid)] = subtract(busy, held) if held is not None else busy
    return out


def _loader_stalls(events: pd.DataFrame, ops: pd.DataFrame) -> dict[int, Intervals]:
    """Per thread, the injected delays (`--inject-delay R:data:MS`) inside its data phase: a
    known slow input, to be read as one, not as compute (elsewhere a delay is work)."""
    delays = ops[ops["name"].astype(str) == INJECTED_DELAY_RANGE]
    if delays.empty:
        return {}
    data = events[(events["kind"] == "phase") & (events["phase"] == "data")]
    out = {}
    for tid, group in delays.groupby("tid", sort=False):
        phase = data[data["tid"] == tid]
        if not phase.empty:
            out[int(tid)] = intersect(from_frame(group), from_frame(phase))
    return out


LOADER_RANGE = "enumerate(DataLoader)#"  # PyTorch's range around a DataLoader's __next__


def _loader_range(names: pd.Series) -> np.ndarray:
    """The rows that are PyTorch's DataLoader range: a plain host op where torchscale's own
    data range stands (traces/kineto.py), yet no work of its own. It spans the whole fetch,
    a loader's sleeps and waits on its workers included: counted, it made a slow loader's wait
    compute on a CPU rank and left its data phase at zero. The ops nested in it still count."""
    if isinstance(names.dtype, pd.CategoricalDtype):
        cats = names.cat.categories
        hit = np.array([str(c).startswith(LOADER_RANGE) for c in cats], dtype=bool)
        codes = names.cat.codes.to_numpy()
        return np.where(codes >= 0, hit[np.maximum(codes, 0)], False) if len(cats) else hit[:0]
    found: np.ndarray = names.astype(str).str.startswith(LOADER_RANGE).to_numpy(dtype=bool)
    return found


def launch_holds(ops: pd.DataFrame, calls: pd.DataFrame) -> Intervals | None:
    """On one thread, the time the op that launches a collective spent in none of its own
    child ops: a communication hook or callback holding the launch (its self time), which is
    when the collective starts, not the rank's work. None without a collective call.
    The launching op is the innermost op enclosing the call (an outer one, a whole-step
    annotation, would count every gap of the step); its children are the ops nested in it (the
    call's own span is left to the blocked-wait subtraction); a launching op with no op nested
    in it is a leaf, all work."""
    if calls.empty or ops.empty:
        return None
    order = np.argsort(ops["ts"].to_numpy(np.float64), kind="stable")
    starts = ops["ts"].to_numpy(np.float64)[order]
    ends = starts + ops["dur"].to_numpy(np.float64)[order]
    times = np.sort(calls["ts"].to_numpy(np.float64))
    # only an op holding some call can enclose one: a few ancestors per call, found without
    # pairing every call with every op (a GPU trace has thousands of calls, millions of ops)
    holding = np.flatnonzero(
        np.searchsorted(times, ends, side="left") > np.searchsorted(times, starts, side="left")
    )
    outers = set()
    for ts in times:
        enclosing = holding[(starts[holding] <= ts) & (ends[holding] > ts)]
        if enclosing.size:
            outers.add(int(enclosing[np.argmin(ends[enclosing] - starts[enclosing])]))
    holds = []
    for outer in sorted(outers):
        lo, hi = starts[outer], ends[outer]
        first = int(np.searchsorted(starts, lo, side="left"))
        last = int(np.searchsorted(starts, hi, side="right"))
        within = np.arange(first, last)
        within = within[(ends[within] <= hi) & (within != outer)]
        if within.size == 0:  # a leaf op: its time is its work, whatever it launches
            continue
        span = merge(np.array([lo]), np.array([hi]))
        holds.append(subtract(span, merge(starts[within], ends[within])))
    return union(*holds) if holds else None


def _kernel_busy(
    events: pd.DataFrame, lo: np.ndarray, hi: np.ndarray, gid: np.ndarray, groups: int
) -> np.ndarray:
    """Per group: union of the compute kernels whose launch lies in one of the group's ranges
    [lo, hi) (each range selects a contiguous slice of the launch-sorted kernels)."""
    kern = events[events["kind"] == "kernel"]
    launch = launch_times(events, kern).to_numpy(dtype=np.float64)
    ok = ~np.isnan(launch)
    if not ok.any() or lo.size == 0:
        return np.zeros(groups)
    ts = kern["ts"].to_numpy(dtype=np.float64)[ok]
    end = ts + kern["dur"].to_numpy(dtype=np.float64)[ok]
    launch = launch[ok]
    order = np.argsort(launch, kind="stable")
    launch, ts, end = launch[order], ts[order], end[order]
    first = np.searchsorted(launch, lo, side="left").astype(np.int64)
    stop = np.searchsorted(launch, hi, side="left").astype(np.int64)
    out = slices_union(ts, end, first, stop, gid)
    return np.pad(out, (0, max(0, groups - out.size)))
