"""nn.Transformer's layers as pipeline blocks that carry two tensors across every cut.

Through the encoder layers the pair is (source hidden, target embedding), through the decoder
layers (encoder memory, decoder hidden), since every decoder layer cross-attends to the memory.
A stage that does not touch one of them returns its received tensor as is; PipelineStage sends
it on and, in backward, hands the gradient it receives for it straight back (plus what the
stage's own layers add).
"""

from __future__ import annotations

import torch
from torch import nn

Pair = tuple[torch.Tensor, torch.Tensor]
Layer = nn.TransformerEncoderLayer | nn.TransformerDecoderLayer


def transformer_layers(transformer: nn.Transformer) -> list[Layer]:
    """The encoder layers, then the decoder layers."""
    stacks = (transformer.encoder.layers, transformer.decoder.layers)
    return [m for stack in stacks for m in stack if isinstance(m, Layer)]


class EncoderUnit(nn.Module):
    """One encoder layer on the source hidden state (the last one followed by nn.Transformer's
    encoder norm); the target embedding passes through for the decoder stages."""

    def __init__(self, layer: nn.TransformerEncoderLayer, norm: nn.Module | None) -> None:
        super().__init__()
        self.layer, self.norm = layer, norm

    def forward(self, pair: Pair) -> Pair:
        h, tgt = pair
        h = self.layer(h)
        if self.norm is not None:
            h = self.norm(h)
        return h, tgt


class DecoderUnit(nn.Module):
    """One causal decoder layer, cross-attending to the encoder memory it passes on."""

    def __init__(self, layer: nn.TransformerDecoderLayer) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, pair: Pair) -> Pair:
        memory, y = pair
        causal = nn.Transformer.generate_square_subsequent_mask(y.shape[1], device=y.device)
        y = self.layer(y, memory, tgt_mask=causal, tgt_is_causal=True)
        return memory, y


def units(transformer: nn.Transformer) -> list[nn.Module]:
    """The encoder then decoder layers, wrapped to carry the pair between them."""
    encoder = transformer.encoder
    last = len(encoder.layers) - 1
    found: list[nn.Module] = []
    for i, layer in enumerate(transformer_layers(transformer)):
        if isinstance(layer, nn.TransformerEncoderLayer):
            found.append(EncoderUnit(layer, encoder.norm if i == last else None))
        else:
            found.append(DecoderUnit(layer))
    return found
