"""`--inject-delay RANK:PHASE:MS`: a known straggler, to check the analyses against.

Rank RANK sleeps MS ms in PHASE once every optimizer step, in every step the worker runs, inside
a `torchscale:injected_delay` range; with grad_accum_steps > 1 in the last micro-batch (the one
whose backward synchronises gradients). Where in each phase, and why the backward one is an
identity autograd Function on the loss (it runs before any gradient exists, so every DDP bucket
waits for it): docs/methodology.md, "Injected delays".
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
