"""The workload options of the zoo's language models (GPT-2s, BERTs): dropout, the padded
vocabulary, and `faithful`, which restores both as published.

The defaults are the speed references' (model_specs/shared_options.py); why, and what each
changes, is in docs/models.md. A padded model's loss reads the real logits only
(token_loss.TokenLoss), so the loss and every real weight's gradient are the unpadded model's.
"""

from __future__ import annotations

from torchscale.contracts.model_specs.shared_options import PUBLISHED, SPEED_DEFAULTS
from torchscale.rank.models.option_values import at_most, positive_int, probability

DEFAULT_DROPOUT = float(SPEED_DEFAULTS["dropout"])
DEFAULT_PAD_VOCAB_TO = int(SPEED_DEFAULTS["pad_vocab_to"])
MAX_PAD_VOCAB_TO = 4096  # padding is for GEMM tiles: a few hundred rows at most


def resolve(name: str, dropout: float, pad_vocab_to: int, faithful: bool) -> tuple[float, int]:
    """(dropout, pad_vocab_to) the model is built with: the published pair under `faithful`
    (the registry refuses either beside it), else the given ones, checked."""
    if faithful:
        return float(PUBLISHED["dropout"]), int(PUBLISHED["pad_vocab_to"])
    pad = positive_int(name, "pad_vocab_to", pad_vocab_to)
    return probability(name, "dropout", dropout), at_most(
        name, "pad_vocab_to", pad, MAX_PAD_VOCAB_TO, "padding is for GEMM tiles"
    )


def padded(vocab_size: int, pad_vocab_to: int) -> int:
    """Rows of the token embedding and output GEMM: the vocabulary rounded up."""
    return -(-vocab_size // pad_vocab_to) * pad_vocab_to
