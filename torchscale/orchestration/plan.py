"""Config -> the plan: one cell per model x batch size x world size x precision x strategy.

Pure functions over the validated config and a description of the machine. The plan resolves
everything a cell needs (its identity, worker spec contents, launch settings, what is skipped
and why), so the sweep only runs it and the whole plan is testable without launching anything.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from torchscale.contracts.catalog import Precision, Strategy, workload_options
from torchscale.contracts.cell import (
    Backend,
    CellIdentity,
    Device,
    ParallelShape,
    definition_hash,
    make_cell_id,
)
from torchscale.contracts.cell_settings import (
    DataConfig,
    MeasurementConfig,
    ModelSpec,
    TrainingConfig,
)
from torchscale.contracts.finding import Finding
from torchscale.contracts.model_tasks import unsupported
from torchscale.contracts.parallel_shapes import (
    compile_problem,
    node_problem,
    parallel_shapes,
    world_problem,
)
from torchscale.contracts.schema.cell_result import CellWarning
from torchscale.contracts.shared_gpu import GLOO_CUDA_P2P, NCCL_SHARED_GPU, SHARED_GPU, gpus_for
from torchscale.contracts.training_defaults import (
    BLOCKWISE_LOSS_MODELS,
    WORKLOAD_REVISION,
    LossKind,
    builtin_conv_net,
    builtin_parameters,
    compile_note,
    resolve_bf16_activations,
    resolve_channels_last,
    resolve_compile,
    resolve_fused_optimizer,
    resolve_loss,
)
from torchscale.contracts.wording import say
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.orchestration.auto_batch import Footprint, auto_batch, footprint
from torchscale.orchestration.launch.torchrun import ONE_NODE, LaunchCommand, torchrun_command
from torchscale.orchestration.own_job.command import OwnJobRequest, SweepLaunch, sweep_command
from torchscale.orchestration.own_job.identity import job_cell_id, model_name
from torchscale.orchestration.own_job.job_line import JobLine, filled, wrapped_line
from torchscale.rank.strategy_layouts import model_problem

if TYPE_CHECKING:  # the config's pydantic schema: only its values are read here
    from torchscale.orchestration.config.schema import Backend as RequestedBackend
    from torchscale.orchestration.config.schema import (
        BenchConfig,
        CommConfig,
        JobSpec,
        LauncherConfig,
        MemoryConfig,
        ProfilingConfig,
    )
    from torchscale.orchestration.config.schema import Device as RequestedDevice

WORKER_MODULE = "torchscale.rank.worker.main"
# torchrun start-up seen on 2 cores: ~5 s plus ~1.5 s per extra rank (docs/methodology.md)
LAUNCH_BASE_S = 5.0
LAUNCH_PER_RANK_S = 1.5


@dataclass(frozen=True)
class Machine:
    """What the plan needs to know about the node it will run on."""

    gpu_count: int  # CUDA GPUs usable by torch on this node
    cpu_cores: int  # cores usable by this process
    gpu_memory_bytes: int | None = None  # the smallest GPU's memory (batch_sizes: auto)
    gpu_memory_unknown: str = "the cells run on other nodes, whose GPUs are not read from here"
    # where gpu_count comes from when not from this node (a Slurm partition's Gres, the config
    # where no controller answered), named in every skip reason that cites the count
    gpus_source: str | None = None
    note: str | None = None  # how the nodes' GPUs were known, a line among the plan's notes
    # what the launcher's scheduler said while describing the nodes (opaque to the plan),
    # handed back to the launcher with the plan so that the scheduler is asked once
    scheduler_answer: object = None


@dataclass(frozen=True)
class Shape:
    """How many ranks a cell has and how they sit on nodes."""

    world_size: int
    nodes: int
    nproc_per_node: int
    problem: Finding | None = None  # set: the shape cannot be launched (a skip reason)


def node_gpus(config: BenchConfig) -> int | None:
    """GPUs per node as the launcher's config states them (Slurm, k8s); None: unstated."""
    if config.launcher.kind == "slurm":
        return config.launcher.slurm.gpus_per_node
    if config.launcher.kind == "k8s":
        return config.launcher.k8s.gpus_per_node
    return None


