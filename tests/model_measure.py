"""The figures a model spec stores (`Measured`), measured: the model built on the meta device,
its FLOPs counted by torch's FlopCounterMode and its saved activations by the package's own
count. The specs' figures are tested against this (tests/contracts/test_model_metadata.py,
tests/rank/test_adding_a_model.py); nothing in the package measures them at run time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from torchscale.contracts.model_specs.spec import Measured
from torchscale.rank.models.activation_count import saved_activation_bytes
from torchscale.rank.models.bundle import ModelBundle, call_model
from torchscale.rank.models.registry import build_model, parameter_count


def measure(name: str, options: Mapping[str, Any] | None = None) -> Measured:
    """What `torchscale list` states of a model, found by building it on the meta device (no
    memory, no kernels): what the stored figures of the built-in models (their specs'
    `measured`) are tested against, and what a new model's are made from."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    meta = torch.device("meta")
    with meta:
        bundle = build_model(name, options)
    with sdpa_kernel(SDPBackend.MATH):  # attention as matmuls: every op has a FLOP formula
        forward, train = _flops_per_sample(bundle, meta)
    counted = (torch.float32, torch.bfloat16)
    activations = {dtype: saved_activation_bytes(bundle, dtype) for dtype in counted}
    return Measured(
        kind=bundle.kind,
        parameters=parameter_count(bundle.model),
        input_shape=bundle.input_shape,
        tokens_per_sample=bundle.tokens_per_sample,
        forward_flops=forward,
        train_flops=train,
        activation_bytes_fp32=activations[torch.float32],
        activation_bytes_bf16=activations[torch.bfloat16],
    )


def _flops_per_sample(bundle: ModelBundle, device: torch.device) -> tuple[int, int]:
    """FLOPs of one sample: the forward pass, and forward + backward of its loss (a step)."""
    from torch.utils.flop_counter import FlopCounterMode

    inputs, targets = bundle.make_batch(1, device)
    with torch.no_grad(), FlopCounterMode(display=False) as forward:
        call_model(bundle.model, inputs)
    with FlopCounterMode(display=False) as train:
        torch.autograd.backward(bundle.step_loss(inputs, targets))
    return int(forward.get_total_flops()), int(train.get_total_flops())
