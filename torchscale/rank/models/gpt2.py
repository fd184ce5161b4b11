"""GPT-2 small, medium and large (vocab 50,257, 1,024 positions, lm_head tied to the embedding).

As published (`faithful: true`): exactly 124,439,808 / 354,823,168 / 774,030,080 parameters,
the tied matrix counted once, as HF's GPT2LMHeadModel, dropout 0.1. Pre-LN blocks with
tanh-approximated GELU ("gelu_new") and causal attention through
`scaled_dot_product_attention(is_causal=True)`; trained with next-token cross entropy on random
token ids.

By default the zoo trains them as speed references do (nanoGPT, llm.c): no dropout, and the
token embedding (so the tied output GEMM) padded to 50,304 rows; the loss reads only the real
tokens' logits (docs/models.md; tests/rank/test_models.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from torchscale.rank.models import training_tasks, workload
from torchscale.rank.models.block_stack import BlockStackPlan
from torchscale.rank.models.bundle import ModelBundle
from torchscale.rank.models.layers import Block, Norm, ResidualStart, init_normal, repeat_block
from torchscale.rank.models.parallel_plan import ParallelPlan, PipelineParts, TiedWeight


@dataclass(frozen=True)
class GPT2Config:
    """Sizes of one GPT-2 variant (HF names in comments)."""

    hidden: int  # n_embd
    layers: int  # n_layer
    heads: int  # n_head
    vocab_size: int = 50257
    max_positions: int = 1024  # n_positions
    dropout: float = 0.1  # resid, embd and attn dropout as published (the zoo's default: 0)
    eps: float = 1e-5  # layer_norm_epsilon
    pad_vocab_to: int = 1  # token embedding rows rounded up to a multiple of this (1: none)

    @property
    def embedding_rows(self) -> int:
        """Rows of the token embedding and output GEMM: the vocabulary, padded."""
        return workload.padded(self.vocab_size, self.pad_vocab_to)


GPT2_SMALL = GPT2Config(hidden=768, layers=12, heads=12)
GPT2_MEDIUM = GPT2Config(hidden=1024, layers=24, heads=16)
GPT2_LARGE = GPT2Config(hidden=1280, layers=36, heads=20)


class GPT2(nn.Module):
    """Token + position embeddings, pre-LN causal blocks, final LayerNorm, tied LM head."""

    def __init__(self, cfg: GPT2Config) -> None:
        super().__init__()
        self.wte = nn.Embedding(cfg.embedding_rows, cfg.hidden)
        self.wpe = nn.Embedding(cfg.max_positions, cfg.hidden)
        self.drop = nn.Dropout(cfg.dropout)
        self.residual = ResidualStart()
        sizes, drop = (cfg.layers, cfg.hidden, cfg.heads, 4 * cfg.hidden), cfg.dropout
        switches: dict[str, Any] = {"norm_first": True, "causal": True, "gelu": "tanh"}
        self.blocks = repeat_block(*sizes, dropout=drop, attn_dropout=drop, eps=cfg.eps, **switches)
        self.ln_f = Norm(cfg.hidden, eps=cfg.eps)
        self.apply(init_normal)
        # GPT-2 scales the residual output projections by 1/sqrt(2 * layers)
        residual_std = 0.02 / math.sqrt(2 * cfg.layers)
        for block in self.blocks:
            assert isinstance(block, Block)
            nn.init.normal_(block.attn.proj.weight, std=residual_std)
            nn.init.normal_(block.mlp.fc2.weight, std=residual_std)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.residual(self.drop(self.wte(input_ids) + self.wpe(positions)))
        x = self.ln_f(self.blocks(x))
        return F.linear(x, self.wte.weight)  # the LM head is the token embedding, transposed

    def parallel_plan(self) -> ParallelPlan:
        """Megatron TP per block; pipeline cuts between blocks, the LM head's tie kept."""
        return BlockStackPlan(self.blocks, self._pipeline_parts)

    def _pipeline_parts(self, blocks: list[nn.Module]) -> PipelineParts:
        head = GPT2Head(self)
        tied = TiedWeight("wte.weight (LM head)", self.wte.weight, head.weight)
        return PipelineParts(GPT2Embed(self), blocks, head, [tied])


class GPT2Embed(nn.Module):
    """GPT-2's token + position embedding, dropout and residual start (GPT2.forward's first
    line)."""

    def __init__(self, model: GPT2) -> None:
        super().__init__()
        self.wte, self.wpe, self.drop = model.wte, model.wpe, model.drop
        self.residual = model.residual

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        y: torch.Tensor = self.residual(self.drop(self.wte(input_ids) + self.wpe(positions)))
        return y


class GPT2Head(nn.Module):
    """Final LayerNorm and the LM head, on a pipeline's last-stage copy of the tied token
    embedding (summed gradients keep it equal to the first stage's)."""

    def __init__(self, model: GPT2) -> None:
        super().__init__()
        self.ln_f = model.ln_f
        self.weight = nn.Parameter(model.wte.weight.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(self.ln_f(x), self.weight)


def gpt2_lm(name: str, cfg: GPT2Config, seq_len: int, **options: Any) -> ModelBundle:
    """A GPT-2 bundle with next-token loss; `dropout` on the embedding, the residual branches
    and the attention weights (the options: training_tasks.language_model)."""
    return training_tasks.language_model(
        name, cfg, GPT2, training_tasks.next_token, seq_len, **options
    )


def gpt2(**options: Any) -> ModelBundle:
    """GPT-2 small: 124,439,808 parameters as published."""
    return gpt2_lm("gpt2", GPT2_SMALL, **options)


def gpt2_medium(**options: Any) -> ModelBundle:
    """GPT-2 medium: 354,823,168 parameters as published."""
    return gpt2_lm("gpt2-medium", GPT2_MEDIUM, **options)


def gpt2_large(**options: Any) -> ModelBundle:
    """GPT-2 large: 774,030,080 parameters as published."""
    return gpt2_lm("gpt2-large", GPT2_LARGE, **options)
