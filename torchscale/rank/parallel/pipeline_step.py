"""Pipeline parallelism with torch.distributed.pipelining: stages, schedule, one training step.

Stage modules come from torchscale/rank/parallel/pieces.py; each rank holds one (GPipe, 1F1B) or two
(interleaved 1F1B, assigned round-robin: rank r holds stages r and r + pp, the "loop" mapping
torch's ScheduleInterleaved1F1B expects). Stage shapes are given to PipelineStage up front
(static metadata, from one eval-mode forward of the whole chain on fake tensors at set-up), so
the first step runs no extra shape-inference pass on placeholder tensors, which in torch 2.13
would run BatchNorm in training mode on uninitialised memory.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.pipelining import (
    PipelineStage,
    Schedule1F1B,
    ScheduleGPipe,
    ScheduleInterleaved1F1B,
)

from torchscale.rank.models.bundle import model_args
from torchscale.rank.parallel.busy import BusyTimer
from torchscale.rank.parallel.rank_layout import ParallelLayout

Autocast = Callable[[], AbstractContextManager[Any]]
LossFn = Callable[[Any, Any], torch.Tensor]


class TimedStage(PipelineStage):
    """A PipelineStage whose compute actions are timed and whose forward runs under autocast.

    The schedule calls these three methods for every micro-batch; wrapping them is the one
    place that sees each action's compute and nothing else.
    """

    def __init__(self, *args: Any, timer: BusyTimer, autocast: Autocast, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timer = timer
        self.autocast = autocast

    def forward_one_chunk(self, *args: Any, **kwargs: Any) -> Any:
        with self.timer.measure(), self.autocast():
            return super().forward_one_chunk(*args, **kwargs)

    def backward_one_chunk(self, *args: Any, **kwargs: Any) -> Any:
        with self.timer.measure():
            return super().backward_one_chunk(*args, **kwargs)

    def backward_weight_one_chunk(self, *args: Any, **kwargs: Any) -> Any:
        with self.timer.measure():
            return super().backward_weight_one_chunk(*args, **kwargs)


@dataclass
class TiedGrad:
    """This rank's copy of a weight tied across stages, and the group of the two copies."""

    name: str
    param: torch.Tensor
    group: dist.ProcessGroup


def _meta_like(t: torch.Tensor, requires_grad: bool) -> torch.Tensor:
    """A meta tensor with `t`'s shape, strides and dtype: what PipelineStage's metadata needs
    (a plain one, even while the stages are sized on fake tensors)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        meta = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")
    return meta.requires_grad_(requires_grad and t.is_floating_point())


Flow = torch.Tensor | tuple[torch.Tensor, ...]  # what crosses a stage boundary


def _meta_flow(x: Flow, requires_grad: bool) -> Flow:
    """`_meta_like` of one tensor, or of each tensor of a tuple (several stage arguments)."""
    if isinstance(x, tuple):
        return tuple(_meta_like(t, requires_grad) for t in x)
    return _meta_like(x, requires_grad)


def stage_shapes(
    modules: list[nn.Module], example: Flow, autocast: Autocast
) -> list[tuple[Flow, Flow]]:
    """(input, output) meta tensors of every stage module for one micro-batch `example`.

    A tuple (the encoder-decoder's source and target ids, and the pair its stages pass on)
    gives a tuple of meta tensors, one stage argument each. Runs the whole chain once without
    gradients in eval mode (no BatchNorm statistics change, no dropout), under the autocast
    the training step uses, so dtypes match what flows.
    """
    modes = [m.training for m in modules]
    shapes: list[tuple[Flow, Flow]] = []
    x = example
    fastpath = torch.backends.mha.get_fastpath_enabled()
    # nn.TransformerEncoderLayer's eval-mode fast path ignores CPU autocast (it checks CUDA's
    # only) and returns bf16 where training returns fp32; size stages as training runs them
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.no_grad(), autocast():
            for i, module in enumerate(modules):
                module.eval()
                # as PipelineStage runs it: a tuple's tensors as separate arguments
                y: Flow = module(*x) if isinstance(x, tuple) else module(x)
                shapes.append((_meta_flow(x, requires_grad=i > 0), _meta_flow(y, True)))
                x = y
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
        for module, mode in zip(modules, modes, strict=True):
            module.train(mode)
    return shapes


class PipelineRunner:
    """Runs one step's forward and backward over the micro-batches through the schedule."""

    def __init__(
        self,
        layout: ParallelLayout,
        schedule: Any,
        stages: list[TimedStage],
        tied: list[TiedGrad],
        timer: BusyTimer,
    ) -> None:
        self.layout = layout
        self.schedule = schedule
        self.stages = stages
        self.tied = tied
        self.timer = timer
        self.holds_last = any(stage.is_last for stage in stages)

    def step(self, inputs: Any, targets: Any) -> torch.Tensor | None:
        """One step's forward and backward over `layout.microbatches` micro-batches.

        Every rank of the pipeline passes the same (per-replica) batch; only the first stage
        reads `inputs` (a tuple's items as its arguments: the encoder-decoder's source and
        target ids) and only the last `targets`. Returns the mean of the micro-batch losses
        (detached) on the rank holding the last stage, None elsewhere. Gradients are the mean
        over micro-batches (the schedule divides them by the micro-batch count), and weights tied
        across stages have their two gradients summed between the two stages' ranks, so both
        copies take the same update, as the single tied weight of the unsplit model would.
        """
        args, kwargs = model_args(inputs)
        losses: list[torch.Tensor] = []
        self.schedule.step(*args, target=targets, losses=losses, return_outputs=False, **kwargs)
        for tie in self.tied:
            if tie.param.grad is not None:
                dist.all_reduce(tie.param.grad, group=tie.group)
        self.timer.end_step()
        if not self.holds_last:
            return None
        return torch.stack([loss.detach().float() for loss in losses]).mean()

    @property
    def stage_busy_s(self) -> list[float]:
        """Seconds this rank spent computing in each step so far (see
        torchscale/rank/parallel/busy.py for how it is timed); the bubble fraction of a step is 1 -
        busy / step time. Reading it on CUDA waits for the steps' timing events: read it after the
        timed window."""
        return self.timer.seconds()

    def clear_busy(self) -> None:
        """Forget the busy times recorded so far (call after warm-up steps)."""
        self.timer.clear()


def build_schedule(layout: ParallelLayout, stages: list[TimedStage], loss_fn: LossFn) -> Any:
    """torch's schedule for the layout: ScheduleGPipe, Schedule1F1B or ScheduleInterleaved1F1B."""
    m = layout.microbatches
    if layout.schedule == "interleaved_1f1b":
        return ScheduleInterleaved1F1B(list(stages), n_microbatches=m, loss_fn=loss_fn)
    single = ScheduleGPipe if layout.schedule == "gpipe" else Schedule1F1B
    return single(stages[0], n_microbatches=m, loss_fn=loss_fn)


def timed_loss(loss_fn: LossFn, timer: BusyTimer, autocast: Autocast) -> LossFn:
    """The loss as the schedule calls it on the last stage: timed as compute, under autocast
    (as the trainer computes its loss)."""

    def loss(output: Any, target: Any) -> torch.Tensor:
        with timer.measure(), autocast():
            return loss_fn(output, target)

    return loss
