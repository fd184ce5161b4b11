"""The `tiny-mlp` model: hidden Linear+ReLU layers and a linear classifier, and how it splits.

Tensor parallelism pairs the hidden layers Megatron's way (the first of a pair column-wise, the
second row-wise: ReLU is elementwise, so one all-reduce per pair); a pipeline cuts between the
Linear+ReLU pairs, the classifier riding with the last one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from torchscale.contracts.finding import Finding
from torchscale.rank.models.parallel_plan import ParallelPlan, PipelineParts

if TYPE_CHECKING:
    from torch.distributed.device_mesh import DeviceMesh


class MLP(nn.Module):
    """`layers` hidden Linear+ReLU layers of width `hidden`, then a linear classifier."""

    def __init__(self, in_features: int, hidden: int, layers: int, num_classes: int) -> None:
        super().__init__()
        body: list[nn.Module] = []
        width = in_features
        for _ in range(layers):
            body += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        body.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*body)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.net(x)
        return y

    def parallel_plan(self) -> ParallelPlan:
        """Hidden layers in colwise/rowwise pairs; pipeline cuts between Linear+ReLU pairs."""
        return MLPPlan(self)


class MLPPlan(ParallelPlan):
    """The splits of an MLP: see the module docstring."""

    def __init__(self, model: MLP) -> None:
        self.model = model

    def _linears(self) -> list[nn.Linear]:
        """The Linear layers in order (hidden layers, then the classifier)."""
        return [m for m in self.model.net if isinstance(m, nn.Linear)]

    def tp_problem(self, tp: int) -> Finding | None:
        hidden = self._linears()[:-1]
        if len(hidden) < 2:
            return Finding(code="layout.mlp_too_shallow")
        widths = [lin.out_features for lin in hidden[0 : len(hidden) - len(hidden) % 2 : 2]]
        bad = [w for w in widths if w % tp]
        figures = {"width": bad[0], "tp": tp} if bad else None
        return Finding(code="layout.mlp_width", figures=figures) if figures else None

    def sp_problem(self, tp: int, seq_len: int | None) -> Finding | None:
        return Finding(code="layout.mlp_no_sequence")

    def apply_tp(self, mesh: DeviceMesh, sequence_parallel: bool) -> str:
        """Hidden Linear layers in colwise/rowwise pairs (ReLU is elementwise); the rest
        replicated."""
        from torch.distributed.tensor.parallel import (
            ColwiseParallel,
            RowwiseParallel,
            parallelize_module,
        )
        from torch.distributed.tensor.parallel.style import ParallelStyle

        hidden = self._linears()[:-1]
        names = {id(m): name for name, m in self.model.named_modules()}
        plan: dict[str, ParallelStyle] = {}
        for col, row in zip(hidden[0::2], hidden[1::2], strict=False):
            plan[names[id(col)]] = ColwiseParallel()
            plan[names[id(row)]] = RowwiseParallel()
        parallelize_module(self.model, mesh, plan)
        return "hidden_pairs"  # hidden Linear layers in pairs: first colwise, second rowwise

    def _pairs(self) -> list[nn.Module]:
        layers = list(self.model.net)[:-1]
        return [nn.Sequential(*layers[i : i + 2]) for i in range(0, len(layers), 2)]

    def pipeline_depth(self) -> int:
        return len(self._pairs())

    def pipeline_parts(self) -> PipelineParts:
        return PipelineParts(None, self._pairs(), self._linears()[-1])
