"""The GPU's busy share of a cell's step, measured for any model: a short CUDA-only
torch.profiler trace of TRACE_STEPS training steps after the measured windows (outside every
window and timer), reduced on the rank to one figure (docs/methodology.md, "Host-bound"): the
union of its kernel, memcpy and memset intervals over the wall time of those steps
(`offline/analysis/trace/gpu_busy.py`, the same reduction a kept trace gets).

CUDA activity only: no CPU op is recorded, so the trace stays small (a few thousand rows)
and the host pays CUPTI's per-launch cost alone. Fail-open for the profiler's own failures: a
capture that fails leaves the figure null with its reason, and the cell still succeeds; a
training step's error is the cell's, as in any window. The cell's share is the busiest
rank's (the GPU that idles least bounds how busy any GPU is). The pure part
(`host_bound_record`) is what a CPU test exercises; `trace_rank` is the CUDA side. A user's
job takes the same capture over its own steps (rank/own_job/busy_window.py), so this module
loads no trainer at import.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import torch.distributed as dist

from torchscale.contracts.finding import Finding
from torchscale.contracts.gc_pause import cyclic_gc_paused
from torchscale.contracts.schema.cell_result import HostBound
from torchscale.rank.worker.steady_state import agree_any
from torchscale.rank.worker.timing import synchronize

if TYPE_CHECKING:
    from torchscale.rank.worker.trainer import Trainer

# enough steps that one launch gap or one slow step does not decide; few enough that a large
# model's trace stays small and its seconds short
TRACE_STEPS = 3

PIPELINE_REASON = Finding(code="host_bound.pipeline")
PEER_FAILED = Finding(code="host_bound.peer_failed")
NO_DEVICE_ROWS = "host_bound.no_device_rows"  # the capture holds no GPU row: nothing measured
SHARED_GPU_TRACE = "host_bound.shared_gpu"  # ranks sharing a GPU: each traces its own kernels

T = TypeVar("T")


@dataclass(frozen=True)
class BusyReading:
    """One rank's traced steps: the GPU's busy seconds and the steps' wall seconds, or why
    it has none (`reason`, the figures zero; `steps` still counts the steps that ran, each
    of which read a batch)."""

    rank: int
    steps: int = 0
    busy_s: float = 0.0
    wall_s: float = 0.0
    reason: Finding | None = None
    collective_s: float = 0.0  # gpu_busy.BusyShare's: collectives alone, out of the share


def host_bound_record(readings: Sequence[BusyReading]) -> HostBound:
    """The cell's HostBound from every rank's reading: the busiest rank's share and its
    verdict (a finding), or null figures with the first rank's reason."""
    # a rank's own failure before a peer's note that it did not trace
    failed = min(
        (r for r in readings if r.reason),
        key=lambda r: (r.reason == PEER_FAILED, r.rank),
        default=None,
    )
    runs = [r for r in readings if r.steps > 0 and r.reason is None]
    if failed is not None or not runs:
        why = failed.reason if failed is not None else Finding(code="host_bound.none_traced")
        return HostBound(
            gpu_busy_s=None,
            step_s=None,
            gpu_busy_share=None,
            host_bound=None,
            method="cuda_trace",
            reason=why,
        )
    # the reduction needs pandas, which a rank must not load before its windows (a cell's fixed
    # cost: tests/rank/test_rank_imports.py); this runs after them
    from torchscale.offline.analysis.trace.gpu_busy import (
        LAUNCH_TIME,
        BusyShare,
        host_bound_verdict,
    )

    shares = [BusyShare(r.busy_s, r.wall_s, r.steps, r.collective_s) for r in runs]
    busiest = max(shares, key=lambda s: s.share)
    verdict = host_bound_verdict(busiest)
    return HostBound(
        gpu_busy_s=verdict.figure("gpu_busy_s"),
        step_s=verdict.figure("step_s"),
        gpu_busy_share=busiest.share,
        host_bound=verdict.code == LAUNCH_TIME,
        method="cuda_trace",
        steps=busiest.steps,
        verdict=verdict,
    )


