"""Tensor parallelism over mesh["tp"]; under fsdp_tp, then FSDP2 over mesh["dp"].

TP first, FSDP second, as torchtitan composes them: fully_shard then shards the TP DTensors
(and the replicated parameters) over the data-parallel dimension of the same 2-D mesh.
"""

from __future__ import annotations

from typing import Any

from torch import nn
from torch.distributed.device_mesh import DeviceMesh

from torchscale.models.bundle import TpPlan
from torchscale.parallel import anatomy, tensor
from torchscale.parallel.layout import ParallelLayout

DROPOUT_RNG_NOTE = (
    "dropout: every rank of a TP group must draw the same dropout masks on replicated "
    "activations, so the per-rank RNG must be seeded by data_rank (seed + data_rank), not by "
    "global rank; sharded regions (attention heads, sequence shards) then reuse one mask "
    "pattern across TP ranks (Megatron keeps a second RNG for those; torchscale does not)"
)


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
    if anatomy.family(model) is None:
        assert plugin is not None  # infeasible() said so
        plugin(model, tp_mesh, layout.sequence_parallel)
        plan = "the plug-in's tp_plan"
    else:
        plan = tensor.apply_builtin(model, tp_mesh, layout.sequence_parallel)
    settings: dict[str, Any] = {"tp_plan": plan, **tensor.summary(model, tp_mesh)}
    settings["dropout_rng"] = DROPOUT_RNG_NOTE
    if layout.hybrid == "fsdp_tp":
        settings["fsdp_units"] = _shard(model, mesh["dp"], mp_policy, reshard_after_forward)
    return settings


def _shard(model: nn.Module, dp_mesh: DeviceMesh, mp_policy: Any, reshard: bool) -> str:
    """FSDP2 bottom-up over the data-parallel mesh: each transformer block (or encoder/decoder
    layer), then the root."""
    from torch.distributed.fsdp import fully_shard

    options: dict[str, Any] = {"mesh": dp_mesh, "reshard_after_forward": reshard}
    if mp_policy is not None:
        options["mp_policy"] = mp_policy
    blocks, layers = anatomy.transformer_blocks(model), anatomy.seq2seq_layers(model)
    units: list[nn.Module] = [*blocks, *layers]
    for block in units:
        fully_shard(block, **options)
    fully_shard(model, **options)
    kind = "encoder/decoder layers" if layers else "transformer blocks"
    return f"{len(units)} {kind} + root, sharded over mesh['dp']"
