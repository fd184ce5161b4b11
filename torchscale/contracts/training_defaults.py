"""What a training option left null means for one cell, decided in one place.

The plan writes each resolved value into the cell's definition (so its id and `--resume`
follow what the cell trains with: a result measured with another optimizer kernel or loss is
never reused as today's), and the rank trains by the same values: the compile switch, bf16
activations, fused AdamW, channels_last and which loss runs are each one answer, not a
default the plan and the rank could read differently. docs/models.md explains each default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from torchscale.contracts.finding import Finding
from torchscale.contracts.model_specs.registry import BUILTIN

# The facts of the built-in models the defaults need without building one, read from their
# specs' TrainingTraits (model_specs/spec.py; tests/rank/test_models.py holds them to the models).
# Where channels_last has anything to change:
CONV_NETS = frozenset(name for name, spec in BUILTIN.items() if spec.training.conv_net)
# whose residual stream is torchscale's (models/layers.py): where bf16_activations does anything
BF16_STREAM_MODELS = frozenset(name for name, spec in BUILTIN.items() if spec.training.bf16_stream)
# whose loss is models/token_loss.py's: an eager cell computes it a block of rows at a time
BLOCKWISE_LOSS_MODELS = frozenset(
    name for name, spec in BUILTIN.items() if spec.training.token_loss
)

LossKind = Literal["compiled", "blockwise", "plain"]

# Raised whenever a change makes the same definition train differently (a kernel, a loss, a
# wrapper the config has no switch for): it is part of every cell's definition, so every id
# moves and --resume reruns what was measured the old way instead of mixing two workloads in
# one table. Revision 1 is the workload trained today (no DDP wrapper at world size 1, fused
# AdamW on CPU, the blockwise token loss, the loss compiled beside a compiled model, the
# attention's q/k/v split without a copy in backward); a definition without it predates them.
WORKLOAD_REVISION = 1


# under this many parameters a model's CUDA step is launch-bound: compile's graph wrappers and
# its 5-15 s per cell cost more than its fused kernels save
COMPILE_MIN_PARAMETERS = 10_000_000


def builtin_parameters(model: str, options: Mapping[str, object]) -> int | None:
    """A built-in model's parameter count at its default options (its spec's measured count);
    None for a plug-in or other options, which the host cannot know without building it."""
    spec = BUILTIN.get(model)
    if spec is None or any(spec.defaults.get(k, v) != v for k, v in options.items()):
        return None
    return spec.measured.parameters


def resolve_compile(
    compile_: bool | None, device: str, pipeline: bool, parameters: int | None = None
) -> bool:
    """`training.compile`: as set, else on for CUDA cells but pipelines (whose schedule calls
    the stage modules itself) and models known to have fewer than COMPILE_MIN_PARAMETERS
    (`compile_note` says so in the cell), and off on CPU, where inductor's C++ compile takes
    minutes and its kernels are not what a GPU benchmark runs."""
    if compile_ is not None:
        return compile_
    small = parameters is not None and parameters < COMPILE_MIN_PARAMETERS
    return device == "cuda" and not pipeline and not small


def compile_note(
    compile_: bool | None, device: str, pipeline: bool, parameters: int | None
) -> Finding | None:
    """Why a CUDA cell left to the default does not compile because its model is small (worded
    in contracts/wording/plan_skips.py); None where the default is not that rule's."""
    if compile_ is not None or device != "cuda" or pipeline or parameters is None:
        return None
    if parameters >= COMPILE_MIN_PARAMETERS:
        return None
    figures = {"parameters": parameters, "min_parameters": COMPILE_MIN_PARAMETERS}
    return Finding(code="plan.compile_small_model", figures=figures)


def resolve_bf16_activations(bf16_activations: bool | None, precision: str, model: str) -> bool:
    """`training.bf16_activations`: on (unless set false) in a bf16 cell of a model whose
    residual stream is torchscale's (BF16_STREAM_MODELS); off elsewhere, where it
    would change nothing but the cell's id."""
    return precision == "bf16" and model in BF16_STREAM_MODELS and bf16_activations is not False


def resolve_fused_optimizer(fused_optimizer: bool | None, optimizer: str) -> bool:
    """`training.fused_optimizer`: AdamW's fused kernel unless set false (CUDA and CPU both
    have it in every torch torchscale supports; a rank whose torch lacks it falls back and its
    result says so); SGD has no fused path here."""
    return optimizer == "adamw" and fused_optimizer is not False


def builtin_conv_net(model: str) -> bool | None:
    """Whether a built-in model convolves (its spec says); None for a plug-in, which the host
    cannot know without building it."""
    spec = BUILTIN.get(model)
    return None if spec is None else spec.training.conv_net


def resolve_channels_last(
    channels_last: bool | None, device: str, conv_net: bool | None
) -> bool | None:
    """`training.channels_last`: as set, else on for a conv net on CUDA and off otherwise.
    None while `conv_net` is unknown (the plan, for a plug-in): the rank then asks again with
    the model it built (ModelBundle.conv_net). The plan asks with `builtin_conv_net`."""
    if channels_last is not None or conv_net is None:
        return channels_last
    return conv_net and device == "cuda"


def resolve_loss(*, compiled: bool, pipeline: bool, blockwise_available: bool) -> LossKind:
    """Which loss a cell's measured steps run: compiled beside a compiled model; in a pipeline
    the last stage's plain loss; else the blockwise token loss where the model has one, the
    plain loss otherwise. The plan asks with the spec's answer (BLOCKWISE_LOSS_MODELS), the
    rank with the model it built: the same function, so the two cannot disagree."""
    if pipeline:
        return "plain"
    if compiled:
        return "compiled"
    return "blockwise" if blockwise_available else "plain"
