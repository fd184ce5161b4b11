"""Whether this process's fp32 kernels may use TF32, read from torch's settings: which row of
the GPU peak table (contracts/gpu_peaks.py) MFU divides by depends on it."""

from __future__ import annotations

import os
from collections.abc import Callable

import torch

from torchscale.contracts.gpu_peaks import Tf32Settings


def _fp32_precision(read: Callable[[], object]) -> str | None:
    """A `fp32_precision` setting of torch >= 2.9 ('ieee', 'tf32', 'none'); None if absent."""
    try:
        value = read()
    except (AttributeError, RuntimeError):
        return None
    return value if isinstance(value, str) else None


def _legacy_flag(read: Callable[[], object]) -> bool | None:
    """A legacy `allow_tf32` flag; torch >= 2.9 raises when the new API set TF32 instead."""
    try:
        return bool(read())
    except RuntimeError:
        return None


def _value(flag: bool | None) -> str:
    return "" if flag is None else f"={flag}"


def read_tf32_settings() -> Tf32Settings:
    """Read torch's TF32 settings in this process, new API first.

    In torch 2.13 the new per-op setting (`torch.backends.cuda.matmul.fp32_precision`,
    `torch.backends.cudnn.conv.fp32_precision`) says 'tf32' or 'ieee' once anything set it;
    'none' means unset, and the legacy flag (`allow_tf32`, also moved by
    `torch.set_float32_matmul_precision`) then decides. Reading the legacy flag after the new
    API was used raises, hence this order. TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 forces TF32 for
    cuBLAS whatever the flags say.
    """
    matmul: bool | None
    new = _fp32_precision(lambda: torch.backends.cuda.matmul.fp32_precision)
    if os.environ.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE") == "1":
        matmul, matmul_source = True, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1"
    elif new in ("tf32", "ieee"):
        matmul = new == "tf32"
        matmul_source = f"torch.backends.cuda.matmul.fp32_precision='{new}'"
    else:
        matmul = _legacy_flag(lambda: torch.backends.cuda.matmul.allow_tf32)
        matmul_source = "torch.backends.cuda.matmul.allow_tf32" + _value(matmul)
    conv: bool | None
    conv_module = getattr(torch.backends.cudnn, "conv", None)
    new = _fp32_precision(lambda: conv_module.fp32_precision) if conv_module else None
    if new in ("tf32", "ieee"):
        conv = new == "tf32"
        conv_source = f"torch.backends.cudnn.conv.fp32_precision='{new}'"
    else:
        conv = _legacy_flag(lambda: torch.backends.cudnn.allow_tf32)
        conv_source = "torch.backends.cudnn.allow_tf32" + _value(conv)
    return Tf32Settings(matmul, conv, matmul_source, conv_source)
