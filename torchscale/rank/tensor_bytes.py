"""Bytes a rank holds for training: its parameters, their gradients and its optimizers' state.
One count for the worker's cells and a user's job alike."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch


def local_bytes(tensor: torch.Tensor) -> int:
    local = tensor.to_local() if hasattr(tensor, "to_local") else tensor  # FSDP2 DTensor shard
    return int(local.numel() * local.element_size())


def static_bytes(params: list[torch.Tensor], optimizers: Iterable[Any]) -> dict[str, int]:
    """Exact bytes of `params`, their gradients (one per trainable parameter, same dtype) and
    the optimizers' state tensors, held by this rank."""
    state = sum(
        local_bytes(value)
        for optimizer in optimizers
        for per_param in optimizer.state.values()
        for value in per_param.values()
        if isinstance(value, torch.Tensor)
    )
    return {
        "parameter_bytes": sum(local_bytes(p) for p in params),
        "gradient_bytes": sum(local_bytes(p) for p in params if p.requires_grad),
        "optimizer_state_bytes": state,
    }