def cell_shapes(config: BenchConfig) -> list[Shape]:
    """The world sizes of the sweep, in run order.

    With `launcher.nodes`, gpu_counts are ranks per node and every node count multiplies them
    (world size = per node x nodes). Without it, gpu_counts are total ranks (the published
    meaning): one node, or, where the launcher states GPUs per node, as many full nodes as
    that takes.
    """
    if config.launcher.nodes:
        return [
            Shape(per_node * nodes, nodes, per_node)
            for per_node in sorted(config.gpu_counts)
            for nodes in config.launcher.node_counts
        ]
    per_node_limit = node_gpus(config)
    shapes = []
    for world in sorted(config.gpu_counts):
        if per_node_limit is None or world <= per_node_limit:
            shapes.append(Shape(world, 1, world))
        elif world % per_node_limit:
            figures = {"world": world, "per_node": per_node_limit}
            problem = Finding(code=PARTIAL_NODES, figures=figures)
            shapes.append(Shape(world, -(-world // per_node_limit), per_node_limit, problem))
        else:
            shapes.append(Shape(world, world // per_node_limit, per_node_limit))
    return sorted(shapes, key=lambda shape: (shape.world_size, shape.nodes))


@dataclass(frozen=True)
class LaunchSettings:
    """How a cell is started: resolved once by the plan, the same for --dry-run and the run."""

    nproc_per_node: int
    nnodes: int
    omp_num_threads: int  # per rank, set explicitly for every cell
    extra_env: Mapping[str, str]  # launcher.env, on top of what torchscale sets
    timeout_s: float
    malloc_reuse: bool = False  # CPU cells with launcher.cpu_malloc: reuse (launch/cpu_malloc.py)
    cpu_binding: bool = False  # CPU cells with launcher.cpu_binding: cores (worker/cpu_binding.py)
    # the experiment's compile cache (launch/compile_cache.py): known only where the results
    # directory is, so set by what launches the cell (`PlannedCell.sharing_compile_cache`)
    compile_cache: PurePath | None = None
    ranks_per_gpu: int = 1  # CUDA cells: ranks sharing each GPU (contracts/shared_gpu.py)


@dataclass(frozen=True)
class PlannedCell:
    """One cell with everything needed to run it, or the reason it is skipped."""

    cell: CellIdentity
    model: ModelSpec
    definition: str = field(repr=False)  # canonical JSON of everything that shapes the result
    training: TrainingConfig = field(repr=False)
    measurement: MeasurementConfig = field(repr=False)
    data: DataConfig = field(repr=False)
    launch: LaunchSettings = field(repr=False)
    skip: Finding | None = None  # set: recorded as 'skipped', never launched (why, as a code)
    warnings: tuple[CellWarning, ...] = ()  # what its result will say of how it ran (codes)
    # what a launcher saw where the cell runs (a Slurm step's CPUs), as its result keeps it
    run_warnings: tuple[CellWarning, ...] = ()
    # a `jobs:` row's cell: the user's command, run through the own-job host, not the worker
    job: JobLine | None = field(default=None, repr=False)

    @property
    def skip_reason(self) -> str | None:
        """Why the plan skips the cell, in words (None: it runs)."""
        return say(self.skip) if self.skip is not None else None

    @property
    def cell_warnings(self) -> tuple[CellWarning, ...]:
        """The warnings as its result stores them (a kind and a code with its figures)."""
        return (*self.warnings, *self.run_warnings)

    def worker_spec(
        self, result_path: Path, steps_path: Path, acceptance_dirs: Sequence[Path] = ()
    ) -> WorkerSpec:
        """The rank's spec; `acceptance_dirs`: where its node's measured peak may be."""
        return WorkerSpec(
            cell=self.cell,
            model=self.model,
            training=self.training,
            measurement=self.measurement,
            data=self.data,
            result_path=str(result_path),
            steps_path=str(steps_path),
            acceptance_dirs=[str(d) for d in acceptance_dirs],
        )

    @property
    def job_request(self) -> OwnJobRequest:
        """A job cell's measurement as the own-job host takes it: the config's warm-up and
        measured steps, then every rank stops; each launch killed after the cell timeout."""
        return OwnJobRequest(
            argv=self.job.argv if self.job is not None else (),
            warmup_steps=self.measurement.warmup_steps,
            steps=self.measurement.steps or 0,
            let_it_finish=False,
            timeout_s=self.launch.timeout_s,
        )

    def sharing_compile_cache(self, directory: PurePath) -> PlannedCell:
        """This cell launched with the experiment's compile cache `directory` (used when it
        compiles): every cell, probe, profile and resume of an experiment shares one."""
        return replace(self, launch=replace(self.launch, compile_cache=directory))

    def command(
        self,
        spec_path: Path,
        log_dir: Path,
        base_env: Mapping[str, str],
        *,
        python: str = sys.executable,
        rendezvous: Sequence[str] = ONE_NODE,
    ) -> LaunchCommand:
        """The torchrun command of this cell: one node by default; a multi-node launcher
        (Slurm step, Kubernetes pod) passes its interpreter and rendezvous flags. A compiled
        cell points inductor and Triton at its experiment's compile cache, when it has one.
        A job cell: the user's command with the probe, its files in `log_dir`."""
        if self.job is not None:
            how = SweepLaunch(
                nproc=self.launch.nproc_per_node,
                device=self.cell.device,
                omp_num_threads=self.launch.omp_num_threads,
                extra_env=self.launch.extra_env,
            )
            return sweep_command(self.job, self.job_request, how, log_dir, base_env)
        return torchrun_command(
            WORKER_MODULE,
            ["--spec", str(spec_path)],
            nproc=self.launch.nproc_per_node,
            device=self.cell.device,
            log_dir=log_dir,
            base_env=base_env,
            omp_num_threads=self.launch.omp_num_threads,
            extra_env=self.launch.extra_env,
            python=python,
            rendezvous=rendezvous,
            malloc_reuse=self.launch.malloc_reuse,
            cpu_binding=self.launch.cpu_binding,
            compile_cache=self.launch.compile_cache if self.training.compile else None,
            ranks_per_gpu=self.launch.ranks_per_gpu,
        )


@dataclass(frozen=True)
class WallTimeEstimate:
    """How long a sweep will take at least (`Plan.estimate`), and what the figure counts."""

    seconds: float
    basis: str


@dataclass(frozen=True)
class Plan:
    """Every cell of a sweep in run order, and the resolved pieces of the config that what
    runs the plan needs, each by name (`Plan.of`): a consumer reads its own piece, never the
    whole config."""

    cells: list[PlannedCell]
    experiment: str
    config_yaml: str  # the resolved config as stored beside the results (config.yaml), the
    # plan's notes (the batches batch_sizes: auto chose, and why) as comments at its end
    measurement: MeasurementConfig  # how long cells run (the estimate)
    data: DataConfig  # what the cells read, prepared once before the first launch
    price_per_gpu_hour: float | None  # cost.per_gpu_hour: what each cell is priced at
    launcher: LauncherConfig  # where and how cells launch: timeouts, Slurm, Kubernetes
    comm: CommConfig  # the suites that follow the sweep
    memory: MemoryConfig
    profiling: ProfilingConfig
    # what the plan chose or assumed for the user (batch_sizes: auto, the GPUs per node of
    # nodes not read from here), a line each
    notes: tuple[str, ...] = ()
    scheduler_answer: object = None  # Machine.scheduler_answer, for the launcher

    @classmethod
    def of(
        cls,
        config: BenchConfig,
        cells: list[PlannedCell],
        notes: Sequence[str] = (),
        scheduler_answer: object = None,
    ) -> Plan:
        return cls(
            cells=cells,
            experiment=config.experiment_name,
            config_yaml=config.as_yaml() + "".join(f"# {note}\n" for note in notes),
            measurement=config.measurement,
            data=config.data,
            price_per_gpu_hour=config.cost.per_gpu_hour,
            launcher=config.launcher,
            comm=config.comm,
            memory=config.memory,
            profiling=config.profiling,
            notes=tuple(notes),
            scheduler_answer=scheduler_answer,
        )

    def __iter__(self) -> Iterator[PlannedCell]:
        return iter(self.cells)

    def __len__(self) -> int:
        return len(self.cells)

    def __getitem__(self, index: int) -> PlannedCell:
        return self.cells[index]

    @property
    def runnable(self) -> list[PlannedCell]:
        return [p for p in self.cells if p.skip is None]

    def estimate(self, cells: Sequence[PlannedCell] | None = None) -> WallTimeEstimate:
        """A lower bound on the sweep's wall time (of `cells`, default every runnable one):
        launches, plus timed windows when the measurement is duration-based (step times are
        unknown before measuring)."""
        runnable = self.runnable if cells is None else cells
        launch = sum(
            (LAUNCH_BASE_S + LAUNCH_PER_RANK_S * p.cell.world_size)
            * (p.measurement.repeats if p.job is not None else 1)  # a job's repeat: a launch
            for p in runnable
        )
        m = self.measurement
        if m.duration_s is not None:
            windows = m.repeats * (2 if m.comm_overhead else 1)  # a no_sync window after each
            return WallTimeEstimate(
                launch + len(runnable) * windows * m.duration_s, "launch + timed windows"
            )
        return WallTimeEstimate(
            launch, "launch overhead only: step times are unknown until measured"
        )


def resolve_device(config: BenchConfig, machine: Machine) -> Device:
    return device_for(config.device, machine)


def device_for(requested: RequestedDevice, machine: Machine) -> Device:
    """`auto` means CUDA GPUs when the node has any, else CPU processes (every command that
    picks a device asks here: benchmark cells, profile, comm)."""
    if requested == "auto":
        return "cuda" if machine.gpu_count > 0 else "cpu"
    return requested


def resolve_backend(config: BenchConfig, device: Device, ranks_per_gpu: int = 1) -> Backend:
    return backend_for(config.backend, device, ranks_per_gpu)


def backend_for(requested: RequestedBackend, device: Device, ranks_per_gpu: int = 1) -> Backend:
    """`auto` means NCCL on CUDA, gloo on CPU and where ranks share a GPU (NCCL refuses two
    ranks on one device) (benchmark cells and comm ask here)."""
    if requested == "auto":
        return "nccl" if device == "cuda" and ranks_per_gpu == 1 else "gloo"
    return requested


def shared_ranks(config: BenchConfig, machine: Machine, device: Device, shape: Shape) -> int:
    """How many of a CUDA cell's ranks share each GPU: 1 (a GPU per rank) unless the node has
    fewer GPUs than the cell has ranks on it and `launcher.ranks_per_gpu` allows sharing;
    then the ranks spread evenly over the node's GPUs. Above the setting, the cell stays at
    one a GPU and is skipped for want of GPUs."""
    have, ranks = machine.gpu_count, shape.nproc_per_node
    if device != "cuda" or have <= 0 or ranks <= have or config.launcher.ranks_per_gpu <= 1:
        return 1
    per_gpu = -(-ranks // have)
    return per_gpu if per_gpu <= config.launcher.ranks_per_gpu else 1


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
    ranks_per_node = max(shape.nproc_per_node for shape in cell_shapes(config))
    return threads_per_rank(machine.cpu_cores, ranks_per_node)


def threads_per_rank(cpus: int, ranks: int) -> int:
    """A node's CPUs shared out among its ranks, at least one thread each: benchmark cells and
    comm ask here with the planning host's cores, a Slurm step with the CPUs it was given."""
    return max(1, cpus // max(1, ranks))


def _definition(
    config: BenchConfig,
    training_config: TrainingConfig,
    loss: LossKind,
    model: ModelSpec,
    batch_size: int,
    shape: Shape,
    precision: str,
    strategy: str,
    device: str,
    backend: str,
    omp_num_threads: int,
    parallel: ParallelShape | None = None,
    shared: int = 1,
) -> str:
    """Everything that changes what a cell measures, as canonical JSON (for ids and resume).

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
        "batch_size": batch_size,
        "world_size": shape.world_size,
        "precision": precision,
        "strategy": strategy,
        "device": device,
        "backend": backend,
        "training": training,
        "measurement": config.measurement.model_dump(mode="json"),
        "data": _data_definition(config),
        "nnodes": shape.nodes,
        "omp_num_threads": omp_num_threads,
        "env": dict(sorted(config.launcher.env.items())),
        "workload_revision": WORKLOAD_REVISION,
    }
    if device == "cpu":  # where the CPU is the device, how its allocator reuses memory
        payload["cpu_malloc"] = config.launcher.cpu_malloc
        # and where its ranks run: binding changes what a CPU cell measures
        payload["cpu_binding"] = config.launcher.cpu_binding
    if parallel is not None:
        payload["parallel"] = parallel.model_dump(mode="json")
    if shared > 1:  # only then: the definitions (and ids) of other cells stay as they were
        payload["ranks_per_gpu"] = shared
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


def _skip_or_warn(
    cell: CellIdentity, shape: Shape, machine: Machine
) -> tuple[Finding | None, tuple[CellWarning, ...]]:
    """(why the cell is skipped, warnings) of a cell on nodes like `machine`."""
    if shape.problem is not None:
        return shape.problem, ()
    if cell.device == "cuda":
        # counted here unless a source says where (a partition, a config)
        gpus = {"have": machine.gpu_count, "source": machine.gpus_source}
        if machine.gpu_count == 0:
            return Finding(code=NO_GPU, figures=gpus), ()
        needed = gpus_for(shape.nproc_per_node, cell.ranks_per_gpu)
        if needed > machine.gpu_count:
            figures = {**gpus, "gpus": needed, "nodes": shape.nodes}
            return Finding(code=NEEDS_GPUS, figures=figures), ()
        if not cell.shares_gpu:
            return None, ()
        if cell.backend == "nccl":
            return Finding(code=NCCL_SHARED_GPU, figures={"ranks": cell.ranks_per_gpu}), ()
        figures = {"ranks": cell.ranks_per_gpu, "gpus": needed, "backend": cell.backend}
        return None, (CellWarning.of("other", SHARED_GPU, figures),)
    if cell.backend == "nccl":
        return Finding(code=NCCL_WITHOUT_CUDA), ()
    warnings: list[CellWarning] = []
    if cell.precision == "amp":
        warnings.append(CellWarning.of("other", "warning.cpu_amp", {}))
    if shape.nproc_per_node > machine.cpu_cores:
        figures = {"ranks": shape.nproc_per_node, "cores": machine.cpu_cores}
        warnings.append(CellWarning.of("contention", "warning.cpu_oversubscribed", figures))
    return None, tuple(warnings)


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
    device = resolve_device(config, machine)
    shared = shared_ranks(config, machine, device, shape)
    backend = resolve_backend(config, device, shared)
    threads = resolve_omp_threads(config, machine)
    pipeline = parallel is not None and parallel.pp > 1
    parameters = builtin_parameters(model.name, model.options)
    training = _cell_training(config, model, precision, device, pipeline, parameters)
    loss = resolve_loss(
        compiled=bool(training.compile),
        pipeline=pipeline,
        blockwise_available=model.name in BLOCKWISE_LOSS_MODELS,
    )
    definition = _definition(
        config,
        training,
        loss,
        model,
        batch_size,
        shape,
        precision,
        strategy,
        device,
        backend,
        threads,
        parallel,
        shared,
    )
    identity = _identity(
        definition, model, batch_size, shape, precision, strategy, device, backend, parallel
    ).model_copy(update={"ranks_per_gpu": shared})
    skip, warnings = _feasibility(config, machine, identity, shape, model, training)
    note = compile_note(config.training.compile, device, pipeline, parameters)
    if note is not None and skip is None:
        warnings = (*warnings, CellWarning.of("other", "warning.compile_off_small_model", note))
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


def _cell_training(
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


def _identity(
    definition: str,
    model: ModelSpec,
    batch_size: int,
    shape: Shape,
    precision: Precision,
    strategy: Strategy,
    device: Device,
    backend: Backend,
    parallel: ParallelShape | None,
) -> CellIdentity:
    """The cell's identity: its id ends in the definition's hash, so a changed setting is a
    new cell (and --resume never reuses a result it does not match)."""
    sha = definition_hash(definition)
    label = model.display_name
    slug = parallel.slug(strategy) if parallel is not None else strategy
    return CellIdentity(
        id=make_cell_id(label, batch_size, shape.world_size, precision, slug, sha, shape.nodes),
        definition_sha256=sha,
        model=model.name,
        label=label,
        batch_size=batch_size,
        world_size=shape.world_size,
        precision=precision,
        strategy=strategy,
        device=device,
        backend=backend,
        nodes=shape.nodes,
        parallel=parallel,
    )


# why the plan skips a cell: its nodes' GPUs (worded in contracts/wording/plan_skips.py)
NEEDS_GPUS = "plan.needs_gpus"
NO_GPU = "plan.no_gpu"
NCCL_WITHOUT_CUDA = "plan.nccl_without_cuda"
PARTIAL_NODES = "plan.partial_nodes"


def gloo_cuda_problem(device: Device, backend: Backend, parallel: ParallelShape) -> Finding | None:
    """A pipeline on gloo over CUDA tensors: gloo's send and recv hand its transport the
    tensor's own pointer with no copy through host memory (its collectives copy), so a stage
    would send device memory as if it were the host's (docs/first-gpu-run.md)."""
    if device == "cuda" and backend == "gloo" and parallel.pp > 1:
        return Finding(code=GLOO_CUDA_P2P, figures={"pp": parallel.pp})
    return None


def _feasibility(
    config: BenchConfig,
    machine: Machine,
    cell: CellIdentity,
    shape: Shape,
    model: ModelSpec,
    training: TrainingConfig,
) -> tuple[Finding | None, tuple[CellWarning, ...]]:
    """(why the cell is skipped, warnings) of the cell, the first problem found: the nodes, then
    the data source, then the model-parallel layout; a skipped cell is recorded, never launched."""
    skip, warnings = _skip_or_warn(cell, shape, machine)
    if skip is None:  # a model the data source cannot feed (e.g. CIFAR-100 for a language model)
        skip = unsupported(config.data.source, model.name)
    parallel = cell.parallel
    if skip is None and parallel is not None:  # stages hand activations on by send/recv
        skip = gloo_cuda_problem(cell.device, cell.backend, parallel)
    if skip is None and parallel is not None:  # the mesh or model cannot run this layout
        skip = (
            world_problem(cell.strategy, parallel, cell.world_size)
            or node_problem(
                parallel,
                shape.nproc_per_node,
                shape.nodes,
                config.training.parallel.tp_across_nodes,
            )
            or compile_problem(parallel, bool(training.compile))
            or model_problem(
                cell.strategy,
                parallel,
                cell.world_size,
                model,
                cell.batch_size,
                cell.precision,
                config.training.grad_accum_steps,
                config.data.seq_len,
                config.data.image_size,
            )
        )
    return skip, warnings


def device_set(config: BenchConfig, machine: Machine) -> tuple[BenchConfig, str | None]:
    """The config this machine's sweep runs (`on_cuda`'s keys replace the config's on CUDA)
    and the line saying which set applied and why; None where the config has no `on_cuda`."""
    device = resolve_device(config, machine)
    effective, replaced = config.for_device(device)
    if config.on_cuda is None:
        return effective, None
    found = f"{machine.gpu_count} CUDA GPU(s) per node" if machine.gpu_count else "no CUDA GPU"
    why = f"device {config.device}" + (f": {found}" if config.device == "auto" else "")
    if replaced is None:
        return effective, f"on {device.upper()} ({why}): the config's own keys; on_cuda not read"
    return effective, f"on CUDA ({why}): {replaced}"


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
    device = resolve_device(config, machine)
    backend = resolve_backend(config, device)
    threads = resolve_omp_threads(config, machine)
    values = {"gpus": shape.world_size, "batch": batch, "precision": precision}
    line = JobLine(
        job.label,
        filled(job.command, values),
        wrapped_line(job.command),
        job.named,
        job.batch,
    )
    measurement = config.measurement
    definition = json.dumps(
        {
            "job": job.label,
            "command": list(line.argv),
            "wrapped": line.wrapped,
            "batch_scope": job.batch if batch is not None else None,
            "world_size": shape.world_size,
            "nnodes": shape.nodes,
            "device": device,
            "backend": backend,
            "measurement": measurement.model_dump(mode="json", include=JOB_MEASUREMENT),
            "omp_num_threads": threads if line.wrapped else None,
            "env": dict(sorted(config.launcher.env.items())),
        },
        sort_keys=True,
        separators=(",", ":"),
    )
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
    skip, warnings = _skip_or_warn(identity, shape, machine)
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
        measurement,
        config.data,
        launch,
        skip,
        warnings,
        job=line,
    )


# what of `measurement` a job cell uses (the rest is the built-in worker's)
JOB_MEASUREMENT = {"warmup_steps", "steps", "repeats"}


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
    device = resolve_device(config, machine)
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
