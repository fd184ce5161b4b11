"""The transformer layer shared by ViT, BERT and GPT-2.

The three differ only in where LayerNorm sits (pre-LN for ViT and GPT-2, post-LN for BERT), the
GELU flavour, the LayerNorm epsilon and causality; one block with those switches keeps the
architectures from drifting apart. Attention uses one fused q/k/v projection (same parameter
count as three separate ones) and `scaled_dot_product_attention`, so the fastest kernel the
device has is the one benchmarked. The fused projection's output rows are ordered per head (q, k,
v of head 0, then of head 1, ...) so that tensor parallelism can split it by columns into whole
heads (torchscale/models/block_tp.py); unsplit, it is the same attention.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


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
        qkv = qkv.view(batch, seq, heads, 3, self.head_dim)
        q, k, v = qkv.permute(3, 0, 2, 1, 4).unbind(0)  # each (batch, heads, seq, head_dim)
        out = F.scaled_dot_product_attention(
            q,
            k,
            v,
            dropout_p=self.attn_dropout if self.training else 0.0,
            is_causal=self.causal,
        )
        out = out.transpose(1, 2).reshape(batch, seq, heads * self.head_dim)
        y: torch.Tensor = self.dropout(self.proj(out))
        return y


class MLP(nn.Module):
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
        self.ln_1 = nn.LayerNorm(dim, eps=eps)
        self.attn = SelfAttention(
            dim, heads, attn_dropout=attn_dropout, dropout=dropout, causal=causal
        )
        self.ln_2 = nn.LayerNorm(dim, eps=eps)
        self.mlp = MLP(dim, mlp_hidden, dropout, gelu)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor
        if self.norm_first:
            x = x + self.attn(self.ln_1(x))
            y = x + self.mlp(self.ln_2(x))
        else:
            x = self.ln_1(x + self.attn(x))
            y = self.ln_2(x + self.mlp(x))
        return y


def init_normal(module: nn.Module, std: float = 0.02) -> None:
    """BERT/GPT-2 init: N(0, std) weights, zero biases, unit LayerNorm; use with `apply()`."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=std)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
    if isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)
