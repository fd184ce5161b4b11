"""This rank's pipeline: stage modules cut from the model, PipelineStages, DDP, the schedule.

Stage modules other ranks hold are moved to the meta device once the stages are sized, so a
rank keeps only its own share of the weights (the full model built on every rank is unusable
afterwards, and must not be used).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.nn.parallel import DistributedDataParallel

from torchscale.rank.models.bundle import PpSplit
from torchscale.rank.models.parallel_plan import plan_of
from torchscale.rank.parallel import pieces
from torchscale.rank.parallel.busy import BusyTimer
from torchscale.rank.parallel.pipeline_step import (
    Autocast,
    PipelineRunner,
    TiedGrad,
    TimedStage,
    build_schedule,
    stage_shapes,
    timed_loss,
)
from torchscale.rank.parallel.rank_layout import ParallelLayout, stage_indices, theoretical_bubble


def first_tensor(inputs: Any) -> Any:
    """The first of a batch's inputs (tuple, list, mapping or the value itself)."""
    if isinstance(inputs, (tuple, list)):
        return inputs[0] if inputs else None
    return next(iter(inputs.values()), None) if isinstance(inputs, dict) else inputs


def stage_example(inputs: Any, microbatches: int) -> torch.Tensor | tuple[torch.Tensor, ...]:
    """One micro-batch of the first stage's arguments, to size the stages: every tensor of a
    tuple (the encoder-decoder's source and target ids: the runner passes a tuple's items as
    the first stage's arguments), else the first input (a list's or mapping's first item, or
    the value itself)."""
    if isinstance(inputs, tuple) and len(inputs) > 1:
        if not all(isinstance(t, torch.Tensor) for t in inputs):
            raise ValueError("pipeline layouts need example_inputs made of tensors")
        return tuple(t[: t.shape[0] // microbatches] for t in inputs)
    example = first_tensor(inputs)
    if not isinstance(example, torch.Tensor):
        raise ValueError("pipeline layouts need example_inputs (one tensor) to size the stages")
    return example[: example.shape[0] // microbatches]


def pipeline_parallel(
    model: nn.Module,
    loss_fn: Callable[[Any, Any], torch.Tensor],
    layout: ParallelLayout,
    mesh: DeviceMesh,
    device: torch.device,
    example_inputs: Any,
    autocast: Autocast,
    ddp_options: dict[str, Any],
    plugin: PpSplit | None,
) -> tuple[PipelineRunner, list[nn.Parameter], dict[str, Any]]:
    """This rank's runner, its parameters, and the settings that describe the pipeline."""
    micro = layout.microbatches
    example = stage_example(example_inputs, micro)
    count = layout.stage_modules
    if plan_of(model) is None:
        assert plugin is not None  # infeasible() said so
        split = pieces.split_plugin(model, count, plugin)
    else:
        split = pieces.split_at_blocks(model, count)
    for module in split.stages:
        module.to(device)
    shapes = stage_shapes(split.stages, example, autocast)
    pp_mesh = mesh["pp"]
    pp_rank = pp_mesh.get_local_rank()
    mine = stage_indices(layout, pp_rank)
    local = [split.stages[i] for i in mine]
    tied = _tied_grads(split, layout, mesh, local)
    for i, module in enumerate(split.stages):
        if i not in mine:
            module.to("meta")  # frees this rank's copy of other ranks' weights
    dp_group = mesh["dp"].get_group() if layout.hybrid == "ddp_pp" else None
    timer = BusyTimer(device)
    stages: list[TimedStage] = []
    for index, module in zip(mine, local, strict=True):
        submod: nn.Module = module
        if dp_group is not None:
            submod = DistributedDataParallel(
                module,
                process_group=dp_group,
                device_ids=[device.index] if device.type == "cuda" else None,
                **ddp_options,
            )
        stages.append(
            TimedStage(
                submod,
                index,
                count,
                device,
                input_args=shapes[index][0],
                output_args=shapes[index][1],
                group=pp_mesh.get_group(),
                timer=timer,
                autocast=autocast,
            )
        )
    schedule = build_schedule(layout, stages, timed_loss(loss_fn, timer, autocast))
    params = list({id(p): p for module in local for p in module.parameters()}.values())
    settings = {
        "pp_rank": pp_rank,
        "pp_stage_indices": mine,
        "pp_stages": [{"index": i, "holds": split.holds[i]} for i in range(count)],
        "pp_local_parameters": sum(p.numel() for p in params),
        "pp_schedule": layout.schedule,
        "pp_microbatches": micro,
        "pp_microbatch_size": int(first_tensor(example).shape[0]),
        "pp_tied_weights": [
            f"{t.name}: the last stage holds a copy initialised equal; the two gradients are "
            "summed between the first and last stage's ranks after each step"
            for t in split.tied
        ],
        "pp_busy_timing": timer.method,
        "pp_stage_metadata": "static (one eval-mode forward of the whole chain at set-up)",
        "pp_ddp_over": "mesh['dp'] per stage module" if dp_group is not None else None,
        "pp_theoretical_bubble": theoretical_bubble(layout),
    }
    return PipelineRunner(layout, schedule, stages, tied, timer), params, settings


def _tied_grads(
    split: pieces.Split, layout: ParallelLayout, mesh: DeviceMesh, local: list[nn.Module]
) -> list[TiedGrad]:
    """One 2-rank group per replica (first and last stage's ranks) for each tied weight.

    Every rank creates every group, in the same order, as dist.new_group requires.
    """
    if not split.tied:
        return []
    ranks = mesh.mesh.reshape(layout.dp, layout.pp).tolist()
    last_rank = (layout.stage_modules - 1) % layout.pp
    mine = {id(p) for module in local for p in module.parameters()}
    replica = layout.replica_of(dist.get_rank())
    found: list[TiedGrad] = []
    for tie in split.tied:
        for d, row in enumerate(ranks):
            group = dist.new_group([int(row[0]), int(row[last_rank])])
            if d != replica:
                continue
            for param in (tie.first, tie.last):
                if id(param) in mine:
                    found.append(TiedGrad(tie.name, param, group))
    return found
