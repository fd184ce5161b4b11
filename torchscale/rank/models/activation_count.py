"""The activation memory of one sample's training step, counted on the meta device.

What a training step holds beyond its weights, gradients and optimizer state is, at its peak,
the tensors autograd saved in forward for backward. Building the model on the meta device and
running one sample's loss under `saved_tensors_hooks` lists every saved tensor without
allocating a byte or running a kernel; counting each distinct one once (a view counts as the
tensor it views; weights and their views are not activations) gives the bytes one sample adds
to the peak. `memory_estimate.py` turns it into the batch that fits a GPU.

Two things the meta device would count wrong are set right here:
- attention: on meta, `scaled_dot_product_attention` takes its MATH path, which saves the
  seq x seq attention weights of every head; every GPU the zoo benchmarks on runs a fused
  kernel (flash or memory-efficient), which saves q, k, v, the output and one fp32 logsumexp
  per query row. The count replaces the call by a stand-in that saves exactly that.
- precision: autocast has no meta dispatch, so a bf16 cell is counted with the model cast to
  bf16: what a bf16 cell saves with bf16 activations on (training.bf16_activations), the
  cell's default. fp32 counts fp32; an amp cell (fp16 autocast, its residual stream fp32)
  saves less than fp32 and is given the fp32 count, an upper bound.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from torchscale.rank.models.bundle import ModelBundle


class _FusedAttentionFootprint(torch.autograd.Function):
    """Saves what a fused attention kernel saves for backward (q, k, v, output, logsumexp);
    computes nothing (meta tensors only)."""

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        # (batch, heads, seq, dim) over (batch, seq, heads, dim) memory, as the fused kernels
        # return it: the usual transpose(1, 2).reshape back to (batch, seq, hidden) is then a
        # view of the saved output, not a second tensor
        batch, heads, seq = q.shape[:-1]
        out = q.new_empty(batch, seq, heads, v.shape[-1]).transpose(1, 2)
        logsumexp = q.new_empty(q.shape[:-1], dtype=torch.float32)
        ctx.save_for_backward(q, k, v, out, logsumexp)
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, ...]:
        q, k, v, _, _ = ctx.saved_tensors
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _fused_attention(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *args: Any, **kwargs: Any
) -> torch.Tensor:
    out: torch.Tensor = _FusedAttentionFootprint.apply(  # type: ignore[no-untyped-call]
        query, key, value
    )
    return out


class _AttentionAsFusedKernels(TorchFunctionMode):
    """Routes every `scaled_dot_product_attention` call made under it (however the model
    imported the function) to the stand-in; a torch function mode is this thread's only, so a
    model running in another thread is untouched."""

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention:
            return _fused_attention(*args, **kwargs)
        return func(*args, **kwargs)


def saved_activation_bytes(bundle: ModelBundle, dtype: torch.dtype) -> int:
    """Bytes autograd keeps for backward in one sample's training step of `bundle` (built on
    the meta device), its floating-point weights and inputs cast to `dtype`."""
    meta = torch.device("meta")
    model = bundle.model.to(dtype)
    weights = {id(p) for p in model.parameters()} | {id(b) for b in model.buffers()}
    kept: dict[int, torch.Tensor] = {}  # holds each tensor so its id stays its own

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        base = tensor._base if tensor._base is not None else tensor
        if id(base) not in weights:
            kept[id(base)] = base
        return tensor

    inputs, targets = bundle.make_batch(1, meta)
    inputs = _cast_floating(inputs, dtype)
    with _AttentionAsFusedKernels(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        bundle.step_loss(inputs, targets)
    return sum(t.numel() * t.element_size() for t in kept.values())


def _cast_floating(inputs: Any, dtype: torch.dtype) -> Any:
    """The batch's floating-point tensors in `dtype` (images); token ids stay integers."""
    if isinstance(inputs, torch.Tensor):
        return inputs.to(dtype) if inputs.is_floating_point() else inputs
    return tuple(_cast_floating(x, dtype) for x in inputs) if isinstance(inputs, tuple) else inputs
