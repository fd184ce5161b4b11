"""What a built-in model is, as data: `BuiltinModelSpec`, and the facts it is made of.

The spec is frozen and torch-free; its builder is a "module:function" string that only the
rank side imports (torchscale/rank/models/registry.py). The stored figures (`Measured`, the
strategies) are what building the model says at its defaults: tests/contracts/test_model_metadata.py
builds every model and fails, printing the value to paste, the moment one differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

# the training task a built-in model runs (its batch maker in models/training_tasks.py), and so
# which data sources can feed it (contracts/model_tasks.py)
Task = Literal["classification", "next-token", "masked-tokens", "seq2seq"]
# an option's value: its default's type is the check the value gets (models/registry.py)
OptionValue = int | float | bool


@dataclass(frozen=True, kw_only=True)
class Measured:
    """What building a model on the meta device tells, for any model. FLOPs are counted by
    FlopCounterMode (2 x multiply-accumulates; matmuls and convolutions, attention under the
    MATH backend) for one sample at the model's options: `forward_flops` the forward pass,
    `train_flops` forward and backward of the loss, the work of a training step.
    `activation_bytes_fp32` / `_bf16`: what one sample's training step saves for backward,
    in fp32 and in bf16 (models/activation_count.py: attention as a fused kernel saves it),
    the per-sample term of the memory estimate (orchestration/memory_estimate.py)."""

    kind: str  # ModelBundle.kind: vision (RGB images), language (tokens), other
    parameters: int
    input_shape: tuple[int, ...]
    tokens_per_sample: int | None
    forward_flops: int
    train_flops: int
    activation_bytes_fp32: int
    activation_bytes_bf16: int


@dataclass(frozen=True)
class TrainingTraits:
    """What training_defaults.py decides a cell's defaults by, known without building the
    model; tests/rank/test_models.py holds each to the built model."""

    conv_net: bool = False  # it convolves (ModelBundle.conv_net): where channels_last acts
    bf16_stream: bool = False  # its residual stream is models/layers.py's: bf16_activations acts
    token_loss: bool = False  # its loss is models/token_loss.py's: eager cells run it blockwise


@dataclass(frozen=True, kw_only=True)
class BuiltinModelSpec:
    """One built-in model: every fact torchscale keeps of it, in one place.

    `defaults` names every option the model accepts with its default (an option is never
    accepted without one); `builder(**options)` receives all of them, defaults filled in.
    `description`, `family`, `measured` and `strategies` are its row of `torchscale list`."""

    name: str
    family: str
    description: str  # which variant it is and its exact parameter count with the defaults
    builder: str  # "package.module:function" returning its ModelBundle; imported by ranks only
    defaults: Mapping[str, OptionValue]
    task: Task
    training: TrainingTraits = field(default_factory=TrainingTraits)
    measured: Measured  # at the defaults
    strategies: tuple[str, ...]  # ddp, fsdp; tp, pp, hybrid where its plan splits over 2 ranks

    def __post_init__(self) -> None:
        module, _, function = self.builder.partition(":")
        if not (module and function):
            raise ValueError(f"model '{self.name}': builder must be 'module:function'")
        object.__setattr__(self, "defaults", MappingProxyType(dict(self.defaults)))

    @property
    def options(self) -> frozenset[str]:
        """The option names this model accepts."""
        return frozenset(self.defaults)

    @property
    def takes_images(self) -> bool:
        """Whether its inputs are RGB images (an image data set can feed it)."""
        return self.measured.kind == "vision"
