"""Words for why a plan skips a cell by design (orchestration/plan.py; figures: gpus a cell
needs per node, have: a node's GPUs, nodes, source: where the count came from when not from
the planning node; world, tp, pp: the mesh; the data source and the models it feeds). Why a
layout cannot train a model is worded in layouts.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases


def _source(figures: Mapping[str, Any]) -> str:
    return f" ({figures['source']})" if figures.get("source") else ""


def _no_gpu(figures: Mapping[str, Any]) -> str:
    if figures.get("source"):
        return f"device 'cuda' requested but a node has no GPU{_source(figures)}"
    return "device 'cuda' requested but no CUDA GPU is visible"


def _needs_gpus(figures: Mapping[str, Any]) -> str:
    have = f"has {figures['have']}{_source(figures)}"
    if figures.get("nodes", 1) == 1:
        which = "a node" if figures.get("source") else "this node"
        return f"needs {figures['gpus']} GPUs; {which} {have}"
    return f"needs {figures['gpus']} GPUs on each of {figures['nodes']} nodes; a node {have}"


def _mesh_indivisible(f: Mapping[str, Any]) -> str:
    inner = f"tp {f['tp']}" if "tp" in f else f"pp {f['pp']}"
    return f"world size {f['world']} is not divisible by the mesh ({inner})"


def _tp_spans_nodes(f: Mapping[str, Any]) -> str:
    per_node = f["per_node"]
    keep = (
        f"hybrid fsdp_tp with parallel.tp {per_node} keeps TP inside each node"
        if per_node > 1
        else "give each node several ranks and use hybrid fsdp_tp"
    )
    return (
        f"tensor-parallel groups of {f['tp']} ranks would span nodes ({f['nodes']} nodes x "
        f"{per_node} ranks): {keep}, or set training.parallel.tp_across_nodes: true"
    )


PHRASES: Phrases = {
    "plan.needs_gpus": _needs_gpus,
    "plan.no_gpu": _no_gpu,
    "plan.nccl_without_cuda": "backend 'nccl' needs CUDA GPUs; none is visible",
    "plan.nccl_shared_gpu": (
        "{ranks} ranks would share each GPU (launcher.ranks_per_gpu) and NCCL refuses two ranks "
        "on one GPU: leave backend to 'auto' (gloo where ranks share a GPU)"
    ),
    "plan.gloo_cuda_p2p": (
        "a pipeline of {pp} stages sends activations with send/recv, which gloo does not copy "
        "off a GPU (only its collectives do): pipelines on CUDA need NCCL, a GPU per rank"
    ),
    "plan.partial_nodes": (
        "{world} GPUs do not fill whole nodes of {per_node} (launcher gpus_per_node); give "
        "launcher.nodes to choose the split"
    ),
    "plan.data_synthetic_only": (
        "plug-in models train on synthetic data only (their batch format is their own); "
        "data.source '{source}' cannot feed them"
    ),
    "plan.data_images_only": (
        "data.source '{source}' holds RGB images: it feeds image models only ({models:list})"
    ),
    "plan.tp_not_world": (
        "strategy tp runs one tensor-parallel group over the whole world: parallel.tp {tp} != "
        "world size {world} (hybrid fsdp_tp adds data parallelism across TP groups)"
    ),
    "plan.pp_not_world": (
        "strategy pp runs one pipeline over the whole world: parallel.pp {pp} != world size "
        "{world} (hybrid ddp_pp adds data parallelism across pipelines)"
    ),
    "plan.mesh_indivisible": _mesh_indivisible,
    "plan.tp_spans_nodes": _tp_spans_nodes,
    "plan.compiled_pipeline": (
        "training.compile with pipelining is not supported: the schedule calls each stage module "
        "itself (run the pp cells without compile)"
    ),
}
