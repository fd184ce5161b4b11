"""A plug-in model whose compute is a sleep: `benchmarks.sleep_model:build` in a config.

On a CPU host with fewer cores than ranks, real compute at 4 ranks on 2 cores slows every rank
by sharing cores, so a forecast's error there mixes the model's error with this machine's
contention. A sleeping forward holds no core, so its step time is the sleep plus what the ranks
really share: the gradient all-reduce of its real parameters (a DDP cell all-reduces every
gradient each step). benchmarks/prediction_accuracy.py measures forecasts against it.

Loaded by the worker from the repository root on PYTHONPATH (the config's `launcher.env`).
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from torch import nn

from torchscale.rank.models.bundle import ModelBundle


class SleepNet(nn.Module):
    """One square linear layer (its gradient is what DDP all-reduces), then a sleep of
    `sleep_ms` per forward pass, whatever the batch: a fixed compute time per step."""

    def __init__(self, width: int, sleep_ms: float) -> None:
        super().__init__()
        self.layer = nn.Linear(width, width)
        self.sleep_s = sleep_ms / 1e3

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # the FLOP count runs a forward on the meta device: no time to spend there
        if x.device.type != "meta":
            time.sleep(self.sleep_s)
        y: torch.Tensor = self.layer(x)
        return y


def build(width: int = 512, sleep_ms: float = 40.0) -> ModelBundle:
    """`width` sets the gradient bytes (width * (width + 1) fp32 parameters: 1.0 MiB at 512),
    `sleep_ms` the compute time of one step."""

    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        shape = (batch_size, width)
        return torch.randn(shape, device=device), torch.randn(shape, device=device)

    return ModelBundle(
        model=SleepNet(width, sleep_ms),
        make_batch=make_batch,
        loss_fn=F.mse_loss,
        kind="other",
        tokens_per_sample=None,
        input_shape=(width,),
        conv_net=False,
    )
