"""The GPU's busy share of a cell's step, measured for any model: a short CUDA-only
torch.profiler trace of TRACE_STEPS training steps after the measured windows (outside every
window and timer), reduced on the rank to one figure (docs/methodology.md, "Host-bound"): the
union of its kernel, memcpy and memset intervals over the wall time of those steps
(`offline/analysis/trace/gpu_busy.py`, the same reduction a kept trace gets).

CUDA activity only: no CPU op is recorded, so the trace stays small (a few thousand rows)
and the host pays CUPTI's per-launch cost alone. Fail-open: a capture that fails leaves the
figure null with its reason, and the cell still succeeds. The cell's share is the busiest
rank's (the GPU that idles least bounds how busy any GPU is). The pure part
(`host_bound_record`) is what a CPU test exercises; `trace_rank` is the CUDA side.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch.distributed as dist

from torchscale.contracts.gc_pause import cyclic_gc_paused
from torchscale.contracts.schema.cell_result import HOST_BOUND_CPU, HostBound
from torchscale.offline.analysis.trace.gpu_busy import (
    BusyShare,
    busy_over_wall,
    host_bound_verdict,
)
from torchscale.offline.traces.kineto import read_kineto
from torchscale.rank.worker.timing import synchronize
from torchscale.rank.worker.trainer import Trainer

# enough steps that one launch gap or one slow step does not decide; few enough that a large
# model's trace stays small and its seconds short
TRACE_STEPS = 3

CPU_REASON = HOST_BOUND_CPU
PIPELINE_REASON = (
    "pipeline cells: each stage waits for its neighbours' activations and gradients inside "
    "the schedule, so a stage's idle GPU time is the bubble, not the host"
)
NOT_RUN_METHOD = "CUDA trace: not run"
CAPTURE_FAILED = "the CUDA trace of the busy share failed"


@dataclass(frozen=True)
class BusyReading:
    """One rank's traced steps: the GPU's busy seconds and the steps' wall seconds, or why
    it has none (`reason`, the figures zero; `steps` still counts the steps that ran, each
    of which read a batch)."""

    rank: int
    steps: int = 0
    busy_s: float = 0.0
    wall_s: float = 0.0
    reason: str | None = None


def host_bound_record(readings: Sequence[BusyReading]) -> HostBound:
    """The cell's HostBound from every rank's reading: the busiest rank's share and its
    verdict (a finding), or null figures with the first rank's reason."""
    failed = next((r for r in sorted(readings, key=lambda r: r.rank) if r.reason), None)
    runs = [r for r in readings if r.steps > 0 and r.reason is None]
    method = f"CUDA trace: {runs[0].steps} steps after the windows" if runs else NOT_RUN_METHOD
    if failed is not None or not runs:
        why = failed.reason if failed is not None else "no rank traced a step"
        return HostBound(
            gpu_busy_s=None,
            step_s=None,
            gpu_busy_share=None,
            host_bound=None,
            method=method,
            reason=why,
        )
    shares = [BusyShare(r.busy_s, r.wall_s, r.steps) for r in runs]
    busiest = max(shares, key=lambda s: s.share)
    verdict = host_bound_verdict(busiest)
    return HostBound(
        gpu_busy_s=verdict.figure("gpu_busy_s"),
        step_s=verdict.figure("step_s"),
        gpu_busy_share=busiest.share,
        host_bound=verdict.code.endswith("launch_time"),
        method=method,
        steps=busiest.steps,
        verdict=verdict,
    )


# ------------------------------------------------------------------------------- CUDA side


def trace_rank(trainer: Trainer, steps: int = TRACE_STEPS) -> BusyReading | None:
    """This rank's traced steps (every rank calls it: the steps hold collectives), after the
    measured windows. None on CPU; a reading with the reason for a pipeline cell or a
    capture that failed."""
    device = trainer.device
    rank = dist.get_rank()
    if device.type != "cuda":
        return None
    if trainer.runner is not None:
        return BusyReading(rank=rank, reason=PIPELINE_REASON)
    done = 0
    try:
        from torch.profiler import ProfilerActivity, profile

        with tempfile.TemporaryDirectory(prefix="torchscale-busy-") as folder:
            path = Path(folder) / f"rank{rank}.busy.json"
            with cyclic_gc_paused(collect_first=True):
                synchronize(device)
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    # every queued kernel is done: the trace holds these steps' work alone
                    synchronize(device)
                    start = time.perf_counter()
                    for _ in range(steps):
                        trainer.step()
                        done += 1
                    synchronize(device)
                    wall_s = time.perf_counter() - start
            prof.export_chrome_trace(str(path))
            busy = busy_over_wall(read_kineto(path, rank_hint=rank).events, wall_s, steps)
    except Exception as exc:  # fail-open: the figure is null, the cell goes on
        why = f"{CAPTURE_FAILED} ({type(exc).__name__}: {exc})"
        return BusyReading(rank=rank, steps=done, reason=why)
    return BusyReading(rank=rank, steps=steps, busy_s=busy.busy_s, wall_s=busy.wall_s)
