"""Mixed precision: autocast for the forward/loss, GradScaler for fp16 ('amp')."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch

AUTOCAST_DTYPES = {"amp": torch.float16, "bf16": torch.bfloat16}


def autocast_factory(precision: str, device: torch.device) -> Callable[[], Any]:
    """A zero-argument callable returning the autocast context for one forward pass."""
    dtype = AUTOCAST_DTYPES.get(precision)
    if dtype is None:
        return contextlib.nullcontext
    return lambda: torch.autocast(device_type=device.type, dtype=dtype)


def grad_scaler(precision: str, device: torch.device) -> torch.amp.GradScaler | None:
    """fp16 needs loss scaling; bf16 and fp32 do not. (Its inf check costs one host sync
    per optimizer step: part of what fp16 training really costs.)"""
    if precision != "amp":
        return None
    return torch.amp.GradScaler(device.type)
