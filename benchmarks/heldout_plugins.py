"""Held-out straggler plug-ins for benchmarks/straggler_heldout.py, written as a user writes
them and never used to tune the rule: one rank (the last) stalls on real CPU work every k-th
training step (a GC pause, a checkpoint write, a logging flush), nothing else differs.

Sized through the environment (the `profile` command takes no model options):
HELDOUT_EVERY (k, 0: balanced) and HELDOUT_STALL_MS (the stall's length).
"""

from __future__ import annotations

import os
import time

import torch
import torch.nn.functional as F
from torch import nn

from torchscale.rank.models.bundle import ModelBundle

WIDTH = 768


class StallingNet(nn.Module):
    """Four linear layers; on the stalling rank, every `every`-th forward first burns
    `stall_s` of matmuls (real work on the CPU, not a sleep)."""

    def __init__(self, every: int, stall_s: float) -> None:
        super().__init__()
        self.body = nn.Sequential(*[nn.Linear(WIDTH, WIDTH) for _ in range(4)])
        self.every, self.stall_s, self.calls = every, stall_s, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.every and self.training and self.calls % self.every == 0:
            scratch = torch.randn(256, 256)
            end = time.perf_counter() + self.stall_s
            with torch.no_grad():
                while time.perf_counter() < end:
                    scratch = scratch @ scratch / 256.0
        return self.body(x)


def _batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    shape = (batch_size, WIDTH)
    return torch.randn(shape, device=device), torch.randn(shape, device=device)


def periodic() -> ModelBundle:
    rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    last = rank is not None and world is not None and int(rank) == int(world) - 1
    every = int(os.environ.get("HELDOUT_EVERY", "0")) if last else 0
    stall_s = float(os.environ.get("HELDOUT_STALL_MS", "0")) / 1e3
    return ModelBundle(
        model=StallingNet(every, stall_s),
        make_batch=_batch,
        loss_fn=F.mse_loss,
        kind="other",
        tokens_per_sample=None,
        input_shape=(WIDTH,),
        conv_net=False,
    )
