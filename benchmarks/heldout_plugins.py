"""Held-out straggler plug-ins for benchmarks/straggler_heldout.py, written as a user writes
them and never used to tune the rule. On the last rank only, nothing else differing:

- `periodic`: it stalls on real CPU work every k-th training step (a GC pause, a checkpoint
  write, a logging flush);
- `slower`: every forward and backward does a share more work (a slower device: real extra
  math through the same layers, so every rank keeps the same parameters);
- `optimizer`: after each optimizer step it burns extra CPU time (an EMA update or a metrics
  flush in an optimizer step hook, registered by the plug-in as a user would).

Sized through the environment (the `profile` command takes no model options): HELDOUT_EVERY
(k, 0: never), HELDOUT_STALL_MS (a stall's length), HELDOUT_SHARE (the slower rank's extra
work, 0.25: a quarter more).
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook

from torchscale.rank.models.bundle import ModelBundle

WIDTH = 768


def _burn(seconds: float) -> None:
    """`seconds` of matmuls on the CPU: real work, not a sleep."""
    scratch = torch.randn(256, 256)
    end = time.perf_counter() + seconds
    with torch.no_grad():
        while time.perf_counter() < end:
            scratch = scratch @ scratch / 256.0


class HeldOutNet(nn.Module):
    """Four linear layers. On the straggling rank: every `every`-th forward first burns
    `stall_s`; and `share` of the batch goes through the layers a second time, its result
    kept in the loss at weight 0, so forward and backward both do that much more work."""

    def __init__(self, every: int = 0, stall_s: float = 0.0, share: float = 0.0) -> None:
        super().__init__()
        self.body = nn.Sequential(*[nn.Linear(WIDTH, WIDTH) for _ in range(4)])
        self.every, self.stall_s, self.share, self.calls = every, stall_s, share, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.every and self.training and self.calls % self.every == 0:
            _burn(self.stall_s)
        out = self.body(x)
        if self.share > 0 and self.training:
            rows = max(1, math.ceil(self.share * x.shape[0]))
            out = out + 0.0 * self.body(x[:rows]).mean()
        return out


def _batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    shape = (batch_size, WIDTH)
    return torch.randn(shape, device=device), torch.randn(shape, device=device)


def _straggling() -> bool:
    rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    return rank is not None and world is not None and int(rank) == int(world) - 1


def _env(name: str) -> float:
    return float(os.environ.get(name, "0")) if _straggling() else 0.0


def _bundle(model: nn.Module) -> ModelBundle:
    return ModelBundle(
        model=model,
        make_batch=_batch,
        loss_fn=F.mse_loss,
        kind="other",
        tokens_per_sample=None,
        input_shape=(WIDTH,),
        conv_net=False,
    )


def periodic() -> ModelBundle:
    return _bundle(
        HeldOutNet(every=int(_env("HELDOUT_EVERY")), stall_s=_env("HELDOUT_STALL_MS") / 1e3)
    )


def slower() -> ModelBundle:
    return _bundle(HeldOutNet(share=_env("HELDOUT_SHARE")))


def optimizer() -> ModelBundle:
    stall_s = _env("HELDOUT_STALL_MS") / 1e3
    if stall_s > 0:

        def after_step(*_: Any) -> None:
            _burn(stall_s)

        register_optimizer_step_post_hook(after_step)
    return _bundle(HeldOutNet())