# ------------------------------------------------------------------------------- CUDA side


def start_profiler() -> Any:
    """A started CUDA-only profiler in its warm-up: CUPTI is up (where it fails, it fails
    here), but nothing it sees is kept until `step()`, so the ranks' agreement, a collective,
    stays out of the trace."""
    from torch.profiler import ProfilerActivity, profile, schedule

    prof = profile(
        activities=[ProfilerActivity.CUDA], schedule=schedule(wait=0, warmup=1, active=1, repeat=1)
    )
    prof.start()
    return prof


def attempt(action: Callable[[], T]) -> tuple[T | None, Finding | None]:
    """`action`'s value, or None and why it failed: the profiler's own failures fail open."""
    try:
        return action(), None
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        return None, Finding(code="host_bound.trace_failed", figures={"error": error})


def timed_steps(trainer: Trainer, steps: int) -> float:
    """Wall seconds of `steps` training steps, synchronised on both edges: the trace holds
    their work alone."""
    synchronize(trainer.device)
    start = time.perf_counter()
    for _ in range(steps):
        trainer.step()
    synchronize(trainer.device)
    return time.perf_counter() - start


def exported_reading(prof: Any, rank: int, wall_s: float, steps: int) -> BusyReading:
    """The stopped profiler's trace reduced to this rank's busy share (the kept traces' reader,
    imported here: it needs pandas, which a rank loads only after its windows)."""
    from torchscale.offline.analysis.trace.gpu_busy import busy_over_wall
    from torchscale.offline.traces.kineto import read_kineto

    with tempfile.TemporaryDirectory(prefix="torchscale-busy-") as folder:
        path = Path(folder) / f"rank{rank}.busy.json"
        prof.export_chrome_trace(str(path))
        busy = busy_over_wall(read_kineto(path, rank_hint=rank).events, wall_s, steps)
    if busy is None:
        return BusyReading(rank=rank, steps=steps, reason=Finding(code=NO_DEVICE_ROWS))
    return BusyReading(
        rank=rank,
        steps=steps,
        busy_s=busy.busy_s,
        wall_s=busy.wall_s,
        collective_s=busy.collective_s,
    )


def trace_rank(trainer: Trainer, steps: int = TRACE_STEPS) -> BusyReading | None:
    """This rank's traced steps (every rank calls it: the steps hold collectives), after the
    measured windows. None on CPU; a reading with the reason for a pipeline cell or a
    capture that failed. The ranks agree before stepping: all step traced, or none steps
    (a rank whose profiler failed would leave its peers waiting in the steps' collectives
    until the timeout). A step's own error (an OOM, NCCL) is the cell's: it propagates."""
    device = trainer.device
    if device.type != "cuda":
        return None
    rank = dist.get_rank()
    if trainer.runner is not None:
        return BusyReading(rank=rank, reason=PIPELINE_REASON)
    with cyclic_gc_paused(collect_first=True):
        synchronize(device)
        prof, why = attempt(start_profiler)
        # a collective: every rank calls it, whatever its profiler did
        if agree_any(prof is None, device) or prof is None:
            if prof is not None:
                attempt(prof.stop)
            return BusyReading(rank=rank, reason=why or PEER_FAILED)
        # the recording starts; should it fail now the rank still steps, untraced, beside
        # its peers
        _, why = attempt(prof.step)
        try:
            wall_s = timed_steps(trainer, steps)
        finally:
            _, stopped = attempt(prof.stop)
    why = why or stopped
    if why is not None:
        return BusyReading(rank=rank, steps=steps, reason=why)
    reading, why = attempt(lambda: exported_reading(prof, rank, wall_s, steps))
    return reading or BusyReading(rank=rank, steps=steps, reason=why)
