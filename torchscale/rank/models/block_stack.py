"""The parallel plan of a model built around one nn.Sequential of layers.Block (GPT-2, BERT, ViT).

Tensor parallelism splits every block Megatron's way (torchscale/rank/models/block_tp.py); FSDP x TP
shards each block on its own; a pipeline cuts between blocks, the model supplying its input and
output parts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from torch import nn

from torchscale.contracts.finding import Finding
from torchscale.rank.models.layers import Block
from torchscale.rank.models.parallel_plan import ParallelPlan, PipelineParts

if TYPE_CHECKING:
    from torch.distributed.device_mesh import DeviceMesh


class BlockStackPlan(ParallelPlan):
    """`stack` holds the blocks; `parts(blocks)` adds the model's input and output parts for
    pipelining. `seq_len`: a sequence length the model fixes itself (ViT's patches + class
    token), else the data's."""

    def __init__(
        self,
        stack: nn.Sequential,
        parts: Callable[[list[nn.Module]], PipelineParts],
        seq_len: int | None = None,
    ) -> None:
        self.stack = stack
        self.parts = parts
        self.seq_len = seq_len

    def blocks(self) -> list[Block]:
        """The layers.Block modules, in order."""
        return [b for b in self.stack if isinstance(b, Block)]

    def tp_problem(self, tp: int) -> Finding | None:
        for i, block in enumerate(self.blocks()):
            heads = block.attn.heads
            if heads % tp:
                figures = {"block": i, "heads": heads, "tp": tp}
                return Finding(code="layout.heads", figures=figures)
            width = block.mlp.fc1.out_features
            if width % tp:
                figures = {"block": i, "width": width, "tp": tp}
                return Finding(code="layout.mlp_width", figures=figures)
        return None

    def sp_problem(self, tp: int, seq_len: int | None) -> Finding | None:
        return super().sp_problem(tp, self.seq_len if self.seq_len is not None else seq_len)

    def apply_tp(self, mesh: DeviceMesh, sequence_parallel: bool) -> str:
        from torchscale.rank.models.block_tp import parallelize_stack

        return parallelize_stack(self.stack, self.blocks(), mesh, sequence_parallel)

    def fsdp_units(self) -> list[nn.Module]:
        return list(self.blocks())

    def pipeline_depth(self) -> int:
        return len(self.blocks())

    def pipeline_parts(self) -> PipelineParts:
        return self.parts(list(self.blocks()))
