"""Per-step phase timing inside the measured windows: where each rank's step goes.

Each step is cut, per micro-batch, at data end | forward end | last gradient | backward end,
then at the step end, into data, forward, backward, grad_sync_wait and optimizer, which add up
to the step: the table, the clocks, micro-batching, FSDP2, torch.compile and the cost are in
docs/methodology.md, "Phase timing". On CUDA every boundary is an event, all read after the
window (one synchronize, never one per step): host times would be kernel launch times.

When the split cannot be made (FSDP2: its hooks fire after each reduce-scatter; on CUDA a step
whose hook count differs from the expected: unused parameters, a parameter used twice under
reentrant checkpointing), backward is reported whole and grad_sync_wait is None, the reason in
`PhaseRecorder.notes`; the count seen becomes the expected one for the next steps.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from torchscale.contracts.finding import Finding
from torchscale.contracts.step_phases import STEP_PHASES
from torchscale.contracts.wording.cell_reasons import coded
from torchscale.rank.telemetry.cpu_wait import thread_clock
from torchscale.rank.worker.comm_hold import HoldTally

FSDP_REASON = coded("unavailable.fsdp2_hooks")
NO_PARAMS_REASON = coded("unavailable.no_trainable_parameters")
HOOKS_MISSED_REASON = coded("unavailable.hooks_missed")

PhaseSeconds = dict[str, list[float | None]]


def backward_split(strategy: str, parameters: Sequence[torch.nn.Parameter]) -> Finding | None:
    """None when backward can be split at the last gradient, else why not."""
    if strategy == "fsdp":
        return FSDP_REASON
    return None if parameters else NO_PARAMS_REASON


class PhaseRecorder:
    """Phase boundaries of `steps` steps of `accum` micro-batches each, read after the window.

    Use: `with recorder.hooks(params):` around the window (installs the gradient hooks), and in
    each step `step_start()`, per micro-batch `data_end()`, `backward_start()`,
    `backward_end()`, then `step_end()`. `seconds()` after the window."""

    def __init__(
        self,
        steps: int,
        accum: int,
        device: torch.device,
        cuda_events: bool,
        split_reason: Finding | None = None,
        hold: HoldTally | None = None,
    ) -> None:
        self.steps = steps
        self.accum = accum
        self.per_step = 2 + 4 * accum
        self.split = split_reason is None
        self.notes: dict[str, Finding] = {}
        if split_reason is not None:
            self.notes["grad_sync_wait"] = split_reason
        self._cuda = cuda_events and device.type == "cuda"
        self._device = device
        count = steps * self.per_step
        self._times = [math.nan] * count
        self._events: list[Any] = (
            [torch.cuda.Event(enable_timing=True) for _ in range(count)] if self._cuda else []
        )
        self._recorded = [False] * count if self._cuda else []
        self._index = 0
        self._grad_slot = -1
        self._count = 0
        self._expected = 0
        self._valid: list[bool] = [False] * (steps * accum)
        self._micro = 0
        # the training thread's (wait for a CPU, time on a CPU) at each step's two edges
        # (cpu_wait.py): the pair is stored as read, split after the window
        self._clock = thread_clock()
        self._sched_start: list[tuple[float, float] | None] = [None] * steps
        self._sched_end: list[tuple[float, float] | None] = [None] * steps
        # the DDP comm hooks' running hold (comm_hold.py) at every boundary, the last
        # gradient's included: a step's hold and the part of it before its last gradient
        self._hold = hold
        self._held = [math.nan] * count if hold is not None else []

    # ------------------------------------------------------------------ boundaries (per step)

    def _mark(self) -> None:
        i = self._index
        if self._hold is not None:
            self._held[i] = self._hold.held_s
        if self._cuda:
            self._events[i].record()
            self._recorded[i] = True
        else:
            self._times[i] = time.perf_counter()
        self._index = i + 1

    def step_start(self) -> None:
        step = self._index // self.per_step
        if step < self.steps:
            self._sched_start[step] = self._clock.read_both()
        self._mark()

    def data_end(self) -> None:
        self._mark()

    def backward_start(self) -> None:
        """Forward end: the next slot is the last gradient's, filled by the hooks."""
        self._mark()
        self._grad_slot = self._index
        self._count = 0
        self._index += 1

    def backward_end(self) -> None:
        self._mark()
        slot = self._grad_slot
        if self._cuda:
            self._valid[self._micro] = self._count == self._expected and self._count > 0
            if self._count != self._expected and self._count > 0:
                self._expected = self._count  # learnt for the next steps (this one is whole)
        else:
            self._valid[self._micro] = not math.isnan(self._times[slot])
        self._micro += 1
        self._grad_slot = -1

    def step_end(self) -> None:
        self._mark()
        step = (self._index - 1) // self.per_step
        if step < self.steps:
            self._sched_end[step] = self._clock.read_both()

    # ------------------------------------------------------------------------ gradient hooks

    def _hook_cpu(self, _param: torch.Tensor) -> None:
        slot = self._grad_slot
        if slot >= 0:
            self._times[slot] = time.perf_counter()
            if self._hold is not None:
                self._held[slot] = self._hold.held_s

    def _hook_cuda(self, _param: torch.Tensor) -> None:
        # runs on the autograd engine's device thread, whose current stream is the stream of
        # this gradient's backward ops: the event lands after the kernels that produced it
        slot = self._grad_slot
        if slot < 0:
            return
        self._count += 1
        if self._count == self._expected:
            self._events[slot].record(torch.cuda.current_stream(self._device))
            self._recorded[slot] = True
            if self._hold is not None:
                self._held[slot] = self._hold.held_s

    @contextmanager
    def hooks(self, parameters: Sequence[torch.nn.Parameter]) -> Iterator[PhaseRecorder]:
        """Gradient hooks on `parameters` for the block (none when the split is off)."""
        if not self.split:
            yield self
            return
        self._expected = len(parameters)
        hook = self._hook_cuda if self._cuda else self._hook_cpu
        handles = [p.register_post_accumulate_grad_hook(hook) for p in parameters]
        try:
            yield self
        finally:
            for handle in handles:
                handle.remove()

    # ------------------------------------------------------------------------ after the window

    def _boundaries(self) -> list[list[float]]:
        """Seconds since each step's start at each boundary (NaN: not recorded)."""
        out = []
        for step in range(self.steps):
            base = step * self.per_step
            if self._cuda:
                first = self._events[base]
                row = [
                    first.elapsed_time(self._events[base + k]) / 1e3
                    if self._recorded[base + k]
                    else math.nan
                    for k in range(self.per_step)
                ]
            else:
                start = self._times[base]
                row = [self._times[base + k] - start for k in range(self.per_step)]
            out.append(row)
        return out

    def _done(self, steps: int | None) -> int:
        """The steps recorded so far, at most `steps`."""
        done = self._index // self.per_step
        return done if steps is None else min(steps, done)

    def spans(self) -> list[float]:
        """Each recorded step from its own start edge to its own end edge: what its phases
        partition. The step timer's edges lie just outside these (trainer.py calls
        `step_start` and `step_end` inside the timed step)."""
        return [row[-1] for row in self._boundaries()[: self._done(None)]]

    def _sched_seconds(self, field: int, steps: int | None) -> list[float | None] | None:
        """Per recorded step (the first `steps`), the growth of the clock's `field` (0: the
        wait for a CPU, 1: the time on one) between the step's edges; None when the clock is
        unavailable."""
        if self._clock.unavailable is not None:
            return None
        steps = self._done(steps)
        return [
            max(0.0, end[field] - start[field]) if start is not None and end is not None else None
            for start, end in zip(self._sched_start[:steps], self._sched_end[:steps], strict=True)
        ]

    def cpu_wait(self, steps: int | None = None) -> list[float | None] | None:
        """Per recorded step (the first `steps`), the seconds the training thread waited for
        a CPU inside it; None when the clock is unavailable (`cpu_wait_note` says why)."""
        return self._sched_seconds(0, steps)

    def cpu_time(self, steps: int | None = None) -> list[float | None] | None:
        """Per recorded step (the first `steps`), the seconds the training thread ran on a
        CPU inside it (its intra-op threads not counted); None when the clock is unavailable
        (`cpu_wait_note` says why: the same clock reads both)."""
        return self._sched_seconds(1, steps)

    def comm_hold(
        self, steps: int | None = None
    ) -> tuple[list[float | None], list[float | None]] | None:
        """Per recorded step (the first `steps`), the seconds its DDP comm hooks held their
        launches (comm_hold.py), and the part of that before the last gradient of each
        micro-batch (None where the backward split was not made); None without a tally (no
        hook was registered)."""
        if self._hold is None:
            return None
        steps = self._done(steps)
        total: list[float | None] = []
        in_backward: list[float | None] = []
        for step in range(steps):
            base = step * self.per_step
            held = self._held[base : base + self.per_step]
            total.append(max(0.0, held[-1] - held[0]))
            before = 0.0
            for micro in range(self.accum):
                k = 1 + 4 * micro
                fwd_end, grad = held[k + 1], held[k + 2]
                if not self._valid[step * self.accum + micro] or math.isnan(grad):
                    before = math.nan
                    break
                before += grad - fwd_end
            in_backward.append(None if math.isnan(before) or not self.split else max(0.0, before))
        return total, in_backward

    @property
    def cpu_wait_note(self) -> Finding | None:
        return self._clock.unavailable

    def seconds(self, steps: int | None = None) -> PhaseSeconds:
        """Per phase, one value per recorded step (the first `steps`, default all recorded).

        grad_sync_wait is None for a step whose backward could not be split."""
        if self._cuda:
            torch.cuda.synchronize(self._device)
        steps = self._done(steps)
        result: PhaseSeconds = {phase: [] for phase in STEP_PHASES}
        missed = False
        for step, row in enumerate(self._boundaries()[:steps]):
            data = forward = backward = whole = wait = 0.0
            split = self.split
            previous = row[0]
            for micro in range(self.accum):
                k = 1 + 4 * micro
                data_end, fwd_end, grad, bwd_end = row[k : k + 4]
                data += data_end - previous
                forward += fwd_end - data_end
                whole += bwd_end - fwd_end
                if split and self._valid[step * self.accum + micro]:
                    backward += grad - fwd_end
                    wait += bwd_end - grad
                elif split:
                    split = False
                    missed = True
                previous = bwd_end
            result["data"].append(data)
            result["forward"].append(forward)
            result["backward"].append(backward if split else whole)
            result["grad_sync_wait"].append(wait if split else None)
            result["optimizer"].append(row[-1] - previous)
        if missed and self.split:
            self.notes.setdefault("grad_sync_wait", HOOKS_MISSED_REASON)
        return result


def trainable(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


def medians(phases: Sequence[PhaseSeconds]) -> dict[str, float | None]:
    """Median of each phase over every step of `phases` (None when no step has it)."""
    import statistics

    values = {p: [v for w in phases for v in w.get(p, []) if v is not None] for p in STEP_PHASES}
    return {p: statistics.median(v) if v else None for p, v in values.items()}
