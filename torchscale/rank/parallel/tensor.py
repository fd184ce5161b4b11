"""What a tensor-parallel split sharded and what it left replicated, for the result.

The split itself is the model's own (ParallelPlan.apply_tp, torchscale/rank/models/parallel_plan.py)
or a plug-in's tp_plan; this reads the parameters it left behind.
"""

from __future__ import annotations

from typing import Any

from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor, Shard


def summary(model: nn.Module, mesh: DeviceMesh) -> dict[str, Any]:
    """Which parameters are sharded over the TP mesh and which replicated, for the result.

    Replicated parameters cost full memory on every TP rank, so the memory saving of TP is
    `sharded_parameters * (1 - 1/tp)` elements, not the whole model's.
    """
    sharded = replicated = 0
    replicated_names: list[str] = []
    for name, param in model.named_parameters():
        shards = isinstance(param, DTensor) and any(isinstance(p, Shard) for p in param.placements)
        count = param.numel()  # the global element count, for a DTensor too
        if shards:
            sharded += count
        else:
            replicated += count
            replicated_names.append(name)
    return {
        "tp_mesh_size": mesh.size(),
        "tp_sharded_parameters": sharded,
        "tp_replicated_parameters": replicated,
        "tp_replicated": _collapse(replicated_names),
    }


def _collapse(names: list[str]) -> list[str]:
    """Parameter names with per-block entries folded ("blocks.0.ln_1.weight",
    "blocks.1.ln_1.weight" -> "blocks.*.ln_1.weight"), so the list stays short for deep models."""
    folded = (".".join("*" if p.isdigit() else p for p in name.split(".")) for name in names)
    return list(dict.fromkeys(folded))
