"""Tensor parallelism over mesh["tp"]; under fsdp_tp, then FSDP2 over mesh["dp"].

TP first, FSDP second, as torchtitan composes them: fully_shard then shards the TP DTensors
(and the replicated parameters) over the data-parallel dimension of the same 2-D mesh. The plan
is the model's ParallelPlan, or for a plug-in that declares none its ModelBundle's tp_plan.
"""

from __future__ import annotations

from typing import Any

from torch import nn
from torch.distributed.device_mesh import DeviceMesh

from torchscale.rank.models.bundle import TpPlan
from torchscale.rank.models.parallel_plan import plan_of
from torchscale.rank.parallel import tensor
from torchscale.rank.parallel.rank_layout import ParallelLayout


def tensor_parallel(
    model: nn.Module,
    layout: ParallelLayout,
    mesh: DeviceMesh,
    plugin: TpPlan | None,
    mp_policy: Any,
    reshard_after_forward: bool,
) -> dict[str, Any]:
    """Parallelize `model` in place; returns the settings that describe it."""
    tp_mesh = mesh["tp"]
    plan = plan_of(model)
    if plan is None:
        assert plugin is not None  # infeasible() said so
        plugin(model, tp_mesh, layout.sequence_parallel)
        description = "plugin"
        units: list[nn.Module] = []
    else:
        description = plan.apply_tp(tp_mesh, layout.sequence_parallel)
        units = plan.fsdp_units()
    # dropout: every rank of a TP group draws the same masks on replicated activations (the
    # per-rank RNG is seeded by data_rank, not global rank); sharded regions then reuse one
    # mask pattern across TP ranks (Megatron keeps a second RNG for those; torchscale does not)
    settings: dict[str, Any] = {"tp_plan": description, **tensor.summary(model, tp_mesh)}
    if layout.hybrid == "fsdp_tp":  # the units, then the root, sharded over mesh["dp"]
        _shard(model, units, mesh["dp"], mp_policy, reshard_after_forward)
        settings["fsdp_units"] = len(units)
    return settings


def _shard(
    model: nn.Module, units: list[nn.Module], dp_mesh: DeviceMesh, mp_policy: Any, reshard: bool
) -> None:
    """FSDP2 bottom-up over the data-parallel mesh: each unit the plan names (transformer
    block, encoder/decoder layer), then the root, which is not resharded after forward
    (backward needs it first; an explicit value turns FSDP2's own root rule off)."""
    from torch.distributed.fsdp import fully_shard

    options: dict[str, Any] = {"mesh": dp_mesh, "reshard_after_forward": reshard}
    if mp_policy is not None:
        options["mp_policy"] = mp_policy
    for unit in units:
        fully_shard(unit, **options)
    fully_shard(model, **(options | {"reshard_after_forward": False}))
