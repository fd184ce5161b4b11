"""Our overlap and idle figures computed over the kernel set HTA uses, to compare like with like.

Holistic Trace Analysis (0.5.0) computes comm/compute overlap and its temporal breakdown over
the whole trace of each rank, not per step, and first drops every GPU kernel whose launch did
not start before the last `ProfilerStep` began (the last step is treated as partial). Our
`profile analyze` clips everything to full `ProfilerStep` windows instead. Computing our own
classification over HTA's kernel set separates the two sources of difference: scope (which
kernels count) and classification (which kernels are communication or compute).
Used by `benchmarks/trace_analysis.py --hta`; not part of the package.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from torchscale.offline.analysis.trace.breakdown import activity, overlap_pct
from torchscale.offline.analysis.trace.intervals import from_frame, union
from torchscale.offline.traces.discover import read_rank_traces


def _launched_before_last_step(events: pd.DataFrame) -> pd.DataFrame:
    """Device rows whose host launch began before the last ProfilerStep started (HTA's filter;
    it applies only when a trace has two or more steps)."""
    steps = events[events["kind"] == "step"]
    if len(steps) < 2:
        return events
    last_start = float(steps["ts"].max())
    host = events[~events["device_side"].astype(bool) & events["correlation"].notna()]
    early = set(host.loc[host["ts"] < last_start, "correlation"].astype("int64"))
    device = events["device_side"].astype(bool)
    keep = ~device | events["correlation"].isin(early).fillna(False).astype(bool)
    return events[keep.to_numpy()]


def _figures(events: pd.DataFrame) -> dict[str, float]:
    act = activity(events)
    busy = union(act.compute, act.comm, act.memory)
    span = float(busy.ends[-1] - busy.starts[0]) if busy.count else float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "overlap_pct": round(overlap_pct(act.compute, act.comm), 2),
            "idle_pct": round(100.0 * (span - busy.total()) / span, 2),
            "compute_pct": round(100.0 * act.compute.total() / span, 2),
        }


def hta_scope_figures(directory: Path) -> dict[int, dict[str, float]]:
    """Per rank: our figures over the whole trace, and over HTA's kernel set. GPU traces only
    (HTA reads device kernels; a CPU trace gets no row)."""
    out: dict[int, dict[str, float]] = {}
    for trace in read_rank_traces(directory):
        events = trace.events
        if not activity(events).device:
            continue
        whole = _figures(events)
        scoped = _figures(_launched_before_last_step(events))
        comm_rows = events[(events["kind"] == "collective") & events["device_side"].astype(bool)]
        out[trace.rank] = {
            **{f"whole_{k}": v for k, v in whole.items()},
            **{f"hta_scope_{k}": v for k, v in scoped.items()},
            "comm_kernels": float(len(comm_rows)),
            "comm_us": float(from_frame(comm_rows).total()),
        }
    return out
