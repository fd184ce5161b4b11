"""Mixed precision: autocast for the forward/loss, GradScaler for fp16 ('amp'), and the FSDP2
MixedPrecisionPolicy for bf16 cells under FSDP (which then run without autocast)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from torch.distributed.fsdp import MixedPrecisionPolicy

AUTOCAST_DTYPES = {"amp": torch.float16, "bf16": torch.bfloat16}


def autocast_factory(
    precision: str, device: torch.device, policy: MixedPrecisionPolicy | None = None
) -> Callable[[], Any]:
    """A zero-argument callable returning the autocast context for one forward pass.

    None under an FSDP2 MixedPrecisionPolicy: the policy already hands every unit bf16
    parameters and inputs, and autocast on top adds a dispatch-time cast check to every op of
    a step whose host work is its bound (torchtitan runs FSDP without autocast for the same
    reason). The loss then gets fp32 logits from `upcast_loss`, as autocast would give it.
    """
    dtype = AUTOCAST_DTYPES.get(precision)
    if dtype is None or policy is not None:
        return contextlib.nullcontext
    return lambda: torch.autocast(device_type=device.type, dtype=dtype)


def upcast_loss(loss_fn: Callable[..., Any]) -> Callable[..., Any]:
    """`loss_fn` over the model's floating outputs cast to fp32: without autocast, a bf16
    model's logits would reach cross entropy in bf16 (torchtitan upcasts them the same way)."""
    from torch.utils._pytree import tree_map

    def upcast(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return value.float()
        return value

    def loss(output: Any, targets: Any) -> Any:
        return loss_fn(tree_map(upcast, output), targets)

    return loss


def grad_scaler(precision: str, device: torch.device) -> torch.amp.GradScaler | None:
    """fp16 needs loss scaling; bf16 and fp32 do not. (Its inf check costs one host sync
    per optimizer step: part of what fp16 training really costs.)"""
    return torch.amp.GradScaler(device.type) if precision == "amp" else None


FSDP_PARAM_DTYPES = {"bf16": torch.bfloat16}


def fsdp_policy(precision: str) -> MixedPrecisionPolicy | None:
    """The policy bf16 FSDP training runs with: bf16 parameters for the all-gathers and the
    compute, fp32 gradient reduce-scatter (bf16 sums over many ranks lose precision). Without
    it FSDP would all-gather fp32 parameters, twice the bytes a real bf16 run moves.

    None for fp32 (nothing to cast) and for amp: fp16 cells keep fp32 parameters and fp32
    communication under FSDP, with autocast for the compute; an fp16 policy is not modelled.
    """
    dtype = FSDP_PARAM_DTYPES.get(precision)
    if dtype is None:
        return None
    from torch.distributed.fsdp import MixedPrecisionPolicy

    return MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32)


def norm_policy(policy: MixedPrecisionPolicy) -> MixedPrecisionPolicy:
    """For BatchNorm units under a low-precision policy: fp32 parameters (CUDA's batch norm
    refuses bf16 weights next to its fp32 running statistics), output cast to the compute
    dtype so the next layer sees what it would have seen. FSDP1 did the same by default."""
    from torch.distributed.fsdp import MixedPrecisionPolicy

    return MixedPrecisionPolicy(output_dtype=policy.param_dtype)


def describe_policy(policy: MixedPrecisionPolicy | None) -> dict[str, str | None]:
    """The policy as recorded with the result (dtype names; None = the parameters' own)."""
    if policy is None:
        return {"param_dtype": None, "reduce_dtype": None}
    return {name: dtype_name(getattr(policy, name)) for name in ("param_dtype", "reduce_dtype")}


def dtype_name(dtype: torch.dtype | None) -> str | None:
    return None if dtype is None else str(dtype).removeprefix("torch.")
