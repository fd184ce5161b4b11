"""The encoder-decoder `transformer` benchmark model, built on `torch.nn.Transformer`.

Architecture defaults are those of the encoder-decoder benchmark users know (seed 003): d_model
128, 4 heads, 3 encoder and 3 decoder layers, feed-forward 512 ("~3.5M parameters"). It does
not state the rest, so these are ours: dropout 0.1 (nn.Transformer's default), vocab_size 8,192,
seq_len 128 (source and target length; its large example raises it to 512). Around
nn.Transformer: one token embedding shared by source and target (scaled by sqrt(d_model)),
sinusoidal positions (no parameters, so seq_len does not change the count), a causal decoder
and an untied output projection with bias. Total with the defaults: exactly 3,494,400
parameters (1,389,056 in nn.Transformer, 1,048,576 embedding, 1,056,768 projection)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from torchscale.errors import ModelError
from torchscale.models import tasks
from torchscale.models.bundle import ModelBundle
from torchscale.models.options import divisible, positive_int, probability

DEFAULTS: dict[str, int | float] = {
    "d_model": 128,
    "nhead": 4,
    "num_encoder_layers": 3,
    "num_decoder_layers": 3,
    "dim_feedforward": 512,
    "dropout": 0.1,
    "seq_len": 128,
    "vocab_size": 8192,
}
DEFAULT_PARAMETERS = 3_494_400


def sinusoidal_positions(seq_len: int, d_model: int, device: torch.device) -> torch.Tensor:
    """The fixed sin/cos position table of "Attention Is All You Need", shape (seq_len, d_model)."""
    position = torch.arange(seq_len, device=device, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(
        torch.arange(0, d_model, 2, device=device, dtype=torch.float32)
        * (-math.log(10000.0) / d_model)
    )
    table = torch.zeros(seq_len, d_model, device=device)
    table[:, 0::2] = torch.sin(position * freq)
    table[:, 1::2] = torch.cos(position * freq)
    return table


class Seq2SeqTransformer(nn.Module):
    """Shared embedding + positions, nn.Transformer (batch first, causal decoder), projection."""

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        nhead: int,
        num_encoder_layers: int,
        num_decoder_layers: int,
        dim_feedforward: int,
        dropout: float,
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.dropout = nn.Dropout(dropout)
        self.transformer = nn.Transformer(
            d_model=d_model,
            nhead=nhead,
            num_encoder_layers=num_encoder_layers,
            num_decoder_layers=num_decoder_layers,
            dim_feedforward=dim_feedforward,
            dropout=dropout,
            batch_first=True,
        )
        self.output = nn.Linear(d_model, vocab_size)

    def _embed(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = sinusoidal_positions(tokens.shape[1], self.d_model, tokens.device)
        y: torch.Tensor = self.dropout(self.embedding(tokens) * math.sqrt(self.d_model) + positions)
        return y

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1], device=tgt.device)
        out = self.transformer(
            self._embed(src), self._embed(tgt), tgt_mask=causal, tgt_is_causal=True
        )
        y: torch.Tensor = self.output(out)
        return y


def seq2seq_transformer(
    options: Mapping[str, Any], *, name: str = "transformer", defaults: Mapping[str, Any] = DEFAULTS
) -> ModelBundle:
    """Build an encoder-decoder bundle; options missing from `options` come from `defaults`."""
    unknown = sorted(set(options) - set(DEFAULTS))
    if unknown:
        raise ModelError(f"model '{name}': unknown option(s) {', '.join(unknown)}")
    opts = {**defaults, **options}
    ints = {key: positive_int(name, key, opts[key]) for key in DEFAULTS if key != "dropout"}
    dropout = probability(name, "dropout", opts["dropout"])
    divisible(
        name, "d_model", ints["d_model"], ints["nhead"], "d_model is split across nhead heads"
    )
    divisible(name, "d_model", ints["d_model"], 2, "sinusoidal positions pair sin and cos")
    model = Seq2SeqTransformer(
        vocab_size=ints["vocab_size"],
        d_model=ints["d_model"],
        nhead=ints["nhead"],
        num_encoder_layers=ints["num_encoder_layers"],
        num_decoder_layers=ints["num_decoder_layers"],
        dim_feedforward=ints["dim_feedforward"],
        dropout=dropout,
    )
    seq_len = ints["seq_len"]
    task = tasks.sequence_to_sequence(ints["vocab_size"], seq_len)
    return tasks.language_bundle(model, task, seq_len)


def transformer(**options: Any) -> ModelBundle:
    """The built-in `transformer`: 3,494,400 parameters with the defaults."""
    return seq2seq_transformer(options)
