"""BERT (uncased: vocab 30,522, 512 positions, 2 token types), trained with a masked-LM head.

Which variant the built-in is, and why: the bare encoder with its pooler (HF `BertModel`) has
exactly 109,482,240 (base) / 335,141,888 (large) parameters, the figures usually quoted. A
pooler is never used by the masked-LM loss, and an unused parameter breaks DDP unless
`find_unused_parameters` is set, so the built-in `bert-base`/`bert-large` is HF's
`BertForMaskedLM` instead: the encoder *without* pooler plus the MLM head (dense + GELU +
LayerNorm transform, decoder weight tied to the word embeddings, decoder bias of size vocab):
exactly 109,514,298 (base) / 335,174,458 (large) parameters. `BertModel(config)` here still
builds the bare encoder with pooler for comparison with the published count.

Those counts are the model as published (`faithful: true`); by default the zoo trains it as
speed references do (workload.py, docs/models.md): no dropout, vocabulary padded to 30,528 rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from torchscale.rank.models import training_tasks, workload
from torchscale.rank.models.block_stack import BlockStackPlan
from torchscale.rank.models.bundle import ModelBundle
from torchscale.rank.models.layers import Norm, ResidualStart, init_normal, repeat_block
from torchscale.rank.models.parallel_plan import ParallelPlan, PipelineParts, TiedWeight


@dataclass(frozen=True)
class BertConfig:
    """Sizes of one BERT variant (HF names in comments)."""

    hidden: int  # hidden_size
    layers: int  # num_hidden_layers
    heads: int  # num_attention_heads
    intermediate: int  # intermediate_size
    vocab_size: int = 30522
    max_positions: int = 512  # max_position_embeddings
    type_vocab_size: int = 2
    dropout: float = 0.1  # hidden and attention dropout
    eps: float = 1e-12  # layer_norm_eps
    pad_vocab_to: int = 1  # word embedding rows rounded up to a multiple of this (1: none)

    @property
    def embedding_rows(self) -> int:
        """Rows of the word embedding and the tied decoder: the vocabulary, padded."""
        return workload.padded(self.vocab_size, self.pad_vocab_to)


BERT_BASE = BertConfig(hidden=768, layers=12, heads=12, intermediate=3072)
BERT_LARGE = BertConfig(hidden=1024, layers=24, heads=16, intermediate=4096)


class BertEmbeddings(nn.Module):
    """Word + position + token-type embeddings, LayerNorm, dropout."""

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.word = nn.Embedding(cfg.embedding_rows, cfg.hidden)
        self.position = nn.Embedding(cfg.max_positions, cfg.hidden)
        self.token_type = nn.Embedding(cfg.type_vocab_size, cfg.hidden)
        self.residual = ResidualStart()
        self.ln = Norm(cfg.hidden, eps=cfg.eps)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        # every synthetic token belongs to segment 0: add its embedding row (HF does the lookup)
        x = self.word(input_ids) + self.position(positions) + self.token_type.weight[0]
        y: torch.Tensor = self.dropout(self.ln(self.residual(x)))
        return y


class BertModel(nn.Module):
    """The bare encoder; returns the sequence output (the pooler, unused, is for the count)."""

    def __init__(self, cfg: BertConfig, add_pooling_layer: bool = True) -> None:
        super().__init__()
        self.embeddings = BertEmbeddings(cfg)
        sizes, drop = (cfg.layers, cfg.hidden, cfg.heads, cfg.intermediate), cfg.dropout
        self.encoder = repeat_block(
            *sizes, norm_first=False, causal=False, dropout=drop, attn_dropout=drop, eps=cfg.eps
        )
        self.pooler = nn.Linear(cfg.hidden, cfg.hidden) if add_pooling_layer else None
        self.apply(init_normal)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.encoder(self.embeddings(input_ids))
        return y


class BertForMaskedLM(nn.Module):
    """Encoder without pooler plus HF's MLM head; the decoder reuses the word embedding matrix."""

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.bert = BertModel(cfg, add_pooling_layer=False)
        self.transform = nn.Linear(cfg.hidden, cfg.hidden)
        self.transform_ln = Norm(cfg.hidden, eps=cfg.eps)
        self.decoder_bias = nn.Parameter(torch.zeros(cfg.embedding_rows))
        init_normal(self.transform)
        init_normal(self.transform_ln)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        h = self.bert(input_ids)
        h = self.transform_ln(F.gelu(self.transform(h)))
        return F.linear(h, self.bert.embeddings.word.weight, self.decoder_bias)

    def parallel_plan(self) -> ParallelPlan:
        """Megatron TP per encoder block; pipeline cuts between blocks, the MLM decoder's tie
        kept."""
        return BlockStackPlan(self.bert.encoder, self._pipeline_parts)

    def _pipeline_parts(self, blocks: list[nn.Module]) -> PipelineParts:
        mlm = BertMLMHead(self)
        word = self.bert.embeddings.word.weight
        tied = TiedWeight("word embedding (MLM decoder)", word, mlm.weight)
        return PipelineParts(self.bert.embeddings, blocks, mlm, [tied])


class BertMLMHead(nn.Module):
    """BERT's MLM transform and decoder, on a pipeline's last-stage copy of the tied word
    embedding."""

    def __init__(self, model: BertForMaskedLM) -> None:
        super().__init__()
        self.transform, self.transform_ln = model.transform, model.transform_ln
        self.weight = nn.Parameter(model.bert.embeddings.word.weight.detach().clone())
        self.decoder_bias = model.decoder_bias

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = self.transform_ln(F.gelu(self.transform(h)))
        return F.linear(h, self.weight, self.decoder_bias)


def bert_mlm(name: str, cfg: BertConfig, seq_len: int, **options: Any) -> ModelBundle:
    """A BertForMaskedLM bundle: random tokens, loss on ~15% of positions (the options:
    training_tasks.language_model)."""
    return training_tasks.language_model(
        name, cfg, BertForMaskedLM, training_tasks.masked_tokens, seq_len, **options
    )


def bert_base(**options: Any) -> ModelBundle:
    """BERT-base uncased with MLM head (BertForMaskedLM): 109,514,298 parameters as published."""
    return bert_mlm("bert-base", BERT_BASE, **options)


def bert_large(**options: Any) -> ModelBundle:
    """BERT-large uncased with MLM head (BertForMaskedLM): 335,174,458 parameters as
    published."""
    return bert_mlm("bert-large", BERT_LARGE, **options)
