"""One entry point that turns a built model into what a rank trains under a parallel layout.

Tensor parallel (and FSDP x TP) hands back the parallelized module, trained as today: forward,
loss, backward, optimizer step. Pipeline parallel (and DDP x PP) hands back a PipelineRunner
whose `step` runs the forward and backward of all micro-batches. Either way the optimizer gets
`params`, and the rank reads data shard `data_rank` of `data_ranks`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.tensor import DTensor

from torchscale.contracts.wording import say
from torchscale.rank.models.bundle import PpSplit, TpPlan
from torchscale.rank.models.seeded_init import SeededBuild
from torchscale.rank.parallel.pipeline_step import Autocast, PipelineRunner
from torchscale.rank.parallel.pp_setup import first_tensor, pipeline_parallel
from torchscale.rank.parallel.rank_layout import ParallelLayout, infeasible
from torchscale.rank.parallel.tp_setup import tensor_parallel


@dataclass
class Parallelized:
    """What a rank trains: a module (TP, FSDP x TP) or a pipeline runner (PP, DDP x PP)."""

    model: nn.Module | None
    pipeline: PipelineRunner | None
    params: list[nn.Parameter]
    data_rank: int  # the data shard this rank reads: ranks of one TP group / pipeline share it
    data_ranks: int
    settings: dict[str, Any] = field(default_factory=dict)
    mesh: DeviceMesh | None = None

    def param_groups(self) -> list[dict[str, Any]]:
        """`params` as optimizer parameter groups: DTensors apart from plain tensors.

        Under TP the sharded parameters are DTensors and the replicated ones (embeddings,
        norms, heads) plain tensors; fused and foreach optimizers apply one kernel to a whole
        group and fail on a mix (seen with fused AdamW on CUDA, torch 2.11). Separate groups
        run each kind on its own; the update is the same.
        """
        dtensors = [p for p in self.params if isinstance(p, DTensor)]
        plain = [p for p in self.params if not isinstance(p, DTensor)]
        return [{"params": group} for group in (dtensors, plain) if group]


def parallelize(
    model: nn.Module,
    loss_fn: Callable[[Any, Any], torch.Tensor],
    layout: ParallelLayout,
    device: torch.device,
    *,
    example_inputs: Any = None,
    batch_size: int | None = None,
    seq_len: int | None = None,
    precision: str | None = None,
    grad_accum_steps: int = 1,
    channels_last: bool = False,
    autocast: Autocast | None = None,
    mp_policy_for_fsdp: Any = None,
    reshard_after_forward: bool = True,
    ddp_options: dict[str, Any] | None = None,
    plugin_tp_plan: TpPlan | None = None,
    plugin_pp_split: PpSplit | None = None,
    build: SeededBuild | None = None,
) -> Parallelized:
    """Parallelize `model` (already on `device`, identical on every rank) for `layout`.

    Needs the default process group (world = layout.world). Pipeline layouts build their own
    stages from `build` (`model` is only checked: build it on the meta device), and need
    `example_inputs`: a per-replica batch of inputs (only shapes, dtypes and strides matter) to
    size the stages, and `autocast`, the same context factory the step runs under, since
    pipelining must run each micro-batch's forward under it inside the schedule. Raises
    ValueError with `infeasible`'s reason when the layout cannot run the model.

    `precision`, `grad_accum_steps` and `channels_last` are only checked (see `infeasible`).
    """
    if dist.get_world_size() != layout.world:
        raise ValueError(f"world size {dist.get_world_size()} is not the layout's {layout.world}")
    example = first_tensor(example_inputs)
    if batch_size is None:
        batch_size = int(example.shape[0]) if isinstance(example, torch.Tensor) else 1
    problem = infeasible(
        model,
        layout,
        batch_size,
        seq_len=seq_len,
        precision=precision,
        grad_accum_steps=grad_accum_steps,
        channels_last=channels_last,
        plugin_tp_plan=plugin_tp_plan,
        plugin_pp_split=plugin_pp_split,
    )
    if problem is not None:
        raise ValueError(say(problem))
    shape, names = layout.mesh_shape()
    mesh = init_device_mesh(device.type, shape, mesh_dim_names=names)
    replica = layout.replica_of(dist.get_rank())
    settings: dict[str, Any] = {
        "parallel": layout.describe(),
        "data_rank": replica,
        "data_ranks": layout.dp,
    }
    if layout.uses_tp:
        settings |= tensor_parallel(
            model, layout, mesh, plugin_tp_plan, mp_policy_for_fsdp, reshard_after_forward
        )
        params = list(model.parameters())
        return Parallelized(model, None, params, replica, layout.dp, settings, mesh)
    if build is None:
        raise ValueError("pipeline layouts need `build`, to build this rank's stages alone")
    context, options = autocast or contextlib.nullcontext, ddp_options or {}
    runner, params, more = pipeline_parallel(
        build, loss_fn, layout, mesh, device, example_inputs, context, options, plugin_pp_split
    )
    return Parallelized(None, runner, params, replica, layout.dp, settings | more, mesh)
