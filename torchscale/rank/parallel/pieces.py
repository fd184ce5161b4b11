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

import torch
from torch import nn

from torchscale.rank.models.parallel_plan import PipelineParts, TiedWeight, plan_of


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
    """The stage modules of one pipeline, what each holds, the weights tied across them, the
    runs of blocks they hold and each stage's forward FLOPs per sample (None: not counted)."""

    stages: list[nn.Module]
    holds: list[str]
    tied: list[TiedWeight] = field(default_factory=list)
    runs: list[range] = field(default_factory=list)
    flops: list[float] | None = None


def block_ranges(blocks: int, stages: int) -> list[range]:
    """Consecutive runs of blocks, as even as possible, the longer runs first."""
    base, extra = divmod(blocks, stages)
    start = [i * base + min(i, extra) for i in range(stages + 1)]
    return [range(start[i], start[i + 1]) for i in range(stages)]


def part_flops(parts: PipelineParts, example: Any) -> list[float]:
    """The pipeline's cost model: forward FLOPs of `example` (a micro-batch) through the input
    part, each block and the output part, in that order, counted by torch's FlopCounterMode on
    the meta device with attention as matmuls, as the project counts a model's FLOPs
    (tests/model_measure.py): every matmul and convolution, causal attention in full, lookups free.
    The backward of these ops costs twice their forward, so forward FLOPs weigh the parts as
    a training step does."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    meta = torch.device("meta")
    x: Any = tuple(t.to(meta) for t in example) if isinstance(example, tuple) else example.to(meta)
    chain = [parts.prologue, *parts.blocks, parts.epilogue]
    flops: list[float] = []
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
        for i, module in enumerate(chain):
            if module is None:  # a model without an input part: its blocks take the input
                flops.append(0.0)
                continue
            counter = FlopCounterMode(display=False)
            with counter:
                # the first module takes a tuple's tensors as arguments, as PipelineStage passes
                # them; blocks pass a tuple on as one value (StageModule.forward)
                x = module(*x) if i == 0 and isinstance(x, tuple) else module(x)
            flops.append(float(counter.get_total_flops()))
    return flops


def balanced_runs(flops: list[float], stages: int) -> list[range]:
    """Runs of blocks for `stages` stages that make the costliest stage as cheap as possible,
    then the stages' costs as even as possible (least sum of squares); `flops` are
    part_flops' (input part, blocks..., output part), the input part on the first stage and
    the output part on the last. Every stage between holds a block; the first and the last
    may hold only their part (GPT-2's LM head alone costs about four and a half blocks)."""
    head, blocks, tail = flops[0], flops[1:-1], flops[-1]
    n = len(blocks)
    prefix = [0.0]
    for f in blocks:
        prefix.append(prefix[-1] + f)

    def cost(k: int, a: int, b: int) -> float:
        return (
            prefix[b] - prefix[a] + (head if k == 0 else 0.0) + (tail if k == stages - 1 else 0.0)
        )

    def least(score: Any, bound: float) -> tuple[float, list[int]] | None:
        # best[k][j]: (score, cuts) of blocks[:j] over stages 0..k
        best: list[dict[int, tuple[float, list[int]]]] = [{} for _ in range(stages)]
        for j in range(n + 1):
            if (j >= 1 or stages == 1 or head > 0) and cost(0, 0, j) <= bound:
                best[0][j] = (score(0.0, cost(0, 0, j)), [j])
        for k in range(1, stages):
            need = 1 if k < stages - 1 or tail == 0 else 0
            for j in range(n + 1):
                options = [
                    (score(prev[0], cost(k, i, j)), [*prev[1], j])
                    for i, prev in best[k - 1].items()
                    if j - i >= need and cost(k, i, j) <= bound
                ]
                if options:
                    best[k][j] = min(options, key=lambda o: o[0])
        return best[stages - 1].get(n)

    peak = least(lambda acc, c: max(acc, c), float("inf"))
    if peak is None:
        raise ValueError(f"{n} blocks cannot fill {stages} stage modules")
    even = least(lambda acc, c: acc + c * c, peak[0] * (1 + 1e-9))
    cuts = (even or peak)[1]
    starts = [0, *cuts]
    return [range(starts[k], starts[k + 1]) for k in range(stages)]


def split_at_blocks(
    model: nn.Module, stages: int, example: Any = None, runs: list[range] | None = None
) -> Split:
    """Cut a model that declares its ParallelPlan (every built-in model does) into `stages`
    stage modules (see the module docstring): at `runs` when given, else balanced by the cost
    model (part_flops) of `example`, a micro-batch, else by block count."""
    plan = plan_of(model)
    if plan is None:
        raise ValueError(f"no pipeline split for {type(model).__name__}")
    parts = plan.pipeline_parts()
    if len(parts.blocks) < stages:
        raise ValueError(f"{len(parts.blocks)} blocks cannot fill {stages} stage modules")
    flops = part_flops(parts, example) if example is not None and runs is None else None
    if runs is None:
        runs = balanced_runs(flops, stages) if flops else block_ranges(len(parts.blocks), stages)
    modules: list[nn.Module] = []
    holds: list[str] = []
    for i, run in enumerate(runs):
        first, last = i == 0, i == stages - 1
        prologue, epilogue = (parts.prologue if first else None), (parts.epilogue if last else None)
        modules.append(StageModule(prologue, [parts.blocks[j] for j in run], epilogue))
        names = ["input part"] if first else []
        names += plan.run_names(run) if run else []
        if last:
            names.append("output part")
        holds.append(" + ".join(names))
    stage_flops = None
    if flops is not None:
        samples = _samples(example)
        stage_flops = [
            (
                sum(flops[1 + j] for j in run)
                + (flops[0] if i == 0 else 0.0)
                + (flops[-1] if i == stages - 1 else 0.0)
            )
            / samples
            for i, run in enumerate(runs)
        ]
    return Split(modules, holds, parts.tied, list(runs), stage_flops)


def _samples(example: Any) -> int:
    first = example[0] if isinstance(example, tuple) else example
    return int(first.shape[0]) or 1


def split_plugin(
    model: nn.Module, stages: int, pp_split: Callable[[nn.Module, int], list[nn.Module]]
) -> Split:
    """A plug-in's own split: exactly `stages` modules, no weight tied across them."""
    modules = list(pp_split(model, stages))
    if len(modules) != stages:
        raise ValueError(f"the plug-in's pp_split returned {len(modules)} modules, not {stages}")
    return Split(modules, [f"plug-in stage {i}" for i in range(stages)])
