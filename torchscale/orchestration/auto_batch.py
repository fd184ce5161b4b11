"""`batch_sizes: auto` (a config's default): the batch per device each model and precision
runs, chosen when the sweep is planned (the rule: docs/configuration.md, "batch_sizes: auto").

Why fill the GPU: a small batch measures launch overhead and the optimizer pass, not the
hardware (on one H100, GPT-2 at batch 8 kept the GPU 81.5 % busy). A model whose activations
cannot be counted is a config error naming it, so the sweep never starts on a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from torchscale.contracts.catalog import BUILTIN_MODELS
from torchscale.contracts.errors import UsageError
from torchscale.contracts.model_specs.registry import stored
from torchscale.orchestration.memory_estimate import CPU_BATCH, activation_bytes, fitting_batch


@dataclass(frozen=True)
class Footprint:
    """What the estimate needs of one model: its parameters and the bytes one sample's step
    saves for backward in fp32 and in bf16."""

    parameters: int
    activation_fp32: int
    activation_bf16: int


@dataclass(frozen=True)
class AutoBatch:
    """One model and precision's batch, and the line that says why."""

    batch: int
    note: str


def model_options(
    name: str, options: Mapping[str, Any], seq_len: int | None, image_size: int | None
) -> dict[str, Any]:
    """The options the cell builds `name` with: the config-wide sequence length and image
    size fill the options the model takes, its own options win (registry.build_model)."""
    takes = BUILTIN_MODELS.get(name, frozenset())
    resolved = dict(options)
    for key, value in (("seq_len", seq_len), ("image_size", image_size)):
        if value is not None and key in takes:
            resolved.setdefault(key, value)
    return resolved


def footprint(
    name: str, options: Mapping[str, Any], seq_len: int | None, image_size: int | None
) -> Footprint:
    """The model's stored footprint, or one counted on the meta device."""
    resolved = model_options(name, options, seq_len, image_size)
    facts = stored(name, resolved)
    if facts is not None:
        return Footprint(facts.parameters, facts.activation_bytes_fp32, facts.activation_bytes_bf16)
    return _counted(name, resolved, seq_len, image_size)


def _counted(
    name: str, options: Mapping[str, Any], seq_len: int | None, image_size: int | None
) -> Footprint:
    import torch

    from torchscale.rank.models import build_model, parameter_count
    from torchscale.rank.models.activation_count import saved_activation_bytes

    try:
        with torch.device("meta"):
            bundle = build_model(name, dict(options), seq_len=seq_len, image_size=image_size)
        parameters = parameter_count(bundle.model)
        fp32 = saved_activation_bytes(bundle, torch.float32)
        bf16 = saved_activation_bytes(bundle, torch.bfloat16)
    except Exception as exc:  # a plug-in that cannot build or run on the meta device
        raise UsageError(
            f"batch_sizes: auto cannot size model '{name}': building it and counting its "
            f"activations on the meta device failed ({type(exc).__name__}: {exc}); list "
            "batch_sizes to run it without an estimate"
        ) from None
    return Footprint(parameters, fp32, bf16)


def auto_batch(
    label: str,
    model: Callable[[], Footprint],
    precision: str,
    device: str,
    gpu_memory_bytes: int | None,
    gpu_memory_unknown: str,
    optimizer: str,
    limit: int,
) -> AutoBatch:
    """The batch per device of `label` at `precision` on `device`; `model` gives its
    footprint (asked only on CUDA, once the GPU's memory is known)."""
    if device != "cuda":
        batch = min(CPU_BATCH, limit)
        return AutoBatch(
            batch,
            f"{label} {precision}: batch {batch} (batch_sizes auto on CPU: host memory does "
            "not limit a CPU benchmark"
            + (f"; capped by memory.max_batch_limit {limit})" if batch < CPU_BATCH else ")"),
        )
    if gpu_memory_bytes is None:
        raise UsageError(
            f"batch_sizes: auto sizes each batch from the GPU's memory, which is unknown here "
            f"({gpu_memory_unknown}); list batch_sizes (torchscale config init --hardware "
            "NAME sizes them for a named node)"
        )
    facts = model()
    fit = fitting_batch(
        gpu_memory_bytes,
        facts.parameters,
        activation_bytes(facts.activation_fp32, facts.activation_bf16, precision),
        precision=precision,
        optimizer=optimizer,
        limit=limit,
    )
    return AutoBatch(fit.batch, f"{label} {precision}: batch {fit.batch} ({fit.basis})")
