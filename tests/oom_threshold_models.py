"""Test-only plug-in model that runs out of memory above a batch size, for the max-batch search.

Loaded by the worker as 'tests.oom_threshold_models:threshold' (the tests put the repo root on
PYTHONPATH through `launcher.env`). It raises torch.OutOfMemoryError, exactly as a GPU that ran
out of memory would, so the real launch path classifies the probe as `oom`.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class _Threshold(nn.Module):
    def __init__(self, threshold: int) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 1)
        self.threshold = threshold

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] > self.threshold:
            raise torch.OutOfMemoryError(
                f"CUDA out of memory (injected: batch {x.shape[0]} > {self.threshold})"
            )
        return self.linear(x)


def threshold(threshold: int = 5) -> tuple[nn.Module, Any, Any]:
    """Trains at a batch up to `threshold`; above it, forward raises torch.OutOfMemoryError."""

    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(batch_size, 4, device=device), torch.randn(batch_size, 1, device=device)

    return _Threshold(threshold), make_batch, F.mse_loss
