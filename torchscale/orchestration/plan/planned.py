"""The plan as the commands that run it read it: every cell in run order with what it needs to
run (`PlannedCell`: identity, settings, launch settings, worker spec, torchrun command) or why
it is skipped, and the pieces of the config each consumer reads (`Plan`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from torchscale.contracts.cell import CellIdentity
from torchscale.contracts.cell_settings import (
    DataConfig,
    MeasurementConfig,
    ModelSpec,
    TrainingConfig,
)
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.contracts.wording import say
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.orchestration.launch.torchrun import ONE_NODE, LaunchCommand, torchrun_command
from torchscale.orchestration.own_job.command import OwnJobRequest, SweepLaunch, sweep_command
from torchscale.orchestration.own_job.job_line import JobLine

if TYPE_CHECKING:  # the config's pydantic schema: only its values are read here
    from torchscale.orchestration.config.schema import (
        BenchConfig,
        CommConfig,
        LauncherConfig,
        MemoryConfig,
        ProfilingConfig,
    )

WORKER_MODULE = "torchscale.rank.worker.main"
# torchrun start-up seen on 2 cores: ~5 s plus ~1.5 s per extra rank (docs/methodology.md)
LAUNCH_BASE_S = 5.0
LAUNCH_PER_RANK_S = 1.5


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
    resolved: BenchConfig  # the config as its file and --set resolved it, for `config_yaml`
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
            resolved=config,
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

    @property
    def description(self) -> str:
        """The config's own words, which tell the workload level's path check."""
        return " ".join(self.resolved.description.split())

    @cached_property
    def config_yaml(self) -> str:
        """The resolved config as stored beside the results (config.yaml), the plan's notes (the
        batches batch_sizes: auto chose, and why) as comments at its end; made when a run
        stores it, never by a dry run."""
        return self.resolved.as_yaml() + "".join(f"# {note}\n" for note in self.notes)

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
