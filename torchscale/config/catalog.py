"""Names the config may refer to: built-in models and the options each one accepts.

Kept apart from the model code so that validating a config never imports torch. The model
registry (torchscale.worker) must define exactly these names; a test holds the two together.
"""

from __future__ import annotations

import re

VISION_OPTIONS = frozenset({"image_size", "num_classes"})
LM_OPTIONS = frozenset({"seq_len"})
TRANSFORMER_OPTIONS = frozenset(
    {
        "d_model",
        "nhead",
        "num_encoder_layers",
        "num_decoder_layers",
        "dim_feedforward",
        "dropout",
        "seq_len",
        "vocab_size",
    }
)

# name -> architecture options a config may set under `models: [{name: ..., options: {...}}]`
BUILTIN_MODELS: dict[str, frozenset[str]] = {
    "resnet18": VISION_OPTIONS,
    "resnet50": VISION_OPTIONS,
    "vit-b16": VISION_OPTIONS,
    "bert-base": LM_OPTIONS,
    "bert-large": LM_OPTIONS,
    "gpt2": LM_OPTIONS,
    "gpt2-medium": LM_OPTIONS,
    "gpt2-large": LM_OPTIONS,
    "transformer": TRANSFORMER_OPTIONS,
    # tiny variants: same code paths, sized for tests and CPU demos
    "tiny-mlp": frozenset({"hidden", "layers"}),
    "tiny-cnn": VISION_OPTIONS,
    "tiny-gpt2": LM_OPTIONS,
    "tiny-bert": LM_OPTIONS,
    "tiny-transformer": TRANSFORMER_OPTIONS,
}

# "package.module:factory" plugs in a user model (the factory returns model, batch maker, loss)
PLUGIN_MODEL_PATTERN = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")

PRECISIONS = ("fp32", "amp", "bf16")
STRATEGIES = ("ddp", "fsdp", "tp", "pp", "hybrid")
COLLECTIVES = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "broadcast",
    "reduce",
    "all_to_all",
    "send_recv",
)


def is_plugin_model(name: str) -> bool:
    """True when `name` names a user factory rather than a built-in model."""
    return bool(PLUGIN_MODEL_PATTERN.match(name))
