"""Cut a built-in model into pipeline stage modules at block boundaries.

Each stage module is input part (first stage only) + a run of blocks + output part (last stage
only), all made of the model's own submodules, so a stage trains the very parameters the unsplit
model has. The one exception is a weight tied across the cut: GPT-2's LM head and BERT's MLM
decoder reuse the token embedding, which lives in the first stage; the last stage gets its own
copy, initialised equal, and the pipeline runner keeps the two equal by summing their gradients
(Megatron-LM's treatment of tied embeddings).

The encoder-decoder carries two tensors across every cut: (source hidden, target embedding)
through the encoder layers, then (encoder memory, decoder hidden) through the decoder layers,
since every decoder layer cross-attends to the memory. A stage that does not touch one of them
returns its received tensor as is; PipelineStage sends it on and, in backward, hands the
gradient it receives for it straight back (plus what the stage's own layers add).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from torchscale.models.bert import BertForMaskedLM
from torchscale.models.gpt2 import GPT2
from torchscale.models.resnet import ResNet
from torchscale.models.tiny import MLP
from torchscale.models.transformer import Seq2SeqTransformer, sinusoidal_positions
from torchscale.models.vit import VisionTransformer
from torchscale.parallel import anatomy

Pair = tuple[torch.Tensor, torch.Tensor]


class StageModule(nn.Module):
    """One pipeline stage: optional input part, consecutive blocks, optional output part."""

    def __init__(
        self, prologue: nn.Module | None, blocks: list[nn.Module], epilogue: nn.Module | None
    ) -> None:
        super().__init__()
        self.prologue = prologue
        self.blocks = nn.Sequential(*blocks)
        self.epilogue = epilogue

    def forward(self, *args: Any) -> Any:
        """One tensor for most models; several (the encoder-decoder's pair) arrive as separate
        arguments, as PipelineStage passes them, and travel between blocks as one tuple."""
        x: Any = args[0] if len(args) == 1 else args
        if self.prologue is not None:
            x = self.prologue(*args)
        x = self.blocks(x)
        if self.epilogue is not None:
            x = self.epilogue(x)
        return x


class GPT2Embed(nn.Module):
    """GPT-2's token + position embedding and dropout (GPT2.forward's first line)."""

    def __init__(self, model: GPT2) -> None:
        super().__init__()
        self.wte, self.wpe, self.drop = model.wte, model.wpe, model.drop

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        y: torch.Tensor = self.drop(self.wte(input_ids) + self.wpe(positions))
        return y


class GPT2Head(nn.Module):
    """Final LayerNorm and the LM head, on this stage's copy of the tied token embedding."""

    def __init__(self, model: GPT2) -> None:
        super().__init__()
        self.ln_f = model.ln_f
        self.weight = nn.Parameter(model.wte.weight.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(self.ln_f(x), self.weight)


class BertMLMHead(nn.Module):
    """BERT's MLM transform and decoder, on this stage's copy of the tied word embedding."""

    def __init__(self, model: BertForMaskedLM) -> None:
        super().__init__()
        self.transform, self.transform_ln = model.transform, model.transform_ln
        self.weight = nn.Parameter(model.bert.embeddings.word.weight.detach().clone())
        self.decoder_bias = model.decoder_bias

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = self.transform_ln(F.gelu(self.transform(h)))
        return F.linear(h, self.weight, self.decoder_bias)


class ViTEmbed(nn.Module):
    """ViT's patch convolution, class token, position embedding and dropout."""

    def __init__(self, model: VisionTransformer) -> None:
        super().__init__()
        self.conv_proj, self.dropout = model.conv_proj, model.dropout
        self.class_token, self.pos_embedding = model.class_token, model.pos_embedding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_proj(x).flatten(2).transpose(1, 2)
        cls = self.class_token.expand(x.shape[0], -1, -1)
        y: torch.Tensor = self.dropout(torch.cat([cls, x], dim=1) + self.pos_embedding)
        return y


class ViTHead(nn.Module):
    """ViT's final LayerNorm and the classifier on the class token."""

    def __init__(self, model: VisionTransformer) -> None:
        super().__init__()
        self.ln, self.head = model.ln, model.head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.head(self.ln(x)[:, 0])
        return y


class PoolHead(nn.Module):
    """ResNet's global average pool and classifier."""

    def __init__(self, model: ResNet) -> None:
        super().__init__()
        self.pool, self.fc = model.pool, model.fc

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.fc(torch.flatten(self.pool(x), 1))
        return y


class Seq2SeqEmbed(nn.Module):
    """The shared token embedding, scaled, plus sinusoidal positions and dropout, applied to
    the source and the target ids (Seq2SeqTransformer._embed, twice)."""

    def __init__(self, model: Seq2SeqTransformer) -> None:
        super().__init__()
        self.embedding, self.dropout, self.d_model = model.embedding, model.dropout, model.d_model

    def _embed(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = sinusoidal_positions(tokens.shape[1], self.d_model, tokens.device)
        y: torch.Tensor = self.dropout(self.embedding(tokens) * math.sqrt(self.d_model) + positions)
        return y

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> Pair:
        return self._embed(src), self._embed(tgt)


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


class Seq2SeqHead(nn.Module):
    """nn.Transformer's decoder norm and the output projection; the memory ends here."""

    def __init__(self, model: Seq2SeqTransformer) -> None:
        super().__init__()
        norm = model.transformer.decoder.norm
        assert norm is not None  # nn.Transformer always builds one
        self.norm, self.output = norm, model.output

    def forward(self, pair: Pair) -> torch.Tensor:
        y: torch.Tensor = self.output(self.norm(pair[1]))
        return y


def seq2seq_units(model: Seq2SeqTransformer) -> list[nn.Module]:
    """The encoder then decoder layers, wrapped to carry the pair between them."""
    encoder = model.transformer.encoder
    last = len(encoder.layers) - 1
    units: list[nn.Module] = []
    for i, layer in enumerate(anatomy.seq2seq_layers(model)):
        if isinstance(layer, nn.TransformerEncoderLayer):
            units.append(EncoderUnit(layer, encoder.norm if i == last else None))
        else:
            units.append(DecoderUnit(layer))
    return units


@dataclass
class TiedWeight:
    """A weight the unsplit model uses twice, held by the first and the last stage."""

    name: str
    first: torch.Tensor  # the parameter in stage 0
    last: torch.Tensor  # the parameter in the last stage (a copy, kept equal by summing gradients)


@dataclass
class Split:
    """The stage modules of one pipeline, what each holds, and the weights tied across them."""

    stages: list[nn.Module]
    holds: list[str]
    tied: list[TiedWeight] = field(default_factory=list)


def _ends(model: nn.Module) -> tuple[nn.Module | None, nn.Module, list[TiedWeight]]:
    """The input part, output part and tied weights of a built-in model."""
    if isinstance(model, GPT2):
        head = GPT2Head(model)
        return (
            GPT2Embed(model),
            head,
            [TiedWeight("wte.weight (LM head)", model.wte.weight, head.weight)],
        )
    if isinstance(model, BertForMaskedLM):
        mlm = BertMLMHead(model)
        word = model.bert.embeddings.word.weight
        return (
            model.bert.embeddings,
            mlm,
            [TiedWeight("word embedding (MLM decoder)", word, mlm.weight)],
        )
    if isinstance(model, VisionTransformer):
        return ViTEmbed(model), ViTHead(model), []
    if isinstance(model, ResNet):
        return model.stem, PoolHead(model), []
    if isinstance(model, MLP):
        return None, anatomy.mlp_linears(model)[-1], []
    if isinstance(model, Seq2SeqTransformer):
        return Seq2SeqEmbed(model), Seq2SeqHead(model), []
    raise ValueError(f"no pipeline split for {type(model).__name__}")


def block_ranges(blocks: int, stages: int) -> list[range]:
    """Consecutive runs of blocks, as even as possible, the longer runs first."""
    base, extra = divmod(blocks, stages)
    ranges, start = [], 0
    for i in range(stages):
        size = base + (1 if i < extra else 0)
        ranges.append(range(start, start + size))
        start += size
    return ranges


def _span(noun: str, run: range) -> str:
    return f"{noun}s {run.start}-{run.stop - 1}" if len(run) > 1 else f"{noun} {run.start}"


def _run_names(model: nn.Module, run: range) -> list[str]:
    """What a run of blocks is: "blocks 2-3", or the encoder-decoder's layers by stack."""
    if not isinstance(model, Seq2SeqTransformer):
        return [_span("block", run)]
    encoders = len(model.transformer.encoder.layers)
    enc = range(run.start, min(run.stop, encoders))
    dec = range(max(run.start, encoders) - encoders, run.stop - encoders)
    return [_span(noun, r) for noun, r in (("encoder layer", enc), ("decoder layer", dec)) if r]


def split_builtin(model: nn.Module, stages: int) -> Split:
    """Cut a built-in model into `stages` stage modules (see the module docstring)."""
    blocks = (
        seq2seq_units(model)
        if isinstance(model, Seq2SeqTransformer)
        else anatomy.pipeline_blocks(model)
    )
    if len(blocks) < stages:
        raise ValueError(f"{len(blocks)} blocks cannot fill {stages} stage modules")
    prologue, epilogue, tied = _ends(model)
    modules: list[nn.Module] = []
    holds: list[str] = []
    ranges = block_ranges(len(blocks), stages)
    for i, run in enumerate(ranges):
        first, last = i == 0, i == stages - 1
        modules.append(
            StageModule(
                prologue if first else None, [blocks[j] for j in run], epilogue if last else None
            )
        )
        parts = ["input part"] if first else []
        parts += _run_names(model, run)
        if last:
            parts.append("output part")
        holds.append(" + ".join(parts))
    return Split(modules, holds, tied)


def split_plugin(
    model: nn.Module, stages: int, pp_split: Callable[[nn.Module, int], list[nn.Module]]
) -> Split:
    """A plug-in's own split: exactly `stages` modules, no weight tied across them."""
    modules = list(pp_split(model, stages))
    if len(modules) != stages:
        raise ValueError(f"the plug-in's pp_split returned {len(modules)} modules, not {stages}")
    return Split(modules, [f"plug-in stage {i}" for i in range(stages)])
