"""Plug-in model factories that bring their own batches, for tests/rank/test_plugin_batches.py
(loaded
as 'tests.plugin_batch_models:...'; the real run puts the repo root on PYTHONPATH through
`launcher.env`). Nothing in torchscale knows about them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from torchscale.rank.models import ModelBundle

FEATURES = 4


def _model() -> nn.Module:
    return nn.Sequential(nn.Linear(FEATURES, 8), nn.ReLU(), nn.Linear(8, 1))


def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    return (
        torch.randn(batch_size, FEATURES, device=device),
        torch.randn(batch_size, 1, device=device),
    )


def counting_batches(batch_size: int, device: torch.device) -> list[tuple[Any, Any]]:
    """Three batches on the host (the pipeline moves them), the inputs' first value numbering
    them 0, 1, 2 so a test can tell them apart."""
    return [
        (torch.full((batch_size, FEATURES), float(i)), torch.zeros(batch_size, 1)) for i in range(3)
    ]


def four_tuple() -> tuple[nn.Module, Any, Any, Any]:
    return _model(), make_batch, F.mse_loss, counting_batches


def bundle() -> ModelBundle:
    return ModelBundle(
        _model(),
        make_batch,
        F.mse_loss,
        "other",
        None,
        (FEATURES,),
        False,
        batches=counting_batches,
    )


def four_tuple_not_callable() -> tuple[nn.Module, Any, Any, Any]:
    return _model(), make_batch, F.mse_loss, [1, 2]


def five_tuple() -> tuple[Any, ...]:
    return (*four_tuple(), counting_batches)


def bundle_not_callable() -> ModelBundle:
    made = bundle()
    made.batches = "data/"  # type: ignore[assignment]
    return made


def sleepy(sleep_ms: float = 30.0, on_rank: int = 1, per_epoch: int = 3) -> Any:
    """A tiny model whose batches on rank `on_rank` take `sleep_ms` each (a slow loader), from
    a generator of `per_epoch` batches, so a run also crosses epochs."""

    def batches(batch_size: int, device: torch.device) -> Iterator[tuple[Any, Any]]:
        slow = int(os.environ.get("RANK", "0")) == on_rank
        for _ in range(per_epoch):
            if slow:
                time.sleep(sleep_ms / 1000)
            yield make_batch(batch_size, device)

    return _model(), make_batch, F.mse_loss, batches
