"""The memory estimate behind `batch_sizes: auto` and `config init`: the activation
count on the meta device against a real training step's saved tensors, and the fitting rule."""

from __future__ import annotations

import pytest
import torch

from torchscale.contracts.model_specs.registry import BUILTIN
from torchscale.orchestration.memory_estimate import (
    ACTIVATION_MARGIN,
    CUDA_CONTEXT_BYTES,
    GIB,
    MEMORY_BUDGET,
    fitting_batch,
)
from torchscale.rank.models import build_model
from torchscale.rank.models.activation_count import saved_activation_bytes


def _real_saved_bytes(name: str, dtype: torch.dtype) -> int:
    """What autograd saves in one sample's real CPU training step of `name`, the model and
    its float inputs in `dtype`: each storage once, weights and buffers left out."""
    torch.manual_seed(0)
    bundle = build_model(name)
    bundle.model.to(dtype)
    weights = {t.untyped_storage().data_ptr() for t in bundle.model.parameters()}
    weights |= {t.untyped_storage().data_ptr() for t in bundle.model.buffers()}
    kept: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in weights:
            kept[storage.data_ptr()] = storage.nbytes()
        return tensor

    inputs, targets = bundle.make_batch(1, torch.device("cpu"))
    if isinstance(inputs, torch.Tensor) and inputs.is_floating_point():
        inputs = inputs.to(dtype)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        bundle.step_loss(inputs, targets)
    return sum(kept.values())


def _meta_count(name: str, dtype: torch.dtype) -> int:
    with torch.device("meta"):
        bundle = build_model(name)
    return saved_activation_bytes(bundle, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-bert", "tiny-cnn", "tiny-mlp"])
def test_the_meta_count_is_what_a_real_step_saves(name: str, dtype: torch.dtype) -> None:
    """The count on the meta device, attention standing in for a fused kernel, equals to the
    byte what a real CPU step saves for backward: CPU's SDPA is a real fused (flash) kernel,
    so the stand-in is checked against one, and so are the dedup of views and the exclusion
    of weights. In bf16 a few small saved tensors (per-row statistics) differ in dtype
    between the meta and the CPU kernels: within 1 %."""
    meta, real = _meta_count(name, dtype), _real_saved_bytes(name, dtype)
    if dtype == torch.float32:
        assert meta == real
    else:
        assert meta == pytest.approx(real, rel=0.01)


def test_the_meta_count_sees_the_attention_inside_torchs_own_transformer() -> None:
    """nn.Transformer calls SDPA from inside torch (multi_head_attention_forward): the stand-in
    for a fused kernel reaches it too, and the count equals a real fp32 step's. (A real bf16
    step cannot be built the same way: the model casts part of its input itself.)"""
    assert _meta_count("tiny-transformer", torch.float32) == _real_saved_bytes(
        "tiny-transformer", torch.float32
    )


def test_the_stored_counts_follow_the_model_code() -> None:
    """The stored per-sample counts (what `config init` sizes from without importing torch)
    are the meta count at the model's defaults (tests/contracts/test_model_metadata.py checks every
    model; here the figure's meaning: bf16 is half of fp32 for GPT-2's bf16 stream)."""
    gpt2 = BUILTIN["gpt2"].measured
    assert gpt2.activation_bytes_bf16 == _meta_count("gpt2", torch.bfloat16)
    assert gpt2.activation_bytes_fp32 == pytest.approx(2 * gpt2.activation_bytes_bf16, rel=0.01)


def test_the_fitting_batch_is_the_largest_power_of_two_under_the_budget() -> None:
    memory, parameters, per_sample = 80 * GIB, 124_000_000, 0.4e9
    fit = fitting_batch(memory, parameters, per_sample, precision="fp32")
    budget = memory * MEMORY_BUDGET - CUDA_CONTEXT_BYTES - 16 * parameters
    assert fit.batch * per_sample * ACTIVATION_MARGIN <= budget
    assert 2 * fit.batch * per_sample * ACTIVATION_MARGIN > budget
    assert fit.batch & (fit.batch - 1) == 0 and "largest power of two" in fit.basis
    # 16-bit autocast keeps 16-bit weight copies: 2 more bytes per parameter, said so
    under_bf16 = fitting_batch(memory, 20 * parameters, per_sample, precision="bf16")
    under_fp32 = fitting_batch(memory, 20 * parameters, per_sample, precision="fp32")
    assert under_bf16.batch <= under_fp32.batch and "autocast copies" in under_bf16.basis


def test_the_fitting_batch_names_its_cap_and_a_model_that_does_not_fit() -> None:
    capped = fitting_batch(80 * GIB, 1000, 1e3, precision="fp32", limit=512)
    assert capped.batch == 512 and "max_batch_limit 512" in capped.basis
    at_the_cap = fitting_batch(80 * GIB, 1000, 1e3, precision="fp32", limit=600)
    assert at_the_cap.batch == 512 and "max_batch_limit 600" in at_the_cap.basis
    too_big = fitting_batch(16 * GIB, 10**9, 1e9, precision="fp32")
    assert too_big.batch == 1 and "even 1 does not fit" in too_big.basis
