"""Words for why a plan skips a cell by design (orchestration/plan.py; figures: gpus a cell
needs per node, have: a node's GPUs, nodes, source: where the count came from when not from
the planning node, said: the line of a check that still answers in words)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


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


PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "plan.needs_gpus": _needs_gpus,
    "plan.no_gpu": _no_gpu,
    "plan.nccl_without_cuda": lambda _: "backend 'nccl' needs CUDA GPUs; none is visible",
    "plan.infeasible": lambda figures: str(figures["said"]),
}
