"""The GPU's busy share of a training step, from a trace: the union of the device-side intervals
(kernels, memcpy, memset, on every stream of the rank's GPU) over the wall time of the steps
they ran in; and the host-bound verdict on it (docs/methodology.md, "Host-bound").

A collective kernel is neither: it may sit waiting for a late peer (traces/idle.py), which is
no work of this GPU's, and no wait for this host either. So its time alone (no other kernel
running) leaves the step's time, and the share is of what remains. A trace with no device
row measured nothing: no share, never "busy 0 %".

A union, not a sum: kernels on concurrent streams overlap, and a GPU running two at once is
busy once. Pure functions of the trace reader's event table (`traces/rank_trace.py`), so the
worker's short CUDA-only capture (`rank/worker/busy_trace.py`) and a kept trace are reduced
alike. The verdict is a stored finding (code and figures), worded at render time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import HostBound
from torchscale.contracts.thresholds import HOST_BOUND_SHARE
from torchscale.offline.analysis.trace.intervals import Intervals, from_frame, subtract
from torchscale.offline.analysis.trace.steps import step_table

LAUNCH_TIME = "host_bound.launch_time"  # busy under the threshold: the step is launch time
GPU_BUSY = "host_bound.gpu_busy"  # busy at least the threshold: not host-bound


@dataclass(frozen=True)
class BusyShare:
    """The GPU's busy seconds over `steps` steps that took `wall_s` on the wall clock."""

    busy_s: float
    wall_s: float
    steps: int
    collective_s: float = 0.0  # a collective kernel alone on the GPU: neither busy nor idle

    @property
    def share(self) -> float:
        """busy / (wall less the collectives' time alone), clamped to [0, 1] (a trace's clock
        and the host's differ by rounding)."""
        judged = self.wall_s - self.collective_s
        return min(max(self.busy_s / judged, 0.0), 1.0) if judged > 0 else 0.0


def device_time(events: pd.DataFrame) -> tuple[Intervals, Intervals]:
    """(the merged intervals the GPU ran its own work: kernels, memcpy and memset, every
    stream; those a collective kernel ran while no other device work did): a collective is
    not its work (the module's docstring)."""
    device = events[events["device_side"].astype(bool)]
    collective = device["kind"].astype(str) == "collective"
    busy = from_frame(device[~collective])
    return busy, subtract(from_frame(device[collective]), busy)


def busy_over_wall(events: pd.DataFrame, wall_s: float, steps: int) -> BusyShare | None:
    """A capture of exactly `steps` steps (the worker's: synchronised before and after, so
    every device row belongs to them) against their host-timed wall time; None where it
    holds no device row (nothing measured)."""
    if not events["device_side"].astype(bool).any():
        return None
    busy, alone = device_time(events)
    return BusyShare(busy.total() / 1e6, wall_s, steps, alone.total() / 1e6)


def busy_in_steps(events: pd.DataFrame) -> BusyShare | None:
    """A full trace (CPU and GPU rows): the device's busy time inside each complete
    `ProfilerStep#` window over those windows' length; None when it has no step or no
    device row."""
    steps = step_table(events).full
    busy, alone = device_time(events)
    if steps.empty or not (busy.count or alone.count):
        return None
    lo = steps["start"].to_numpy(dtype=np.float64)
    hi = steps["end"].to_numpy(dtype=np.float64)
    return BusyShare(
        busy_s=float(np.sum(busy.within(lo, hi))) / 1e6,
        wall_s=float(np.sum(hi - lo)) / 1e6,
        steps=len(steps),
        collective_s=float(np.sum(alone.within(lo, hi))) / 1e6,
    )


def host_bound_verdict(busy: BusyShare, threshold: float = HOST_BOUND_SHARE) -> Finding:
    """Host-bound when the GPU is busy under `threshold` of its step, whatever the step's
    arithmetic (MFU) says: the measured share decides, the FLOPs never do."""
    code = LAUNCH_TIME if busy.share < threshold else GPU_BUSY
    per_step = busy.steps or 1
    return Finding(
        code=code,
        figures={
            "busy_share": busy.share,
            "steps": busy.steps,
            "threshold": threshold,
            "gpu_busy_s": busy.busy_s / per_step,
            "step_s": busy.wall_s / per_step,
        }
        | ({"collective_s": busy.collective_s / per_step} if busy.collective_s > 0 else {}),
    )


def launch_time_verdict(record: HostBound | None) -> Finding | None:
    """A cell's traced host-bound verdict (its compute is launch time); None for every other
    record, a verdict by arithmetic included (no traced share)."""
    verdict = record.verdict if record is not None else None
    return verdict if verdict is not None and verdict.code == LAUNCH_TIME else None
