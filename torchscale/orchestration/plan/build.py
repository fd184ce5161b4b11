"""The plan of a config on a machine (`build_plan`): every cell in run order, a built-in cell
resolved from the config (`plan_cell`), a `jobs:` row's cell (`plan_job_cell`), and the
batches `batch_sizes: auto` chooses.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

from torchscale.contracts.catalog import Precision, Strategy, workload_options
from torchscale.contracts.cell import CellIdentity, ParallelShape, definition_hash
from torchscale.contracts.cell_settings import ModelSpec
from torchscale.contracts.parallel_shapes import parallel_shapes
from torchscale.contracts.run_kinds import PATH_CHECK_DESCRIPTION, PATH_CHECK_MARK
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.contracts.training_defaults import (
    BLOCKWISE_LOSS_MODELS,
    builtin_parameters,
    compile_note,
    resolve_loss,
)
from torchscale.orchestration.auto_batch import Footprint, auto_batch, footprint
from torchscale.orchestration.own_job.identity import job_cell_id, model_name
from torchscale.orchestration.own_job.job_line import JobLine, filled, wrapped_line
from torchscale.orchestration.plan.definition import (
    cell_definition,
    cell_training,
    identified,
    job_definition,
)
from torchscale.orchestration.plan.nodes import (
    Machine,
    Shape,
    backend_for,
    cell_shapes,
    device_for,
    device_set,
    resolve_omp_threads,
    shared_ranks,
)
from torchscale.orchestration.plan.planned import LaunchSettings, Plan, PlannedCell
from torchscale.orchestration.plan.skips import feasibility, skip_or_warn

if TYPE_CHECKING:  # the config's pydantic schema: only its values are read here
    from torchscale.orchestration.config.schema import BenchConfig, JobSpec


def build_plan(config: BenchConfig, machine: Machine) -> Plan:
    """Every cell in a stable order: model, precision, strategy, batch size, world size
    (world size innermost but for the layouts of a model-parallel strategy at that size, so a
    model's scaling curve is measured back to back)."""
    config, device_note = device_set(config, machine)
    shapes = cell_shapes(config)
    parallel = config.training.parallel
    batches, batch_notes = batch_sizes(config, machine)
    notes = [machine.note, *batch_notes] if machine.note else batch_notes
    notes = [device_note, *notes] if device_note else notes
    cells = [
        plan_cell(config, machine, model, batch_size, shape, precision, strategy, layout)
        for model in config.models
        for precision in config.training.precision
        for strategy in config.training.strategy
        for batch_size in batches[model.display_name, precision]
        for shape in shapes
        for layout in parallel_shapes(strategy, parallel, shape.world_size)
    ]
    cells += [
        plan_job_cell(config, machine, job, batch, shape, precision)
        for job in config.jobs
        # an axis applies to a job where its command names the axis' placeholder
        for precision in (config.training.precision if "precision" in job.named else [None])
        for batch in (_listed(config.batch_sizes) if "batch" in job.named else [None])
        for shape in shapes
    ]
    return Plan.of(config, cells, notes, machine.scheduler_answer)


def plan_cell(
    config: BenchConfig,
    machine: Machine,
    model: ModelSpec,
    batch_size: int,
    shape: Shape,
    precision: Precision,
    strategy: Strategy,
    parallel: ParallelShape | None = None,
) -> PlannedCell:
    """Resolve one cell: identity, definition, launch settings, feasibility."""
    # the options the model trains with, defaults of the workload included (catalog)
    model = model.model_copy(update={"options": workload_options(model.name, model.options)})
    device = device_for(config.device, machine)
    shared = shared_ranks(config, machine, device, shape)
    backend = backend_for(config.backend, device, shared)
    threads = resolve_omp_threads(config, machine)
    pipeline = parallel is not None and parallel.pp > 1
    parameters = builtin_parameters(model.name, model.options)
    training = cell_training(config, model, precision, device, pipeline, parameters)
    loss = resolve_loss(
        compiled=bool(training.compile),
        pipeline=pipeline,
        blockwise_available=model.name in BLOCKWISE_LOSS_MODELS,
    )
    cell = CellIdentity(
        id="",  # the definition's: below
        definition_sha256="",
        model=model.name,
        label=model.display_name,
        batch_size=batch_size,
        world_size=shape.world_size,
        precision=precision,
        strategy=strategy,
        device=device,
        backend=backend,
        nodes=shape.nodes,
        parallel=parallel,
        ranks_per_gpu=shared,
    )
    definition = cell_definition(config, training, loss, model, cell, threads)
    identity = identified(cell, definition)
    skip, warnings = feasibility(config, machine, identity, shape, model, training)
    note = compile_note(config.training.compile, device, pipeline, parameters)
    if note is not None and skip is None:
        warnings = (*warnings, CellWarning.of("other", "warning.compile_off_small_model", note))
    if config.description == PATH_CHECK_DESCRIPTION:  # the workload level's: marked in its record
        warnings = (*warnings, CellWarning.of("other", PATH_CHECK_MARK, {}))
    launch = LaunchSettings(
        nproc_per_node=shape.nproc_per_node,
        nnodes=shape.nodes,
        omp_num_threads=threads,
        extra_env=dict(config.launcher.env),
        timeout_s=config.launcher.cell_timeout_s,
        malloc_reuse=device == "cpu" and config.launcher.cpu_malloc == "reuse",
        cpu_binding=device == "cpu" and config.launcher.cpu_binding == "cores",
        ranks_per_gpu=shared,
    )
    return PlannedCell(
        identity,
        model,
        definition,
        training,
        config.measurement,
        config.data,
        launch,
        skip,
        warnings,
    )


def _listed(batch_sizes: Sequence[int] | str) -> list[int | None]:
    """The config's batches (a job naming {batch} has a list: the config checks it)."""
    return [] if isinstance(batch_sizes, str) else list(batch_sizes)


def plan_job_cell(
    config: BenchConfig,
    machine: Machine,
    job: JobSpec,
    batch: int | None,
    shape: Shape,
    precision: Precision | None,
) -> PlannedCell:
    """One cell of a `jobs:` row: its command with the matrix's values filled, its identity
    (what the config filled; the batch per rank, or 1, and fp32 stand where the job decides,
    replaced by what its ranks measured), launched as a cell is (threads, launcher.env)."""
    device = device_for(config.device, machine)
    backend = backend_for(config.backend, device)
    threads = resolve_omp_threads(config, machine)
    values = {"gpus": shape.world_size, "batch": batch, "precision": precision}
    line = JobLine(
        job.label,
        filled(job.command, values),
        wrapped_line(job.command),
        job.named,
        job.batch,
    )
    definition = job_definition(config, line, batch, shape, device, backend, threads)
    sha = definition_hash(definition)
    per_rank = batch if batch is None or job.batch == "per_rank" else batch // shape.world_size
    label = model_name(job.label)
    identity = CellIdentity(
        id=job_cell_id(job.label, batch, shape.world_size, precision, sha),
        definition_sha256=sha,
        model=label,
        label=label,
        batch_size=max(1, per_rank or 1),
        world_size=shape.world_size,
        precision=precision or "fp32",
        strategy="ddp",
        device=device,
        backend=backend,
        nodes=shape.nodes,
    )
    skip, warnings = skip_or_warn(identity, shape, machine)
    launch = LaunchSettings(
        nproc_per_node=shape.nproc_per_node,
        nnodes=shape.nodes,
        omp_num_threads=threads,
        extra_env=dict(config.launcher.env),
        timeout_s=config.launcher.cell_timeout_s,
    )
    return PlannedCell(
        identity,
        ModelSpec.model_construct(name=label),  # not a model torchscale builds
        definition,
        config.training,
        config.measurement,
        config.data,
        launch,
        skip,
        warnings,
        job=line,
    )


def batch_sizes(
    config: BenchConfig, machine: Machine
) -> tuple[dict[tuple[str, str], list[int]], list[str]]:
    """The batches per device of each (model label, precision): the config's list, or under
    `batch_sizes: auto` one batch each (torchscale/orchestration/auto_batch.py), with the line
    saying why."""
    keys = [(m, p) for m in config.models for p in config.training.precision]
    if not isinstance(config.batch_sizes, str):  # the config's own list
        listed = list(config.batch_sizes)
        return {(m.display_name, p): listed for m, p in keys}, []
    device = device_for(config.device, machine)
    chosen: dict[tuple[str, str], list[int]] = {}
    notes: list[str] = []
    counted: dict[str, Footprint] = {}

    def model_footprint(model: ModelSpec) -> Footprint:  # once per model, on CUDA only
        if model.display_name not in counted:
            options = workload_options(model.name, model.options)
            counted[model.display_name] = footprint(
                model.name, options, config.data.seq_len, config.data.image_size
            )
        return counted[model.display_name]

    for model, precision in keys:
        fit = auto_batch(
            model.display_name,
            partial(model_footprint, model),
            precision,
            device,
            machine.gpu_memory_bytes,
            machine.gpu_memory_unknown,
            config.training.optimizer,
            config.memory.max_batch_limit,
        )
        chosen[model.display_name, precision] = [fit.batch]
        notes.append(fit.note)
    return chosen, notes
