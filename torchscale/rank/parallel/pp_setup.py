"""This rank's pipeline: stage modules cut from the model, PipelineStages, DDP, the schedule.

The stages are cut and sized on a model of fake tensors (no memory); then only this rank's
stages (and the source of a weight tied into them) are built for real, with the values the
unsplit model has (torchscale/rank/models/seeded_init.py), and moved to the device. A model
whose stages cannot be built alone (a tensor of them copied from another during construction,
as nn.Transformer deep-copies its layers) is built whole, and the result says so.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.nn.parallel import DistributedDataParallel

from torchscale.rank.models.bundle import PpSplit
from torchscale.rank.models.parallel_plan import plan_of
from torchscale.rank.models.seeded_init import (
    SeededBuild,
    ordinals_of,
    storage_id,
    tensors_of,
)
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


def _split(
    model: nn.Module, count: int, plugin: PpSplit | None, example: Any = None, runs: Any = None
) -> pieces.Split:
    if plan_of(model) is None:
        assert plugin is not None  # infeasible() said so
        return pieces.split_plugin(model, count, plugin)
    return pieces.split_at_blocks(model, count, example, runs)


def _on_meta(modules: list[nn.Module]) -> bool:
    return any(t.device.type == "meta" for t in tensors_of(modules))


def _as_fake(modules: list[nn.Module], device: torch.device) -> Any:
    """`modules`' meta tensors as fake tensors of `device` (still no memory), and the fake mode
    to run them under: autocast treats a fake tensor as its device's, where it leaves a meta
    tensor alone, so a forward gives the dtypes training sees."""
    if device.type == "meta":
        return contextlib.nullcontext()
    from torch._subclasses.fake_tensor import FakeTensorMode

    fake = FakeTensorMode(allow_non_fake_inputs=True)
    convert = fake.fake_tensor_converter
    with fake:
        for module in modules:
            module._apply(lambda t: convert.from_meta_and_device(fake, t, device))  # type: ignore[no-untyped-call]
    return fake


def own_stages(
    build: SeededBuild,
    count: int,
    mine: list[int],
    device: torch.device,
    example: Any,
    autocast: Autocast,
    plugin: PpSplit | None,
) -> tuple[pieces.Split, list[tuple[Any, Any]], dict[str, Any]]:
    """The split with this rank's stage modules `mine` built for real on `device` (the others
    on the meta device), every stage's (input, output) metadata, and what was built.

    On `device` meta (the plan checker) nothing is built; the count says what would be."""
    sizing, ordinals = build.sizing()
    split = sized = _split(sizing, count, plugin, example)  # balanced by the cost model
    local = [split.stages[i] for i in mine]
    held = {id(t) for t in tensors_of(local)}
    sources = [tie.first for tie in split.tied if id(tie.last) in held]
    keep = ordinals_of(tensors_of(local) + sources, ordinals)
    copies = sum(tie.last.numel() for tie in split.tied if id(tie.last) in held)
    built = sum(t.numel() for t in tensors_of([sizing]) if ordinals.get(storage_id(t)) in keep)
    with _as_fake(split.stages, device):
        shapes = stage_shapes(split.stages, example, autocast)
    how = "this rank's stages"
    if device.type == "meta":
        split = _split(build.part(set()), count, plugin, runs=sized.runs)
    else:
        split = _split(build.part(keep), count, plugin, runs=sized.runs)
        if _on_meta([split.stages[i] for i in mine]):
            how = "whole model (a stage's tensor is copied from another while it is built)"
            split = _split(build.whole(), count, plugin, runs=sized.runs)
            built = sum(t.numel() for t in tensors_of([sizing]))
    for i, module in enumerate(split.stages):
        # this rank's stages to its device; the others' weights (all meta, unless the model
        # was built whole) freed
        module.to(device if i in mine else "meta")
    split.flops = sized.flops
    return split, shapes, {"pp_built": how, "pp_built_parameters": built + copies}


def pipeline_parallel(
    build: SeededBuild,
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
    pp_mesh = mesh["pp"]
    pp_rank = pp_mesh.get_local_rank()
    mine = stage_indices(layout, pp_rank)
    split, shapes, built = own_stages(build, count, mine, device, example, autocast, plugin)
    local = [split.stages[i] for i in mine]
    tied = _tied_grads(split, layout, mesh, local)
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
        "pp_stages": [
            {
                "index": i,
                "holds": split.holds[i],
                "forward_flops_per_sample": None if split.flops is None else split.flops[i],
            }
            for i in range(count)
        ],
        "pp_split": "the plug-in's own" if split.flops is None else "balanced by forward FLOPs",
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
        "pp_stage_metadata": (
            "static (one eval-mode forward of the whole chain on fake tensors at set-up)"
        ),
        "pp_ddp_over": "mesh['dp'] per stage module" if dp_group is not None else None,
        "pp_theoretical_bubble": theoretical_bubble(layout),
    } | built
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
