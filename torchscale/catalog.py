"""Layer 1 (contracts): the names a config may refer to, which cells and results carry too:
built-in models and the options each one accepts, precisions, strategies, pipeline schedules,
hybrid layouts and collectives (one source for each; what each collective is, for the comm
sweep, the nccl-tests importer and the trace analyses: collective_facts.py).

Kept apart from the model code so that validating a config never imports torch. The model
registry (torchscale.worker) must define exactly these names; a test holds the two together.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

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

# GPT-2s: dropout 0 unless set (speed references train with none); 0.1 is GPT-2 as published
GPT2_OPTIONS = LM_OPTIONS | {"dropout"}

# name -> architecture options a config may set under `models: [{name: ..., options: {...}}]`
BUILTIN_MODELS: dict[str, frozenset[str]] = {
    "resnet18": VISION_OPTIONS,
    "resnet50": VISION_OPTIONS,
    "vit-b16": VISION_OPTIONS,
    "bert-base": LM_OPTIONS,
    "bert-large": LM_OPTIONS,
    "gpt2": GPT2_OPTIONS,
    "gpt2-medium": GPT2_OPTIONS,
    "gpt2-large": GPT2_OPTIONS,
    "transformer": TRANSFORMER_OPTIONS,
    # tiny variants: same code paths, sized for tests and CPU demos
    "tiny-mlp": frozenset({"hidden", "layers"}),
    "tiny-cnn": VISION_OPTIONS,
    "tiny-gpt2": GPT2_OPTIONS,
    "tiny-bert": LM_OPTIONS,
    "tiny-transformer": TRANSFORMER_OPTIONS,
}

# "package.module:factory" plugs in a user model (the factory returns model, batch maker, loss)
PLUGIN_MODEL_PATTERN = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")

# the names a config, a cell and a result share: each a type, and its values as a tuple
Precision = Literal["fp32", "amp", "bf16"]
Strategy = Literal["ddp", "fsdp", "tp", "pp", "hybrid"]
Schedule = Literal["gpipe", "1f1b", "interleaved_1f1b"]
HybridLayout = Literal["fsdp_tp", "ddp_pp"]
Collective = Literal[
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv"
]
PRECISIONS: tuple[Precision, ...] = get_args(Precision)
STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)
COLLECTIVES: tuple[Collective, ...] = get_args(Collective)


def is_plugin_model(name: str) -> bool:
    """True when `name` names a user factory rather than a built-in model."""
    return bool(PLUGIN_MODEL_PATTERN.match(name))
