"""ViT-B/16 as torchvision's `vit_b_16`: 86,567,656 parameters at 224x224 with 1000 classes.

16x16 patches by a strided convolution, a class token, a learned position embedding, 12 pre-LN
layers (hidden 768, MLP 3072, 12 heads), a final LayerNorm and a linear head on the class token.
The position table has one row per patch plus one, so the count changes with `image_size`.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from torchscale.rank.models.block_stack import BlockStackPlan
from torchscale.rank.models.bundle import ModelBundle
from torchscale.rank.models.layers import Block, Norm, ResidualStart, repeat_block
from torchscale.rank.models.option_values import divisible
from torchscale.rank.models.parallel_plan import ParallelPlan, PipelineParts
from torchscale.rank.models.training_tasks import vision_bundle


class VisionTransformer(nn.Module):
    """Patch embedding, class token, position embedding, encoder blocks, LayerNorm, head."""

    def __init__(
        self,
        image_size: int = 224,
        patch_size: int = 16,
        layers: int = 12,
        heads: int = 12,
        hidden: int = 768,
        mlp_hidden: int = 3072,
        num_classes: int = 1000,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.patch_size = patch_size
        patches = (image_size // patch_size) ** 2
        self.conv_proj = nn.Conv2d(3, hidden, kernel_size=patch_size, stride=patch_size)
        self.class_token = nn.Parameter(torch.zeros(1, 1, hidden))
        self.pos_embedding = nn.Parameter(torch.empty(1, patches + 1, hidden))
        self.dropout = nn.Dropout(dropout)
        self.residual = ResidualStart()
        sizes = (layers, hidden, heads, mlp_hidden)
        self.blocks = repeat_block(
            *sizes, norm_first=True, causal=False, dropout=dropout, attn_dropout=0.0, eps=1e-6
        )
        self.ln = Norm(hidden, eps=1e-6)
        self.head = nn.Linear(hidden, num_classes)
        self._init_weights()

    def _init_weights(self) -> None:
        """torchvision's scheme: LeCun-normal patch conv, N(0, 0.02) positions, Xavier MLPs."""
        fan_in = self.conv_proj.in_channels * self.patch_size**2
        nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
        if self.conv_proj.bias is not None:
            nn.init.zeros_(self.conv_proj.bias)
        nn.init.normal_(self.pos_embedding, std=0.02)
        for block in self.blocks:
            assert isinstance(block, Block)
            for fc in (block.mlp.fc1, block.mlp.fc2):
                nn.init.xavier_uniform_(fc.weight)
                nn.init.normal_(fc.bias, std=1e-6)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_proj(x).flatten(2).transpose(1, 2)  # (batch, patches, hidden)
        cls = self.class_token.expand(x.shape[0], -1, -1)
        x = self.residual(self.dropout(torch.cat([cls, x], dim=1) + self.pos_embedding))
        x = self.ln(self.blocks(x))
        y: torch.Tensor = self.head(x[:, 0])
        return y

    def parallel_plan(self) -> ParallelPlan:
        """Megatron TP per block, its sequence the patches plus the class token; pipeline cuts
        between blocks."""
        patches_and_class = self.pos_embedding.shape[1]
        return BlockStackPlan(self.blocks, self._pipeline_parts, seq_len=patches_and_class)

    def _pipeline_parts(self, blocks: list[nn.Module]) -> PipelineParts:
        return PipelineParts(ViTEmbed(self), blocks, ViTHead(self))


class ViTEmbed(nn.Module):
    """ViT's patch convolution, class token, position embedding and dropout."""

    def __init__(self, model: VisionTransformer) -> None:
        super().__init__()
        self.conv_proj, self.dropout = model.conv_proj, model.dropout
        self.class_token, self.pos_embedding = model.class_token, model.pos_embedding
        self.residual = model.residual

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_proj(x).flatten(2).transpose(1, 2)
        cls = self.class_token.expand(x.shape[0], -1, -1)
        x = self.dropout(torch.cat([cls, x], dim=1) + self.pos_embedding)
        y: torch.Tensor = self.residual(x)
        return y


class ViTHead(nn.Module):
    """ViT's final LayerNorm and the classifier on the class token."""

    def __init__(self, model: VisionTransformer) -> None:
        super().__init__()
        self.ln, self.head = model.ln, model.head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.head(self.ln(x)[:, 0])
        return y


def vit_b16(*, image_size: int, num_classes: int) -> ModelBundle:
    """ViT-B/16: 86,567,656 parameters at 224x224 with 1000 classes."""
    divisible("vit-b16", "image_size", image_size, 16, "the patch size")
    model = VisionTransformer(image_size=image_size, num_classes=num_classes)
    return vision_bundle(model, image_size, num_classes, conv_net=False)
