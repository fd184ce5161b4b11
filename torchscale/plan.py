"""Config -> the plan: one cell per model x batch size x world size x precision x strategy.

Pure functions over the validated config and a description of the machine, so the whole plan
(ids, what is skipped and why) is testable without launching anything.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from torchscale.config.schema import BenchConfig, ModelSpec

ResolvedDevice = Literal["cuda", "cpu"]
MAX_SLUG = 80  # keeps a cell id (and its result file name) far below NAME_MAX


@dataclass(frozen=True)
class Machine:
    """What the plan needs to know about the node it will run on."""

    gpu_count: int  # CUDA GPUs usable by torch on this node
    cpu_cores: int  # cores usable by this process


@dataclass(frozen=True)
class Cell:
    """One measurement: a model at one batch size, world size, precision and strategy."""

    model: ModelSpec
    batch_size: int  # per device
    world_size: int
    precision: str
    strategy: str
    device: ResolvedDevice
    backend: str
    omp_num_threads: int  # per rank, set explicitly for every cell
    definition: str = field(repr=False)  # canonical JSON of everything that shapes the result

    @property
    def cell_id(self) -> str:
        """Stable, filesystem-safe, readable id; the hash keeps ids of different definitions
        apart (e.g. two transformer sizes, or a changed step count)."""
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", self.model.display_name)[:MAX_SLUG]
        short = hashlib.sha256(self.definition.encode()).hexdigest()[:8]
        return (
            f"{slug}__b{self.batch_size}__w{self.world_size}__{self.precision}__"
            f"{self.strategy}__{short}"
        )


@dataclass(frozen=True)
class PlannedCell:
    cell: Cell
    skip_reason: str | None = None  # set: recorded as 'skipped', never launched
    warnings: tuple[str, ...] = ()


def resolve_device(config: BenchConfig, machine: Machine) -> ResolvedDevice:
    """`auto` means CUDA GPUs when the node has any, else CPU processes."""
    if config.device == "auto":
        return "cuda" if machine.gpu_count > 0 else "cpu"
    return config.device


def resolve_backend(config: BenchConfig, device: ResolvedDevice) -> str:
    if config.backend == "auto":
        return "nccl" if device == "cuda" else "gloo"
    return config.backend


def resolve_omp_threads(config: BenchConfig, machine: Machine) -> int:
    """OMP_NUM_THREADS for every rank of every cell of the sweep.

    An explicit `launcher.env.OMP_NUM_THREADS` or `launcher.omp_num_threads` wins. Otherwise
    the cores divided by the largest world size: every rank gets the same threads whatever the
    cell's world size (as every rank gets one GPU), so scaling efficiency compares equal ranks
    and a lone rank is not handed threads it would lose to contention on a busy machine.
    """
    from_env = config.launcher.env.get("OMP_NUM_THREADS", "")
    if from_env.isdigit() and int(from_env) > 0:
        return int(from_env)
    if config.launcher.omp_num_threads is not None:
        return config.launcher.omp_num_threads
    ranks_per_node = max(1, max(config.gpu_counts) // config.launcher.nnodes)
    return max(1, machine.cpu_cores // ranks_per_node)


def _definition(
    config: BenchConfig,
    model: ModelSpec,
    batch_size: int,
    world_size: int,
    precision: str,
    strategy: str,
    device: str,
    backend: str,
    omp_num_threads: int,
) -> str:
    """Everything that changes what a cell measures, as canonical JSON (for ids and resume)."""
    training = config.training.model_dump(mode="json", exclude={"precision", "strategy"})
    payload: dict[str, Any] = {
        "model": model.model_dump(mode="json"),
        "batch_size": batch_size,
        "world_size": world_size,
        "precision": precision,
        "strategy": strategy,
        "device": device,
        "backend": backend,
        "training": training,
        "measurement": config.measurement.model_dump(mode="json"),
        "data": config.data.model_dump(mode="json"),
        "nnodes": config.launcher.nnodes,
        "omp_num_threads": omp_num_threads,
        "env": dict(sorted(config.launcher.env.items())),
    }
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


def _feasibility(cell: Cell, config: BenchConfig, machine: Machine) -> PlannedCell:
    nnodes = config.launcher.nnodes
    if cell.device == "cuda":
        if machine.gpu_count == 0:
            return PlannedCell(cell, "device 'cuda' requested but no CUDA GPU is visible")
        available = machine.gpu_count * nnodes
        if cell.world_size > available:
            return PlannedCell(
                cell,
                f"needs {cell.world_size} GPUs; {nnodes} node(s) x {machine.gpu_count} "
                f"GPU(s) = {available}",
            )
        if cell.world_size % nnodes:
            return PlannedCell(
                cell, f"{cell.world_size} GPUs do not split evenly over {nnodes} nodes"
            )
        return PlannedCell(cell)
    if cell.backend == "nccl":
        return PlannedCell(cell, "backend 'nccl' needs CUDA GPUs; none is visible")
    warnings: list[str] = []
    if cell.precision == "amp":
        warnings.append("amp (fp16 autocast) on CPU is slow and not representative of GPUs")
    per_node = cell.world_size // nnodes if cell.world_size % nnodes == 0 else cell.world_size
    if per_node > machine.cpu_cores:
        warnings.append(
            f"{per_node} CPU ranks on {machine.cpu_cores} core(s): oversubscribed, "
            "timings include contention"
        )
    return PlannedCell(cell, None, tuple(warnings))


def build_plan(config: BenchConfig, machine: Machine) -> list[PlannedCell]:
    """Every cell in a stable order: model, precision, strategy, batch size, world size
    (world size innermost, so a model's scaling curve is measured back to back)."""
    device = resolve_device(config, machine)
    backend = resolve_backend(config, device)
    threads = resolve_omp_threads(config, machine)
    plan: list[PlannedCell] = []
    for model in config.models:
        for precision in config.training.precision:
            for strategy in config.training.strategy:
                for batch_size in config.batch_sizes:
                    for world_size in sorted(config.gpu_counts):
                        definition = _definition(
                            config,
                            model,
                            batch_size,
                            world_size,
                            precision,
                            strategy,
                            device,
                            backend,
                            threads,
                        )
                        cell = Cell(
                            model,
                            batch_size,
                            world_size,
                            precision,
                            strategy,
                            device,
                            backend,
                            threads,
                            definition,
                        )
                        plan.append(_feasibility(cell, config, machine))
    return plan
