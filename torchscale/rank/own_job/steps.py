"""One optimizer step of a user's job as marks, and its phases from them.

A step runs from one optimizer post hook to the next (the first from the probe's first sight
of training). Inside it the probe marks each DataLoader `__next__`, each
`torch.autograd.backward` (with its last gradient) and each optimizer `step`; the phases are
cut as the worker cuts them (rank/worker/phases.py, contracts/step_phases.py), adding up to
the step: data = time inside `__next__`; backward = backward start to its last gradient;
grad_sync_wait = last gradient to backward's return, and the blocking collectives the loop
called outside backward, data and the optimizer (None when the split cannot be made: those
collectives are then in forward);
optimizer = inside `step` less the closure it called (Lightning's, whose forward, backward
and data are those phases) or, without one, the data and backward inside it;
forward = the rest (forward, loss, logging: everything the user's loop does besides), of
which the model's own forward calls are marked apart where the probe hooked its model
(`model_forward_s`: the rest of forward is the loop's own work).
A mark is a perf_counter reading on CPU, a CUDA event on GPUs (read once it has completed: no
added synchronize), so every phase is in the device's time, as the worker's are.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Mark = Any  # a float (perf_counter) or a torch.cuda.Event


class Clock:
    """Marks on the host's clock (CPU ranks) or the device's (CUDA events on `device`)."""

    def __init__(self, device: Any = None) -> None:
        self.device = device  # a CUDA torch.device, or None for perf_counter

    @property
    def timing(self) -> str:
        return "perf_counter" if self.device is None else "cuda_events"

    def mark(self, stream: Any = None) -> Mark:
        if self.device is None:
            return time.perf_counter()
        import torch

        event = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        event.record(stream)  # None: the current stream
        return event

    def done(self, mark: Mark) -> bool:
        return isinstance(mark, float) or bool(mark.query())

    def seconds(self, start: Mark, end: Mark) -> float:
        if isinstance(start, float):
            return float(end) - start
        return float(start.elapsed_time(end)) / 1e3


@dataclass
class Backward:
    start: Mark
    grad: Mark | None = None  # the last gradient's mark (None: no hook fired / count short)
    end: Mark | None = None


@dataclass
class StepMarks:
    """Everything marked in one step; `end` set at the step's optimizer post hook."""

    start: Mark
    data: list[tuple[Mark, Mark]] = field(default_factory=list)
    backward: list[Backward] = field(default_factory=list)
    optimizer: list[tuple[Mark, Mark]] = field(default_factory=list)
    # (start, end) of the closure an optimizer step called, or of the data and backward
    # intervals inside the step outside any closure: not the optimizer's time
    nested: list[tuple[Mark, Mark]] = field(default_factory=list)
    # (start, end) of blocking collectives called outside backward, data and the optimizer
    collectives: list[tuple[Mark, Mark]] = field(default_factory=list)
    # (start, end) of each outermost call of the hooked model's forward (probe.py)
    model_forward: list[tuple[Mark, Mark]] = field(default_factory=list)
    end: Mark | None = None
    samples: int | None = None
    tokens: int | None = None
    sched_start: tuple[float, float] | None = None  # (cpu wait, cpu time) at the edges
    sched_end: tuple[float, float] | None = None
    split: bool = True  # the backward split can be made for this step

    def marks(self) -> list[Mark]:
        out = [self.start, self.end]
        pairs = self.data + self.optimizer + self.nested + self.collectives + self.model_forward
        out += [m for pair in pairs for m in pair]
        out += [m for b in self.backward for m in (b.start, b.grad, b.end)]
        return [m for m in out if m is not None]


@dataclass
class StepSeconds:
    step_s: float
    phases: dict[str, float | None]
    samples: int | None
    tokens: int | None
    cpu_wait_s: float | None
    cpu_time_s: float | None
    model_forward_s: float | None = None  # None: no forward of the model marked in the step


def resolve(step: StepMarks, clock: Clock) -> StepSeconds:
    """The step's seconds and phases from its marks (all completed)."""
    start = step.start

    def span(a: Mark, b: Mark) -> float:
        return max(0.0, clock.seconds(a, b))

    whole = span(start, step.end)
    data = sum(span(a, b) for a, b in step.data)
    bwd_whole = sum(span(b.start, b.end) for b in step.backward if b.end is not None)
    split = (
        step.split
        and bool(step.backward)
        and all(b.grad is not None and b.end is not None for b in step.backward)
    )
    backward, wait, collectives = bwd_whole, None, 0.0
    if split:
        backward = sum(span(b.start, b.grad) for b in step.backward)
        backward = min(backward, bwd_whole)
        collectives = sum(span(a, b) for a, b in step.collectives)
        wait = max(0.0, bwd_whole - backward) + collectives
    optimizer = sum(span(a, b) for a, b in step.optimizer)
    optimizer = max(0.0, optimizer - sum(span(a, b) for a, b in step.nested))
    forward = max(0.0, whole - data - bwd_whole - collectives - optimizer)
    phases: dict[str, float | None] = {
        "data": data,
        "forward": forward,
        "backward": backward,
        "grad_sync_wait": wait,
        "optimizer": optimizer,
    }
    wait_s = time_s = None
    if step.sched_start is not None and step.sched_end is not None:
        wait_s = max(0.0, step.sched_end[0] - step.sched_start[0])
        time_s = max(0.0, step.sched_end[1] - step.sched_start[1])
    model = sum(span(a, b) for a, b in step.model_forward) if step.model_forward else None
    model_s = None if model is None else min(model, forward)  # inside forward, by the clocks
    return StepSeconds(whole, phases, step.samples, step.tokens, wait_s, time_s, model_s)


# ---------------------------------------------------------------------------- batch counts


def batch_counts(batch: Any) -> tuple[int | None, int | None]:
    """(samples, tokens) of one batch the loader yielded, by the documented rule
    (docs/own-job.md): samples = the leading dimension of the first tensor found (a 0-dim
    tensor: 1), searching mappings' values, lists and tuples in order; tokens = a mapping's
    `input_ids` elements, or its `attention_mask`'s ones where it has a CPU one; else the
    elements of the first tensor when it is an integer tensor of two or more dimensions.
    None: no such tensor."""
    import torch

    first = _first_tensor(batch, torch.Tensor)
    if first is None:
        return None, None
    samples = int(first.shape[0]) if first.dim() > 0 else 1
    tokens = None
    if isinstance(batch, Mapping) and isinstance(batch.get("input_ids"), torch.Tensor):
        mask = batch.get("attention_mask")
        if isinstance(mask, torch.Tensor) and mask.device.type == "cpu":
            tokens = int(mask.sum())  # a CPU sum: never a device sync
        else:
            tokens = int(batch["input_ids"].numel())
    elif first.dim() >= 2 and not first.is_floating_point() and not first.is_complex():
        tokens = int(first.numel()) if first.dtype != torch.bool else None
    return samples, tokens


def _first_tensor(batch: Any, tensor_type: type, depth: int = 0) -> Any:
    if isinstance(batch, tensor_type):
        return batch
    if depth > 4:
        return None
    items: Any = ()
    if isinstance(batch, Mapping):
        items = batch.values()
    elif isinstance(batch, (list, tuple)):
        items = batch
    for item in items:
        found = _first_tensor(item, tensor_type, depth + 1)
        if found is not None:
            return found
    return None
