"""A cell's definition and identity: everything that changes what it measures, as canonical
JSON, whose hash ends its id (a changed setting is a new cell, and --resume reuses a result only
while its definition is unchanged), and the training settings a null leaves open, resolved; a
`jobs:` row's cell's definition beside a built-in cell's.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from torchscale.contracts.catalog import Precision
from torchscale.contracts.cell import Backend, CellIdentity, Device, definition_hash, make_cell_id
from torchscale.contracts.cell_settings import ModelSpec, TrainingConfig
from torchscale.contracts.training_defaults import (
    WORKLOAD_REVISION,
    LossKind,
    builtin_conv_net,
    resolve_bf16_activations,
    resolve_channels_last,
    resolve_compile,
    resolve_fused_optimizer,
)
from torchscale.orchestration.own_job.job_line import JobLine
from torchscale.orchestration.plan.nodes import Shape

if TYPE_CHECKING:  # the config's pydantic schema: only its values are read here
    from torchscale.orchestration.config.schema import BenchConfig


def cell_definition(
    config: BenchConfig,
    training_config: TrainingConfig,
    loss: LossKind,
    model: ModelSpec,
    cell: CellIdentity,
    omp_num_threads: int,
) -> str:
    """Everything that changes what `cell` measures, as canonical JSON (for ids and resume).

    Its shape is part of the results format: --resume reuses a result, of any schema version,
    only while this JSON (and so its hash) is unchanged. A config field must be left out here
    while it holds its default, or every result written before the field existed stops
    matching: `training.parallel` enters only as the mesh of a tp, pp or hybrid cell, and
    `training.bf16_activations` only where it is on. `workload_revision`
    (training_defaults.py) moves every hash when the same config trains another workload, and
    the options a null leaves to the defaults (fused AdamW, channels_last) are written
    resolved, as is the loss the measured steps run (`training.loss`), so a result is reused
    only for the workload it measured.
    """
    training = training_config.model_dump(
        mode="json", exclude={"precision", "strategy", "parallel"}
    )
    if not training.get("bf16_activations"):
        training.pop("bf16_activations", None)
    training["loss"] = loss
    payload: dict[str, Any] = {
        "model": model.model_dump(mode="json"),
        "batch_size": cell.batch_size,
        "world_size": cell.world_size,
        "precision": cell.precision,
        "strategy": cell.strategy,
        "device": cell.device,
        "backend": cell.backend,
        "training": training,
        "measurement": config.measurement.model_dump(mode="json"),
        "data": _data_definition(config),
        "nnodes": cell.nodes,
        "omp_num_threads": omp_num_threads,
        "env": dict(sorted(config.launcher.env.items())),
        "workload_revision": WORKLOAD_REVISION,
    }
    if cell.device == "cpu":  # where the CPU is the device, how its allocator reuses memory
        payload["cpu_malloc"] = config.launcher.cpu_malloc
        # and where its ranks run: binding changes what a CPU cell measures
        payload["cpu_binding"] = config.launcher.cpu_binding
    if cell.parallel is not None:
        payload["parallel"] = cell.parallel.model_dump(mode="json")
    if cell.shares_gpu:  # only then: the definitions (and ids) of other cells stay as they were
        payload["ranks_per_gpu"] = cell.ranks_per_gpu
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


# the data fields a synthetic cell's definition holds: the others (loader, shards) change
# nothing it measures, and leaving them out keeps the hash of results written without them
SYNTHETIC_DATA_FIELDS = ("source", "seq_len", "image_size")


def _data_definition(config: BenchConfig) -> dict[str, Any]:
    """The `data` part of a cell's definition: for synthetic data only the fields it always
    had (so earlier results keep their hash and --resume reuses them), else every field."""
    data = config.data.model_dump(mode="json")
    if config.data.source == "synthetic":
        return {key: data[key] for key in SYNTHETIC_DATA_FIELDS}
    return data


def cell_training(
    config: BenchConfig,
    model: ModelSpec,
    precision: Precision,
    device: Device,
    pipeline: bool,
    parameters: int | None = None,
) -> TrainingConfig:
    """The config's training settings with what a null leaves open resolved for this cell, so
    the rank runs and the definition records the same choice (training_defaults.py)."""
    return config.training.model_copy(
        update={
            "compile": resolve_compile(config.training.compile, device, pipeline, parameters),
            "bf16_activations": resolve_bf16_activations(
                config.training.bf16_activations, precision, model.name
            ),
            "fused_optimizer": resolve_fused_optimizer(
                config.training.fused_optimizer, config.training.optimizer
            ),
            "channels_last": resolve_channels_last(
                config.training.channels_last, device, builtin_conv_net(model.name)
            ),
        }
    )


def identified(cell: CellIdentity, definition: str) -> CellIdentity:
    """`cell` with its id, which ends in its definition's hash, so a changed setting is a new
    cell (and --resume never reuses a result it does not match)."""
    sha = definition_hash(definition)
    slug = cell.parallel.slug(cell.strategy) if cell.parallel is not None else cell.strategy
    size = (cell.batch_size, cell.world_size, cell.precision, slug, sha, cell.nodes)
    return cell.model_copy(update={"id": make_cell_id(cell.label, *size), "definition_sha256": sha})


# what of `measurement` a job cell uses (the rest is the built-in worker's)
JOB_MEASUREMENT = {"warmup_steps", "steps", "repeats"}


def job_definition(
    config: BenchConfig,
    line: JobLine,
    batch: int | None,
    shape: Shape,
    device: Device,
    backend: Backend,
    threads: int,
) -> str:
    """A `jobs:` row's cell's definition, as canonical JSON: its command as filled and how it
    starts, what of the matrix it names, where it runs and what the probe measures of it."""
    return json.dumps(
        {
            "job": line.name,
            "command": list(line.argv),
            "wrapped": line.wrapped,
            "batch_scope": line.batch_scope if batch is not None else None,
            "world_size": shape.world_size,
            "nnodes": shape.nodes,
            "device": device,
            "backend": backend,
            "measurement": config.measurement.model_dump(mode="json", include=JOB_MEASUREMENT),
            "omp_num_threads": threads if line.wrapped else None,
            "env": dict(sorted(config.launcher.env.items())),
        },
        sort_keys=True,
        separators=(",", ":"),
    )
