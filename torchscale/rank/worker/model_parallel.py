"""A rank's share of a tp, pp or hybrid cell: the model parallelized by torchscale/rank/parallel/.

The trainer keeps one shape for every strategy: a module whose `.parameters()` are this rank's
(the TP-sharded model, or the ModuleList of this rank's pipeline stages), and, under
pipelining, the runner whose `step` replaces forward and backward. Ranks of one TP group or one
pipeline read the same batch: the data seed and the loader's shard follow the data-parallel
replica (`data_rank` of `data_ranks`), not the global rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.rank.models import ModelBundle
from torchscale.rank.models.seeded_init import SeededBuild
from torchscale.rank.worker.precision import fsdp_policy

if TYPE_CHECKING:
    from torchscale.rank.parallel.pipeline_step import PipelineRunner


@dataclass
class ModelParallel:
    module: nn.Module  # this rank's parameters: the parallelized model or its stage modules
    runner: PipelineRunner | None  # pipelines: runs one step's forward and backward
    # for the optimizer: DTensor and plain parameters apart (fused/foreach kernels take one
    # kind per group)
    param_groups: list[dict[str, Any]]
    data_rank: int
    data_ranks: int
    settings: dict[str, Any]


def model_parallel(
    spec: WorkerSpec,
    bundle: ModelBundle,
    model: nn.Module,
    device: torch.device,
    autocast: Any,
    world: int,
    build: SeededBuild | None = None,
) -> ModelParallel:
    """Parallelize `model` (on `device`, identical on every rank) for the cell's mesh; a
    pipeline builds its stages from `build` (`model`, on meta, is only checked).

    torchscale/rank/parallel/ (DTensor, pipelining: some 300 torch modules, torch._dynamo among
    them) is imported here, so ddp and fsdp ranks start and exit as they always did."""
    from torchscale.rank.parallel.setup import parallelize
    from torchscale.rank.strategy_layouts import layout_of

    shape = spec.cell.parallel
    assert shape is not None
    layout = layout_of(spec.cell.strategy, shape, world)
    example = None
    if layout.uses_pp:
        example, _ = bundle.make_batch(spec.cell.batch_size, device)
    parts = parallelize(
        model,
        bundle.loss_fn,
        layout,
        device,
        example_inputs=example,
        batch_size=spec.cell.batch_size,
        seq_len=bundle.tokens_per_sample,
        precision="fp16" if spec.cell.precision == "amp" else spec.cell.precision,
        grad_accum_steps=spec.training.grad_accum_steps,
        autocast=autocast,
        mp_policy_for_fsdp=fsdp_policy(spec.cell.precision),
        reshard_after_forward=spec.training.fsdp.reshard_after_forward,
        ddp_options=spec.training.ddp.model_dump(exclude={"broadcast_buffers"}),
        plugin_tp_plan=bundle.tp_plan,
        plugin_pp_split=bundle.pp_split,
        build=build,
    )
    if parts.pipeline is not None:
        module: nn.Module = nn.ModuleList(stage.submod for stage in parts.pipeline.stages)
    else:
        assert parts.model is not None
        module = parts.model
    return ModelParallel(
        module,
        parts.pipeline,
        parts.param_groups(),
        parts.data_rank,
        parts.data_ranks,
        parts.settings,
    )


def replica_flops(spec: WorkerSpec) -> float:
    """FLOPs of one training step of one model replica: the unsplit model on the meta device
    (no memory, no kernels) with the replica's batch, forward and backward, counted by
    FlopCounterMode under the MATH attention backend (every op has a formula). Counted once
    per replica whatever the mesh, as MFU wants, never once per shard."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    from torchscale.rank.models import build_model

    meta = torch.device("meta")
    with meta:
        bundle = build_model(
            spec.model.name,
            spec.model.options,
            seq_len=spec.data.seq_len,
            image_size=spec.data.image_size,
        )
    counter = FlopCounterMode(display=False)
    with counter, sdpa_kernel(SDPBackend.MATH):
        for _ in range(spec.training.grad_accum_steps):
            inputs, targets = bundle.make_batch(spec.cell.batch_size, meta)
            bundle.step_loss(inputs, targets).backward()
    return float(counter.get_total_flops())
