"""What a model declares so that torchscale/rank/parallel/ can split it: the interface, not the
split (docs/models.md, "The parallel plan"; a plug-in may give the short form on its
ModelBundle instead). Nothing here imports DTensor: a plan imports torch's tensor-parallel
styles only when it is applied, so ddp and fsdp ranks never do.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import torch
from torch import nn

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.names import span

if TYPE_CHECKING:
    from torch.distributed.device_mesh import DeviceMesh


@dataclass
class TiedWeight:
    """A weight the unsplit model uses twice, held by the first and the last stage."""

    name: str
    first: torch.Tensor  # the parameter in stage 0
    last: torch.Tensor  # the parameter in the last stage (a copy, kept equal by summing gradients)


@dataclass
class PipelineParts:
    """A model taken apart for pipelining, all of its own submodules (or views of them).

    A stage is the input part (first stage only), a run of consecutive blocks, and the output
    part (last stage only); each block takes the previous one's output. Where the output part
    reuses a weight of the input part, it holds a copy named in `tied`.
    """

    prologue: nn.Module | None
    blocks: list[nn.Module]
    epilogue: nn.Module
    tied: list[TiedWeight] = field(default_factory=list)


class ParallelPlan(ABC):
    """How one model splits for tensor and pipeline parallelism; every check works on a model
    built on the meta device, since the sweep planner asks before any process starts."""

    @abstractmethod
    def tp_problem(self, tp: int) -> Finding | None:
        """Why the model cannot be split over `tp` ranks (worded in
        contracts/wording/plan.py), or None."""

    def sp_problem(self, tp: int, seq_len: int | None) -> Finding | None:
        """Why sequence parallelism cannot run at `tp` (asked after tp_problem), or None:
        by default the sequence (`seq_len` tokens, when known) must split evenly."""
        if seq_len is not None and seq_len % tp:
            return Finding(code="layout.sequence_split", figures={"seq_len": seq_len, "tp": tp})
        return None

    @abstractmethod
    def apply_tp(self, mesh: DeviceMesh, sequence_parallel: bool) -> str:
        """Split the model in place over the 1-D `mesh`; returns the plan's short name (the
        result's `model_parallel.tp_plan`)."""

    def fsdp_units(self) -> list[nn.Module]:
        """What FSDP x TP shards on its own before the root (none: the root only)."""
        return []

    @abstractmethod
    def pipeline_depth(self) -> int:
        """How many blocks a pipeline boundary may fall between (cheap: nothing is built)."""

    @abstractmethod
    def pipeline_parts(self) -> PipelineParts:
        """The model taken apart for pipelining, with pipeline_depth() blocks."""

    def run_names(self, run: range) -> list[str]:
        """What a stage's run of blocks is called in a result."""
        return [span("block", run)]


@runtime_checkable
class DeclaresParallelPlan(Protocol):
    """A model class that knows how it splits."""

    def parallel_plan(self) -> ParallelPlan: ...


def plan_of(model: nn.Module) -> ParallelPlan | None:
    """The plan `model` declares; None for a plug-in that gives at most the short form."""
    return model.parallel_plan() if isinstance(model, DeclaresParallelPlan) else None
