"""The training task of each kind of model: synthetic data, loss, and the bundle carrying them.

Batches are drawn with `torch.randn`/`torch.randint` directly on the target device, so the timed
loop never waits on host I/O or a host-to-device copy. Shared by the real and the tiny models.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from torchscale.rank.models import workload
from torchscale.rank.models.bundle import Batches, LossFn, MakeBatch, ModelBundle, ModelKind
from torchscale.rank.models.option_values import at_most
from torchscale.rank.models.token_loss import IGNORE_INDEX, TokenLoss


def classification(input_shape: tuple[int, ...], num_classes: int) -> tuple[MakeBatch, LossFn]:
    """Random inputs of `input_shape` per sample and random class labels; cross entropy."""

    def make_batch(batch_size: int, device: torch.device) -> tuple[Any, Any]:
        inputs = torch.randn((batch_size, *input_shape), device=device)
        targets = torch.randint(0, num_classes, (batch_size,), device=device)
        return inputs, targets

    return make_batch, F.cross_entropy


def next_token(vocab_size: int, seq_len: int) -> tuple[MakeBatch, LossFn]:
    """Causal language modelling: predict token t+1 from tokens up to t (the loss over the
    real vocabulary: `TokenLoss`)."""

    def make_batch(batch_size: int, device: torch.device) -> tuple[Any, Any]:
        tokens = torch.randint(0, vocab_size, (batch_size, seq_len + 1), device=device)
        return tokens[:, :-1], tokens[:, 1:]

    return make_batch, TokenLoss(vocab_size)


def masked_tokens(vocab_size: int, seq_len: int) -> tuple[MakeBatch, LossFn]:
    """BERT-style masked language modelling: loss on a random ~15% of positions.

    Position 0 of every sample is always a target so no batch is ever without loss.
    """

    def make_batch(batch_size: int, device: torch.device) -> tuple[Any, Any]:
        tokens = torch.randint(0, vocab_size, (batch_size, seq_len), device=device)
        chosen = torch.rand((batch_size, seq_len), device=device) < 0.15
        chosen[:, 0] = True
        targets = torch.where(chosen, tokens, torch.full_like(tokens, IGNORE_INDEX))
        return tokens, targets

    return make_batch, TokenLoss(vocab_size)


def sequence_to_sequence(vocab_size: int, seq_len: int) -> tuple[MakeBatch, LossFn]:
    """Encoder-decoder training: source and shifted target sequences, loss on every target token."""

    def make_batch(batch_size: int, device: torch.device) -> tuple[Any, Any]:
        src = torch.randint(0, vocab_size, (batch_size, seq_len), device=device)
        tgt = torch.randint(0, vocab_size, (batch_size, seq_len + 1), device=device)
        return (src, tgt[:, :-1]), tgt[:, 1:]

    return make_batch, TokenLoss()


def vision_bundle(
    model: nn.Module, image_size: int, num_classes: int, *, conv_net: bool
) -> ModelBundle:
    """Wrap an image classifier with random square RGB images and labels."""
    shape = (3, image_size, image_size)
    return sampled_bundle(model, classification(shape, num_classes), "vision", shape, conv_net)


def sampled_bundle(
    model: nn.Module,
    task: tuple[MakeBatch, LossFn],
    kind: ModelKind,
    input_shape: tuple[int, ...],
    conv_net: bool = False,
    batches: Batches | None = None,
) -> ModelBundle:
    """Wrap a model whose throughput is counted in samples only (no tokens per sample)."""
    make_batch, loss_fn = task
    return ModelBundle(
        model=model,
        make_batch=make_batch,
        loss_fn=loss_fn,
        kind=kind,
        tokens_per_sample=None,
        input_shape=input_shape,
        conv_net=conv_net,
        batches=batches,
    )


def language_model(
    name: str,
    cfg: Any,
    model: Callable[[Any], nn.Module],
    task: Callable[[int, int], tuple[MakeBatch, LossFn]],
    seq_len: int,
    dropout: float = workload.DEFAULT_DROPOUT,
    pad_vocab_to: int = workload.DEFAULT_PAD_VOCAB_TO,
    faithful: bool = False,
) -> ModelBundle:
    """A zoo language model (GPT-2, BERT) of `cfg`'s sizes (a frozen config with
    `vocab_size`, `max_positions`, `dropout` and `pad_vocab_to`), trained on `task`: `seq_len`
    must fit the position table; `dropout` as the model applies it; the token embedding padded
    to a multiple of `pad_vocab_to` rows; `faithful` replaces both by the published values
    (the registry refuses it next to either; workload.py)."""
    at_most(name, "seq_len", seq_len, cfg.max_positions, "the model's position embeddings")
    dropout, pad_vocab_to = workload.resolve(name, dropout, pad_vocab_to, faithful)
    cfg = replace(cfg, dropout=dropout, pad_vocab_to=pad_vocab_to)
    return language_bundle(model(cfg), task(cfg.vocab_size, seq_len), seq_len)


def language_bundle(model: nn.Module, task: tuple[MakeBatch, LossFn], seq_len: int) -> ModelBundle:
    """Wrap a token model; throughput in tokens is samples times `seq_len`."""
    eager = task[1].eager if isinstance(task[1], TokenLoss) else None
    bundle = sampled_bundle(model, task, "language", (seq_len,))
    return replace(bundle, tokens_per_sample=seq_len, eager_loss_fn=eager)
