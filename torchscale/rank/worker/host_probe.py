"""The GPU busy probe: how much of a measured step the GPU itself is busy (docs/methodology.md,
"GPU busy probe": the sleep, the K steps queued behind it, when it is not measurable), run
after the measured windows, outside every window and timer.

A rank's first probe step can absorb the skew between the ranks' sleeps, so its busy time is
the median over its K steps; the cell's is the busiest rank's (the GPU that idles least bounds
how busy any GPU is). The pure part (`judge_reading`, `host_bound_record`) is what a CPU test
exercises with made-up event times; `probe_rank` is the CUDA side.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from torchscale.contracts.gc_pause import cyclic_gc_paused
from torchscale.contracts.schema.cell_result import HOST_BOUND_CPU, HostBound
from torchscale.contracts.thresholds import HOST_BOUND_SHARE
from torchscale.rank.worker.steady_state import agreed_max
from torchscale.rank.worker.timing import synchronize
from torchscale.rank.worker.trainer import Trainer

# steps issued behind the sleep; 2 when a step is long (the sleep then costs seconds)
PROBE_STEPS = 3
LONG_STEP_S = 0.5
LONG_STEP_PROBE_STEPS = 2
SLEEP_FLOOR_MS = 20.0  # added to 2 x K x step: the launch of e0 and the first kernels
CALIBRATION_CYCLES = 20_000_000  # about 10 ms at an H100's 2 GHz
# the host must have issued every probe step within this share of the sleep's span
ISSUE_MARGIN = 0.9
# the busy time may exceed the median step by this much (or the steps' CV, if larger) before
# the note says so: the clamp to 1 then hides more than noise
BUSY_OVER_STEP_NOISE = 0.05

CPU_REASON = HOST_BOUND_CPU
PIPELINE_REASON = (
    "pipeline cells: each stage waits for its neighbours' activations and gradients inside "
    "the schedule, so a stage's GPU time behind a sleep includes the bubble, not its own work"
)
NOT_RUN_METHOD = "sleep probe: not run"
SLEEP_UNAVAILABLE = "torch.cuda._sleep (a private API) is not usable in this torch"
NO_STEPS = "no measured step to size the probe from or compare it with"


@dataclass(frozen=True)
class ProbeReading:
    """One rank's raw probe: the sleep's span on the GPU (e0 -> e1), the host's time to issue
    the sleep and the K steps (before e0 -> after the last event), and each step's GPU span; or
    why the probe did not run on this rank (`reason`, the figures empty)."""

    rank: int
    steps: int = 0
    sleep_ms: float = 0.0  # the planned sleep
    sleep_s: float = 0.0  # its span as the GPU's events measured it
    issue_s: float = 0.0
    step_gpu_s: list[float] = field(default_factory=list)
    reason: str | None = None


def probe_steps(step_s: float) -> int:
    """K: PROBE_STEPS, or fewer when one step is long (the sleep grows with K x step)."""
    return LONG_STEP_PROBE_STEPS if step_s > LONG_STEP_S else PROBE_STEPS


def sleep_ms_for(step_s: float, steps: int) -> float:
    """The sleep that outlasts issuing `steps` steps: 2 x steps x step + SLEEP_FLOOR_MS."""
    return 2 * steps * step_s * 1e3 + SLEEP_FLOOR_MS


def judge_reading(reading: ProbeReading) -> tuple[float | None, str | None]:
    """(one step's GPU busy seconds, None) when the probe held the host ahead of the GPU:
    the host issued every step before the sleep ended (issue_s <= ISSUE_MARGIN x sleep_s);
    else (None, why not)."""
    if reading.reason is not None:
        return None, reading.reason
    if not reading.step_gpu_s or reading.sleep_s <= 0:
        return None, f"rank {reading.rank}: the probe recorded no step"
    if reading.issue_s > ISSUE_MARGIN * reading.sleep_s:
        return None, (
            f"rank {reading.rank}: issuing {reading.steps} steps took the host "
            f"{reading.issue_s * 1e3:.1f} ms against a {reading.sleep_s * 1e3:.1f} ms GPU sleep: "
            "the host waited for the GPU while issuing them: a host sync in the step (.item(), "
            "GradScaler's inf check) or CUDA's launch queue full (more launches than it holds, "
            "as a large eager model's steps have), so the GPU's own time per step is not "
            "isolated"
        )
    return statistics.median(reading.step_gpu_s), None


def host_bound_record(
    readings: Sequence[ProbeReading], step_s: float | None, step_cv: float = 0.0
) -> HostBound:
    """The cell's HostBound from every rank's reading (a GPU cell): the busiest rank's GPU
    time per step against the cell's median step, or null figures with the first reason."""
    runs = [r for r in readings if r.steps > 0]
    sleep_ms = max((r.sleep_ms for r in runs), default=0.0)
    method = (
        f"sleep probe: {runs[0].steps} steps issued behind a {sleep_ms:.0f} ms GPU sleep"
        if runs
        else NOT_RUN_METHOD
    )

    def unjudged(gpu_busy_s: float | None, why: str | None) -> HostBound:
        return HostBound(
            gpu_busy_s=gpu_busy_s,
            step_s=step_s,
            gpu_busy_share=None,
            host_bound=None,
            method=method,
            reason=why,
        )

    busy: list[float] = []
    for reading in sorted(readings, key=lambda r: r.rank):
        seconds, why = judge_reading(reading)
        if seconds is None:
            return unjudged(None, why)
        busy.append(seconds)
    if not busy or step_s is None or step_s <= 0:
        return unjudged(max(busy, default=None), NO_STEPS)
    gpu_busy = max(busy)
    share, note = busy_share(gpu_busy, step_s, step_cv)
    return HostBound(
        gpu_busy_s=gpu_busy,
        step_s=step_s,
        gpu_busy_share=share,
        host_bound=share < HOST_BOUND_SHARE,
        method=method,
        note=note,
    )


def busy_share(gpu_busy_s: float, step_s: float, step_cv: float = 0.0) -> tuple[float, str | None]:
    """(gpu_busy_s / step_s clamped to [0, 1], a note when the busy time exceeded the step by
    more than the noise: max(BUSY_OVER_STEP_NOISE, the steps' CV))."""
    ratio = gpu_busy_s / step_s
    noise = max(BUSY_OVER_STEP_NOISE, step_cv)
    note = None
    if ratio > 1 + noise:
        note = (
            f"a step issued ahead of the GPU took it {gpu_busy_s * 1e3:.2f} ms, "
            f"{(ratio - 1) * 100:.0f} % more than the measured median step ({step_s * 1e3:.2f} "
            f"ms), beyond the steps' noise ({noise * 100:.0f} %): the probe's steps ran slower "
            "than the measured ones (clocks after the sleep, a cold cache); the share is read as 1"
        )
    return max(0.0, min(1.0, ratio)), note


# ------------------------------------------------------------------------------- CUDA side


def cycles_per_ms(device: torch.device) -> float:
    """The GPU's sleep cycles per millisecond, from a timed `torch.cuda._sleep` (the second
    of two: the first pays the kernel's first launch)."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    elapsed = 0.0
    for _ in range(2):
        torch.cuda.synchronize(device)
        start.record()
        torch.cuda._sleep(CALIBRATION_CYCLES)
        end.record()
        torch.cuda.synchronize(device)
        elapsed = start.elapsed_time(end)
    return CALIBRATION_CYCLES / max(elapsed, 1e-3)


def probe_rank(trainer: Trainer, step_s: float) -> ProbeReading | None:
    """This rank's probe (every rank calls it: it holds collectives), after the measured
    windows; `step_s` is this rank's median measured step. None on CPU (no probe); a reading
    with the reason for a pipeline cell (every rank of which has a runner, so all skip)."""
    device = trainer.device
    rank = dist.get_rank()
    if device.type != "cuda":
        return None
    if trainer.runner is not None:
        return ProbeReading(rank=rank, reason=PIPELINE_REASON)
    try:  # a private API: every rank fails here alike, before any collective
        rate = cycles_per_ms(device)
    except (AttributeError, RuntimeError) as exc:
        return ProbeReading(rank=rank, reason=f"{SLEEP_UNAVAILABLE} ({type(exc).__name__}: {exc})")
    slowest_step = agreed_max(step_s, device)
    steps = probe_steps(slowest_step)
    sleep_ms = sleep_ms_for(slowest_step, steps)
    cycles = int(sleep_ms * rate)
    e0 = torch.cuda.Event(enable_timing=True)
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
    with cyclic_gc_paused(collect_first=True):  # no collection while the host issues
        synchronize(device)
        dist.barrier()
        start = time.perf_counter()
        e0.record()
        torch.cuda._sleep(cycles)
        marks[0].record()
        for i in range(steps):
            trainer.step()
            marks[i + 1].record()
        issue_s = time.perf_counter() - start
        torch.cuda.synchronize(device)
    return ProbeReading(
        rank=rank,
        steps=steps,
        sleep_ms=sleep_ms,
        sleep_s=e0.elapsed_time(marks[0]) / 1e3,
        issue_s=issue_s,
        step_gpu_s=[marks[i].elapsed_time(marks[i + 1]) / 1e3 for i in range(steps)],
    )
