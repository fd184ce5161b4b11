"""Per-step timers. No host synchronisation inside the measured window.

On CUDA, events are recorded on the current stream at every step edge and read only after the
window (one synchronize at the end); `sync_cuda` mode synchronises at each step edge instead, for
strict per-step wall times at the cost of the overlap it removes. On CPU every op is synchronous
from the host's view, so `time.perf_counter` at step edges is exact.
"""

from __future__ import annotations

import time
from typing import Protocol

import torch
import torch.distributed as dist


class StepTimer(Protocol):
    def start(self, step: int) -> None: ...
    def stop(self, step: int) -> None: ...
    def seconds(self) -> list[float]: ...


class PerfCounterTimer:
    """Host wall clock at step edges (CPU, or CUDA with a synchronize at each edge)."""

    def __init__(self, steps: int, sync_device: torch.device | None = None) -> None:
        self._starts = [0.0] * steps
        self._stops = [0.0] * steps
        self._sync = sync_device

    def start(self, step: int) -> None:
        if self._sync is not None:
            torch.cuda.synchronize(self._sync)
        self._starts[step] = time.perf_counter()

    def stop(self, step: int) -> None:
        if self._sync is not None:
            torch.cuda.synchronize(self._sync)
        self._stops[step] = time.perf_counter()

    def seconds(self) -> list[float]:
        return [b - a for a, b in zip(self._starts, self._stops, strict=True)]


class CudaEventTimer:
    """CUDA events at step edges, read after the window."""

    def __init__(self, steps: int, device: torch.device) -> None:
        self._device = device
        self._starts = [torch.cuda.Event(enable_timing=True) for _ in range(steps)]
        self._stops = [torch.cuda.Event(enable_timing=True) for _ in range(steps)]

    def start(self, step: int) -> None:
        self._starts[step].record()

    def stop(self, step: int) -> None:
        self._stops[step].record()

    def seconds(self) -> list[float]:
        torch.cuda.synchronize(self._device)
        return [a.elapsed_time(b) / 1e3 for a, b in zip(self._starts, self._stops, strict=True)]


def resolve_timing(mode: str, device: torch.device) -> str:
    """'auto' -> CUDA events on GPU, perf_counter on CPU; CUDA-only modes are refused on CPU."""
    if mode == "auto":
        return "cuda_events" if device.type == "cuda" else "perf_counter"
    if mode in ("cuda_events", "sync_cuda") and device.type != "cuda":
        return "perf_counter"
    return mode


def make_timer(mode: str, steps: int, device: torch.device) -> StepTimer:
    if mode == "cuda_events":
        return CudaEventTimer(steps, device)
    if mode == "sync_cuda":
        return PerfCounterTimer(steps, sync_device=device)
    return PerfCounterTimer(steps)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def settle(device: torch.device) -> None:
    """Everything queued on the device is done and every rank is here: what follows (a window
    of collectives, the traced steps) starts on even terms."""
    synchronize(device)
    dist.barrier()
