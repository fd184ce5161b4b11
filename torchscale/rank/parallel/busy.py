"""How long a pipeline rank computes within a step, for the measured bubble fraction
1 - busy / step (docs/strategies.md, "Pipeline: per-stage time and the bubble").

Busy time is summed over the rank's own compute actions, never across a wait for a neighbour:
the schedule waits for received activations and gradients before it calls an action (on CUDA
the waits are enqueued before the action's start event), so the waits fall outside. CUDA
events are read only when asked for (after the step), so the step never waits on the host.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import torch


class BusyTimer:
    """Sums compute intervals per step; `seconds()` gives every finished step's total."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self._cpu = 0.0
        self._events: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []
        self._pending: list[list[tuple[torch.cuda.Event, torch.cuda.Event]] | float] = []
        self._done: list[float] = []

    @property
    def method(self) -> str:
        """How busy time is measured, for the result."""
        return "cuda_events" if self.cuda else "perf_counter"

    @contextmanager
    def measure(self) -> Iterator[None]:
        """Time one compute action of the current step."""
        if self.cuda:
            start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            start.record()
            try:
                yield
            finally:
                end.record()
                self._events.append((start, end))
        else:
            began = time.perf_counter()
            try:
                yield
            finally:
                self._cpu += time.perf_counter() - began

    def end_step(self) -> None:
        """Close the current step's record (no device synchronisation)."""
        self._pending.append(self._events if self.cuda else self._cpu)
        self._events, self._cpu = [], 0.0

    def seconds(self) -> list[float]:
        """Busy seconds of every step ended so far (on CUDA this waits for their events)."""
        for record in self._pending:
            if isinstance(record, float):
                self._done.append(record)
            elif record:
                record[-1][1].synchronize()
                self._done.append(sum(s.elapsed_time(e) for s, e in record) / 1000.0)
            else:
                self._done.append(0.0)
        self._pending.clear()
        return list(self._done)

    def clear(self) -> None:
        """Forget finished steps (warm-up steps, say)."""
        self.seconds()
        self._done.clear()
