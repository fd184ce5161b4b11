"""`--inject-delay RANK:PHASE:MS`: a known straggler, to check the analyses against.

Rank RANK sleeps MS ms in PHASE once every optimizer step, in every step the worker runs
(warm-up, measured windows, the no_sync window and profiled steps alike), so every
figure of the cell sees the same straggler. With grad_accum_steps > 1 the sleep happens in the
last micro-batch (the one whose backward synchronises gradients). Where exactly:

- data: inside the data phase, after the batch is fetched.
- forward: after the model's forward and the loss, inside the forward phase.
- backward: in the backward pass of an identity autograd Function applied to the loss, so it
  runs first in backward, before any gradient exists: every DDP bucket, and so every gradient
  all-reduce, is delayed by it, as a rank with a slow backward delays them. (A sleep after
  backward() returned would sit after the gradient sync, where the other ranks would not wait
  for it; one inside a parameter hook would delay only the buckets after that parameter.)
- optimizer: inside the optimizer phase, before optimizer.step().

The sleep is a host sleep wrapped in a `torchscale:injected_delay` range (see
torchscale/rank/worker/markers.py), so trace analyses count it as work of its phase, not as idle
time. On CUDA it delays every kernel launched after it; kernels already queued keep the GPU busy
meanwhile, so the GPU-side delay is the sleep less what was queued (negligible for tens of ms).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from torchscale.contracts.step_phases import INJECTED_DELAY_RANGE, OWN_WORK_PHASES
from torchscale.contracts.worker_spec import DelaySpec
from torchscale.rank.worker import markers

if TYPE_CHECKING:
    import torch


def sleep(seconds: float) -> None:
    """The injected sleep, inside its own named range."""
    with markers.current().range(INJECTED_DELAY_RANGE):
        time.sleep(seconds)


@functools.cache
def _delayed_backward() -> Any:
    """The autograd Function (made on first use: parsing a delay must not import torch)."""
    import torch

    class DelayedBackward(torch.autograd.Function):
        """Identity in forward; sleeps at the start of backward, before any gradient."""

        @staticmethod
        def forward(ctx: Any, loss: torch.Tensor, seconds: float) -> torch.Tensor:
            ctx.seconds = seconds
            return loss.view_as(loss)

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
            sleep(ctx.seconds)
            return grad, None

    return DelayedBackward


@dataclass(frozen=True)
class RankDelays:
    """The delays of one rank, in seconds per phase (several specs of one phase add up)."""

    data: float = 0.0
    forward: float = 0.0
    backward: float = 0.0
    optimizer: float = 0.0

    @classmethod
    def for_rank(cls, delays: list[DelaySpec], rank: int, world_size: int) -> RankDelays:
        """This rank's delays; a ValueError for a delay aimed at a rank the cell lacks."""
        totals = dict.fromkeys(OWN_WORK_PHASES, 0.0)
        for delay in delays:
            if delay.rank >= world_size:
                raise ValueError(
                    f"--inject-delay {delay.text()}: rank {delay.rank} does not exist in a "
                    f"{world_size}-rank cell"
                )
            if delay.rank == rank:
                totals[delay.phase] += delay.ms / 1e3
        return cls(**totals)

    @property
    def any(self) -> bool:
        return bool(self.data or self.forward or self.backward or self.optimizer)

    def delay_backward(self, loss: torch.Tensor) -> torch.Tensor:
        """`loss` itself, or an identity of it whose backward sleeps first."""
        if not self.backward:
            return loss
        delayed: torch.Tensor = _delayed_backward().apply(loss, self.backward)
        return delayed


NO_DELAYS = RankDelays()
