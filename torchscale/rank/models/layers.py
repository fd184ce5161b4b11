"""The transformer layer shared by ViT, BERT and GPT-2.

The three differ only in where LayerNorm sits (pre-LN for ViT and GPT-2, post-LN for BERT), the
GELU flavour, the LayerNorm epsilon and causality; one block with those switches keeps the
architectures from drifting apart. Attention uses one fused q/k/v projection (same parameter
count as three separate ones) and `scaled_dot_product_attention`, so the fastest kernel the
device has is the one benchmarked. The fused projection's rows are ordered per head, so that
tensor parallelism splits it into whole heads (docs/strategies.md, "The fused q/k/v projection").
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


def under_bf16_autocast(x: torch.Tensor) -> bool:
    """Whether `x` is being computed under bf16 autocast on its device (never on the meta
    device, which has no autocast: the pipeline's cost model runs the model there)."""
    device = x.device.type
    if device == "meta":
        return False
    return torch.is_autocast_enabled(device) and torch.get_autocast_dtype(device) == torch.bfloat16


class ResidualStart(nn.Module):
    """Where a residual stream starts (after the embeddings): identity, or with bf16
    activations under bf16 autocast, the cast of the stream to bf16."""

    bf16: bool = False  # set by set_bf16_activations

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(torch.bfloat16) if self.bf16 and under_bf16_autocast(x) else x


class Norm(nn.LayerNorm):
    """LayerNorm that, with bf16 activations under bf16 autocast, keeps a bf16 input bf16.

    Autocast runs layer_norm in fp32 and returns fp32; here it runs on the bf16 tensor with
    its weights cast to bf16 (the fp32 weights get their gradient through the cast), the
    mean and variance still accumulated in fp32 by the kernel."""

    bf16: bool = False  # set by set_bf16_activations

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (self.bf16 and x.dtype == torch.bfloat16 and under_bf16_autocast(x)):
            return super().forward(x)
        with torch.autocast(x.device.type, enabled=False):
            return F.layer_norm(
                x,
                self.normalized_shape,
                None if self.weight is None else self.weight.to(x.dtype),
                None if self.bias is None else self.bias.to(x.dtype),
                self.eps,
            )


def set_bf16_activations(model: nn.Module, on: bool) -> int:
    """Switch bf16 activations on or off in every `ResidualStart` and `Norm` of `model`;
    returns how many residual streams took the setting (0: the model has none, e.g. a
    plug-in or a convolutional net)."""
    starts = 0
    for module in model.modules():
        if isinstance(module, (ResidualStart, Norm)):
            module.bf16 = on
            starts += isinstance(module, ResidualStart)
    return starts


class SelfAttention(nn.Module):
    """Multi-head self-attention: fused q/k/v projection, SDPA, output projection, dropout."""

    def __init__(
        self, dim: int, heads: int, *, attn_dropout: float, dropout: float, causal: bool
    ) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"hidden size {dim} is not a multiple of the {heads} heads")
        self.heads = heads
        self.head_dim = dim // heads
        self.causal = causal
        self.attn_dropout = attn_dropout  # on the attention weights, inside SDPA
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(dropout)  # on the projected output

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        qkv = self.qkv(x)
        # rows of the fused weight are grouped per head (q, k, v of head 0, then head 1, ...), so
        # a column split under tensor parallelism keeps whole heads: the local head count is
        # whatever width this rank's projection produced
        heads = qkv.shape[-1] // (3 * self.head_dim)
        # split, not a permute and unbind: split's backward concatenates the three gradients
        # straight into the projection's layout, where unbind's stack needed a copy back
        # through the permute (one activation-sized copy per block and step)
        qkv = qkv.view(batch, seq, heads, 3 * self.head_dim)
        q, k, v = (t.transpose(1, 2) for t in qkv.split(self.head_dim, dim=-1))
        out = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.attn_dropout if self.training else 0.0, is_causal=self.causal
        )
        out = out.transpose(1, 2).reshape(batch, seq, heads * self.head_dim)
        y: torch.Tensor = self.dropout(self.proj(out))
        return y


class FeedForward(nn.Module):
    """Position-wise feed-forward: Linear, GELU, Linear, dropout."""

    def __init__(self, dim: int, hidden: int, dropout: float, gelu: str) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU(approximate=gelu)
        self.fc2 = nn.Linear(hidden, dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.dropout(self.fc2(self.act(self.fc1(x))))
        return y


class Block(nn.Module):
    """One transformer layer; `norm_first` selects pre-LN (ViT, GPT-2) or post-LN (BERT)."""

    def __init__(
        self,
        dim: int,
        heads: int,
        mlp_hidden: int,
        *,
        norm_first: bool,
        causal: bool,
        dropout: float,
        attn_dropout: float,
        eps: float,
        gelu: str = "none",
    ) -> None:
        super().__init__()
        self.norm_first = norm_first
        self.ln_1 = Norm(dim, eps=eps)
        self.attn = SelfAttention(
            dim, heads, attn_dropout=attn_dropout, dropout=dropout, causal=causal
        )
        self.ln_2 = Norm(dim, eps=eps)
        self.mlp = FeedForward(dim, mlp_hidden, dropout, gelu)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor
        if self.norm_first:
            x = x + self.attn(self.ln_1(x))
            y = x + self.mlp(self.ln_2(x))
        else:
            x = self.ln_1(x + self.attn(x))
            y = self.ln_2(x + self.mlp(x))
        return y


def repeat_block(
    count: int, dim: int, heads: int, mlp_hidden: int, **switches: Any
) -> nn.Sequential:
    """`count` Blocks of the same shape and switches (each with its own weights), in order."""
    return nn.Sequential(*(Block(dim, heads, mlp_hidden, **switches) for _ in range(count)))


def init_normal(module: nn.Module, std: float = 0.02) -> None:
    """BERT/GPT-2 init: N(0, std) weights, zero biases, unit LayerNorm; use with `apply()`."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=std)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
    if isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)
