"""Cut a model into pipeline stage modules at block boundaries.

Each stage module is input part (first stage only) + a run of blocks + output part (last stage
only), the parts the model's ParallelPlan declares, all made of the model's own submodules, so a
stage trains the very parameters the unsplit model has. The one exception, a weight tied across
the cut, has a copy in the last stage (docs/strategies.md, "Tied weights across stages").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from torchscale.rank.models.parallel_plan import TiedWeight, plan_of


class StageModule(nn.Module):
    """One pipeline stage: optional input part, consecutive blocks, optional output part."""

    def __init__(
        self, prologue: nn.Module | None, blocks: list[nn.Module], epilogue: nn.Module | None
    ) -> None:
        super().__init__()
        self.prologue = prologue
        self.blocks = nn.Sequential(*blocks)
        self.epilogue = epilogue

    def forward(self, *args: Any) -> Any:
        """One tensor for most models; several (the encoder-decoder's pair) arrive as separate
        arguments, as PipelineStage passes them, and travel between blocks as one tuple."""
        x: Any = args[0] if len(args) == 1 else args
        if self.prologue is not None:
            x = self.prologue(*args)
        x = self.blocks(x)
        if self.epilogue is not None:
            x = self.epilogue(x)
        return x


@dataclass
class Split:
    """The stage modules of one pipeline, what each holds, and the weights tied across them."""

    stages: list[nn.Module]
    holds: list[str]
    tied: list[TiedWeight] = field(default_factory=list)


def block_ranges(blocks: int, stages: int) -> list[range]:
    """Consecutive runs of blocks, as even as possible, the longer runs first."""
    base, extra = divmod(blocks, stages)
    start = [i * base + min(i, extra) for i in range(stages + 1)]
    return [range(start[i], start[i + 1]) for i in range(stages)]


def split_at_blocks(model: nn.Module, stages: int) -> Split:
    """Cut a model that declares its ParallelPlan (every built-in model does) into `stages`
    stage modules (see the module docstring)."""
    plan = plan_of(model)
    if plan is None:
        raise ValueError(f"no pipeline split for {type(model).__name__}")
    parts = plan.pipeline_parts()
    if len(parts.blocks) < stages:
        raise ValueError(f"{len(parts.blocks)} blocks cannot fill {stages} stage modules")
    modules: list[nn.Module] = []
    holds: list[str] = []
    for i, run in enumerate(block_ranges(len(parts.blocks), stages)):
        first, last = i == 0, i == stages - 1
        prologue, epilogue = (parts.prologue if first else None), (parts.epilogue if last else None)
        modules.append(StageModule(prologue, [parts.blocks[j] for j in run], epilogue))
        names = ["input part"] if first else []
        names += plan.run_names(run)
        if last:
            names.append("output part")
        holds.append(" + ".join(names))
    return Split(modules, holds, parts.tied)


def split_plugin(
    model: nn.Module, stages: int, pp_split: Callable[[nn.Module, int], list[nn.Module]]
) -> Split:
    """A plug-in's own split: exactly `stages` modules, no weight tied across them."""
    modules = list(pp_split(model, stages))
    if len(modules) != stages:
        raise ValueError(f"the plug-in's pp_split returned {len(modules)} modules, not {stages}")
    return Split(modules, [f"plug-in stage {i}" for i in range(stages)])
