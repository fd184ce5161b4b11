"""A fixed piece of work each rank times beside every measured window: its device's speed.

A compute straggler is either a slower device (a throttled or worse GPU, a slower core) or a
rank given more work; the same fixed work on every rank tells them apart (docs/methodology.md,
"Slower device or more work"). It runs right after each window's closing barrier, so every
rank times it at once, on the same machine state as the window, and no timed step changes.
Per window, not once: a GPU that throttles as it heats, or a core that other work slows for a
while, shows in the windows it slowed.

CPU: a small float32 matmul repeated on the rank's own thread (CPU ranks run one intra-op
thread), timed by that thread's CPU clock (the core's speed: the same instructions took
longer) and by wall time (which also holds any wait for the CPU: the host's share, judged by
the CPU-wait rule, not here). CUDA: a fixed matmul timed by CUDA events (the GPU's own time).
"""

from __future__ import annotations

import time

import torch

REPS = 8  # timed repetitions per window: paired across ranks by (window, rep)
CPU_SIDE, CPU_INNER = 128, 8  # about 0.1 ms of matmul per inner call on one core
CUDA_SIDE, CUDA_INNER = 2048, 4  # a few hundred microseconds on a data-centre GPU


class Calibration:
    """The fixed work of one rank on its device, made once and timed per window."""

    def __init__(self, device: torch.device, reps: int = REPS) -> None:
        self.device = device
        self.reps = reps
        self.timer = "cuda_events" if device.type == "cuda" else "thread_time"
        self._a: torch.Tensor | None = None
        self._out: torch.Tensor | None = None

    def run(self) -> tuple[list[float], list[float]]:
        """(device seconds, wall seconds) of each of `reps` repetitions, one untimed first."""
        if self._a is None:  # made at the first window, on the device the windows ran on
            side = CUDA_SIDE if self.device.type == "cuda" else CPU_SIDE
            generator = torch.Generator().manual_seed(0)  # the same matrix on every rank
            self._a = torch.rand(side, side, generator=generator).to(self.device)
            self._out = torch.empty_like(self._a)
        with torch.no_grad():
            self._once()  # caches and clocks warm: the first call is not the device's speed
            if self.device.type == "cuda":
                return self._cuda()
            return self._cpu()

    def _once(self) -> None:
        a, out = self._a, self._out
        assert a is not None and out is not None  # made by run()
        inner = CUDA_INNER if self.device.type == "cuda" else CPU_INNER
        for _ in range(inner):
            torch.mm(a, a, out=out)

    def _cpu(self) -> tuple[list[float], list[float]]:
        device_s, wall_s = [], []
        for _ in range(self.reps):
            cpu0, wall0 = time.thread_time_ns(), time.perf_counter_ns()
            self._once()
            cpu1, wall1 = time.thread_time_ns(), time.perf_counter_ns()
            device_s.append((cpu1 - cpu0) / 1e9)
            wall_s.append((wall1 - wall0) / 1e9)
        return device_s, wall_s

    def _cuda(self) -> tuple[list[float], list[float]]:
        events = [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            for _ in range(self.reps)
        ]
        torch.cuda.synchronize(self.device)
        wall_s = []
        for start, stop in events:
            wall0 = time.perf_counter_ns()
            start.record()
            self._once()
            stop.record()
            stop.synchronize()  # one rep at a time: its wall is its own
            wall_s.append((time.perf_counter_ns() - wall0) / 1e9)
        return [start.elapsed_time(stop) / 1e3 for start, stop in events], wall_s
