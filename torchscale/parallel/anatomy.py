"""Where the built-in models keep their repeated blocks, and what that allows.

Kept in one place so no model knowledge leaks into the worker: tensor parallelism needs the
transformer blocks (torchscale/models/layers.py, or nn.Transformer's layers for the
encoder-decoder) and their widths, pipeline parallelism the ordered blocks between an input part
and an output part (torchscale/parallel/pieces.py builds those parts). Every function works on a
model built on the meta device.
"""

from __future__ import annotations

from typing import Literal

from torch import nn

from torchscale.models.bert import BertForMaskedLM
from torchscale.models.gpt2 import GPT2
from torchscale.models.layers import Block
from torchscale.models.resnet import ResNet
from torchscale.models.tiny import MLP
from torchscale.models.transformer import Seq2SeqTransformer
from torchscale.models.vit import VisionTransformer

Family = Literal["gpt2", "bert", "vit", "resnet", "mlp", "seq2seq"]

_FAMILIES: tuple[tuple[type[nn.Module], Family], ...] = (
    (GPT2, "gpt2"),
    (BertForMaskedLM, "bert"),
    (VisionTransformer, "vit"),
    (ResNet, "resnet"),
    (MLP, "mlp"),
    (Seq2SeqTransformer, "seq2seq"),
)

NO_TP = {
    "resnet": "no tensor-parallel plan for ResNet: its layers are convolutions and BatchNorm "
    "(channel-split convolutions are not among torch's ColwiseParallel/RowwiseParallel styles)",
}
NO_SP = {
    "seq2seq": "no sequence-parallel plan for the encoder-decoder transformer: its attention "
    "stays replicated under TP (nn.MultiheadAttention's packed in_proj_weight), so there is no "
    "column/row-parallel pair around it whose all-reduces could become all-gather + "
    "reduce-scatter over sequence shards",
}


def family(model: nn.Module) -> Family | None:
    """Which built-in architecture `model` is; None for a plug-in."""
    for cls, name in _FAMILIES:
        if isinstance(model, cls):
            return name
    return None


def block_container(model: nn.Module) -> nn.Sequential | None:
    """The nn.Sequential of transformer blocks (GPT-2, BERT, ViT), else None."""
    if isinstance(model, (GPT2, VisionTransformer)):
        return model.blocks
    if isinstance(model, BertForMaskedLM):
        return model.bert.encoder
    return None


Seq2SeqLayer = nn.TransformerEncoderLayer | nn.TransformerDecoderLayer


def seq2seq_layers(model: nn.Module) -> list[Seq2SeqLayer]:
    """nn.Transformer's encoder layers, then its decoder layers; empty for other models."""
    if not isinstance(model, Seq2SeqTransformer):
        return []
    stacks = (model.transformer.encoder.layers, model.transformer.decoder.layers)
    return [m for stack in stacks for m in stack if isinstance(m, Seq2SeqLayer)]


def transformer_blocks(model: nn.Module) -> list[Block]:
    """The layers.Block modules of a transformer model, in order."""
    container = block_container(model)
    if container is None:
        return []
    return [b for b in container if isinstance(b, Block)]


def mlp_linears(model: MLP) -> list[nn.Linear]:
    """The tiny MLP's Linear layers in order (hidden layers, then the classifier)."""
    return [m for m in model.net if isinstance(m, nn.Linear)]


def tp_problem(model: nn.Module, tp: int) -> str | None:
    """Why `model` cannot be split over `tp` ranks by torchscale/parallel/tensor.py, or None."""
    kind = family(model)
    if kind in NO_TP:
        return NO_TP[kind]
    if isinstance(model, MLP):
        hidden = mlp_linears(model)[:-1]
        if len(hidden) < 2:
            return "no tensor-parallel plan for an MLP with fewer than 2 hidden layers"
        widths = [lin.out_features for lin in hidden[0 : len(hidden) - len(hidden) % 2 : 2]]
        bad = [w for w in widths if w % tp]
        if bad:
            return f"MLP hidden width {bad[0]} is not divisible by tp={tp}"
        return None
    if isinstance(model, Seq2SeqTransformer):
        return _seq2seq_tp_problem(model, tp)
    for i, block in enumerate(transformer_blocks(model)):
        heads = block.attn.heads
        if heads % tp:
            return f"block {i}: {heads} attention heads are not divisible by tp={tp}"
        width = block.mlp.fc1.out_features
        if width % tp:
            return f"block {i}: MLP width {width} is not divisible by tp={tp}"
    return None


def _seq2seq_tp_problem(model: Seq2SeqTransformer, tp: int) -> str | None:
    """The splits the seq2seq plan makes: feed-forward widths, and the vocabulary rows of the
    embedding and output projection (attention is replicated: its heads need not divide)."""
    for i, layer in enumerate(seq2seq_layers(model)):
        width = layer.linear1.out_features
        if width % tp:
            return f"layer {i}: feed-forward width {width} is not divisible by tp={tp}"
    vocab = model.output.out_features
    if vocab % tp:
        return (
            f"vocabulary {vocab} (embedding and output projection rows) is not divisible by tp={tp}"
        )
    return None


def sp_problem(model: nn.Module, tp: int, seq_len: int | None) -> str | None:
    """Why sequence parallelism cannot run on `model` at `tp`, or None."""
    kind = family(model)
    if kind in NO_SP:
        return NO_SP[kind]
    if isinstance(model, MLP):
        return "sequence parallelism needs a sequence dimension; the MLP's inputs have none"
    if isinstance(model, VisionTransformer):
        seq_len = model.pos_embedding.shape[1]  # patches + class token
    if seq_len is not None and seq_len % tp:
        return f"sequence length {seq_len} is not divisible by tp={tp} (sequence parallelism)"
    return None


def pp_problem(model: nn.Module) -> str | None:
    """Why `model` has no pipeline split, or None (every built-in model has one)."""
    return None


def pipeline_blocks(model: nn.Module) -> list[nn.Module]:
    """The units a pipeline boundary may fall between, in order.

    Transformer blocks; the encoder-decoder's encoder then decoder layers (torchscale/parallel/
    pieces.py wraps them to carry two tensors); ResNet's residual blocks (all stages
    flattened); the MLP's hidden Linear+ReLU pairs (its classifier rides with the last one).
    """
    if isinstance(model, Seq2SeqTransformer):
        return list(seq2seq_layers(model))
    if isinstance(model, ResNet):
        return [block for stage in model.stages for block in stage.children()]
    if isinstance(model, MLP):
        layers = list(model.net)[:-1]
        return [nn.Sequential(*layers[i : i + 2]) for i in range(0, len(layers), 2)]
    return list(transformer_blocks(model))
