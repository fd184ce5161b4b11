"""Plug-in model factories used by tests/test_models.py (loaded as 'tests.plugin_models:...')."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from torchscale.models import ModelBundle

NOT_CALLABLE = 3


def factory(hidden: int = 8) -> tuple[nn.Module, Any, Any]:
    """The minimal contract: a (model, make_batch, loss_fn) tuple."""
    model = nn.Sequential(nn.Linear(4, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(batch_size, 4, device=device), torch.randn(batch_size, 1, device=device)

    return model, make_batch, F.mse_loss


def bundle_factory(seq_len: int = 16) -> ModelBundle:
    """The full contract: a ModelBundle, kept as returned."""
    model, make_batch, loss_fn = factory()
    return ModelBundle(model, make_batch, loss_fn, "language", seq_len, (seq_len,), False)


def returns_pair() -> tuple[nn.Module, Any]:
    return nn.Linear(2, 2), F.mse_loss


def returns_non_module() -> tuple[Any, Any, Any]:
    return "model", F.mse_loss, F.mse_loss


def raises() -> None:
    raise RuntimeError("no GPU here")
