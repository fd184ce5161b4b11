"""The option sets several built-in models share, with their defaults.

The language models of the zoo (GPT-2s, BERTs) train as speed references do unless a config
asks for the published model: dropout 0 and the vocabulary padded to a multiple of 64 (its pad
logits never reach the loss); `faithful: true` is the model as published (dropout 0.1,
vocabulary unpadded). docs/models.md says why; models/workload.py builds by these values.
"""

from __future__ import annotations

from torchscale.contracts.model_specs.spec import OptionValue

# the ImageNet classifiers' options: 224x224 images, 1000 classes
IMAGENET: dict[str, OptionValue] = {"image_size": 224, "num_classes": 1000}

WORKLOAD_OPTIONS = frozenset({"dropout", "pad_vocab_to", "faithful"})
SPEED_DEFAULTS: dict[str, int | float] = {"dropout": 0.0, "pad_vocab_to": 64}
PUBLISHED: dict[str, int | float] = {"dropout": 0.1, "pad_vocab_to": 1}


def language_options(seq_len: int) -> dict[str, OptionValue]:
    """The options of a language model of the zoo and their defaults: its sequence length and
    the workload options, speed-first."""
    return {"seq_len": seq_len, **SPEED_DEFAULTS, "faithful": False}
