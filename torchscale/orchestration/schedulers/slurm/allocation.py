"""One Slurm allocation: the cells of one node count, written down before anything is submitted.

The submitting host resolves every cell once (the plan) and writes it here as data: the worker
spec of each cell and how it is launched. The driver inside the allocation runs exactly that, so
what `--dry-run` shows is what runs, and no node rebuilds a plan from a config on a machine that
may see other GPUs or cores.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.comm.from_config import section_request
from torchscale.orchestration.comm.sweep_launch import CommRequest
from torchscale.orchestration.config.schema import CommConfig, SlurmConfig
from torchscale.orchestration.plan.planned import LaunchSettings, PlannedCell
from torchscale.orchestration.schedulers.slurm.cpus import cpus_per_node

ALLOCATION_KIND = "torchscale.slurm_allocation"
ALLOCATION_VERSION = 1
DRIVER_MODULE = "torchscale.orchestration.schedulers.slurm.driver"
# the files of an allocation's directory (slurm/<allocation>/ of the results)
ALLOCATION_FILE = "allocation.json"
SCRIPT_NAME = "job.sbatch"


def job_output_path(directory: Path, job_id: str) -> Path:
    """The job's stdout and stderr, as its script names them (`%j` stands for the job id)."""
    return directory / f"slurm-{job_id}.out"


def comm_preflight(section: CommConfig, cells: list[PlannedCell]) -> CommRequest:
    """The sweep of `section` on every node of the allocation, as many ranks per node as its
    widest cell, on the cells' device (the allocation's cells share one device type)."""
    widest = max(cells, key=lambda p: p.launch.nproc_per_node)
    return section_request(section, widest, widest.launch.nproc_per_node * widest.launch.nnodes)


class AllocationCell(BaseModel):
    model_config = ConfigDict(extra="forbid")

    spec: WorkerSpec
    nproc_per_node: int
    omp_num_threads: int
    extra_env: dict[str, str]
    timeout_s: float
    warnings: list[CellWarning] = Field(default_factory=list)

    def planned(
        self, omp_num_threads: int | None = None, warnings: tuple[CellWarning, ...] = ()
    ) -> PlannedCell:
        """The plan's cell again, as the sweep's run_cell takes it (no definition text: the
        cell's identity carries its hash); the driver may size its threads from the CPUs the
        step really has, and add what it saw there to its warnings."""
        spec = self.spec
        launch = LaunchSettings(
            nproc_per_node=self.nproc_per_node,
            nnodes=spec.cell.nodes,
            omp_num_threads=omp_num_threads or self.omp_num_threads,
            extra_env=dict(self.extra_env),
            timeout_s=self.timeout_s,
        )
        return PlannedCell(
            spec.cell,
            spec.model,
            "",
            spec.training,
            spec.measurement,
            spec.data,
            launch,
            run_warnings=(*self.warnings, *warnings),
        )


class Allocation(BaseModel):
    """What one sbatch job runs: its cells in order, and where things go."""

    model_config = ConfigDict(extra="forbid")

    kind: str = ALLOCATION_KIND
    version: int = ALLOCATION_VERSION
    name: str = Field(description="s<submission>-n<nodes>, also its directory under slurm/")
    experiment_root: str
    nodes: int
    gpus_per_node: int | None
    cpus_per_task: int | None = Field(description="the config's count: srun repeats it")
    cpus_asked: int | None = Field(
        default=None,
        description="CPUs per node the job asks (--cpus-per-task of its one task per node); "
        "null: none (exclusive nodes come whole)",
    )
    threads_from_cpus: bool = Field(
        default=False,
        description="OMP_NUM_THREADS from the CPUs each step has, not the submitting host's "
        "(no cpus_per_task nor omp_num_threads in the config)",
    )
    container: str | None
    python: str
    price_per_gpu_hour: float | None
    cells: list[AllocationCell]
    preflight_validate: bool = False
    preflight_validate_level: Literal["basic", "perf"] = "basic"
    preflight_comm: CommRequest | None = None  # resolved here, run as the first step

    @property
    def directory(self) -> Path:
        return ResultLayout(Path(self.experiment_root)).slurm_allocation_dir(self.name)

    @property
    def cell_ids(self) -> list[str]:
        return [c.spec.cell.id for c in self.cells]


def build_allocation(
    name: str,
    nodes: int,
    cells: list[PlannedCell],
    store: ResultStore,
    slurm: SlurmConfig,
    price_per_gpu_hour: float | None,
    comm: CommConfig,
    *,
    fixed_threads: bool = False,
    gpus_counted: bool = True,
) -> Allocation:
    """The allocation of `cells` (all on `nodes` nodes), their specs pointing into `store`,
    the preflight steps `slurm.preflight` asks for, and the CPUs it asks per node
    (torchscale/orchestration/schedulers/slurm/cpus.py). `fixed_threads`: launcher.omp_num_threads
    is set, so the driver keeps the plan's thread count. `gpus_counted`: false where Slurm
    said the partition's nodes have no gpu Gres (no GPU is asked there)."""
    entries = [
        AllocationCell(
            spec=p.worker_spec(
                store.attempt_result_path(p.cell.id),
                store.attempt_steps_path(p.cell.id),
                store.peak_search_dirs,
            ),
            nproc_per_node=p.launch.nproc_per_node,
            omp_num_threads=p.launch.omp_num_threads,
            extra_env=dict(p.launch.extra_env),
            timeout_s=p.launch.timeout_s,
            warnings=list(p.cell_warnings),
        )
        for p in cells
    ]
    ranks_per_node = max((p.launch.nproc_per_node for p in cells), default=1)
    gpus = gpus_asked(slurm, cells, ranks_per_node) if gpus_counted else None
    # the CPUs' share follows the GPUs a node has, whether or not Slurm is asked for them
    node_gpus = gpus if gpus is not None else gpus_used(slurm, cells, ranks_per_node)
    return Allocation(
        name=name,
        experiment_root=str(store.root.resolve()),
        nodes=nodes,
        gpus_per_node=gpus,
        cpus_per_task=slurm.cpus_per_task,
        cpus_asked=cpus_per_node(slurm.cpus_per_task, slurm.exclusive, node_gpus, ranks_per_node),
        threads_from_cpus=slurm.cpus_per_task is None and not fixed_threads,
        container=slurm.container,
        python=slurm.python or sys.executable,
        price_per_gpu_hour=price_per_gpu_hour,
        cells=entries,
        preflight_validate=slurm.preflight.validate_nodes,
        preflight_validate_level=slurm.preflight.validate_level,
        preflight_comm=comm_preflight(comm, cells) if slurm.preflight.comm else None,
    )


# sbatch options whose value is a GPU count (any value asks for GPUs)
GPU_COUNT_OPTIONS = ("-G", "--gpus", "--gpus-per-node", "--gpus-per-socket", "--gpus-per-task")
# sbatch options whose value lists resources, GPUs among them or not (`--tres-per-task`, ...)
RESOURCE_OPTIONS = ("--gres",)
RESOURCE_PREFIXES = ("--tres-",)


def option_parts(option: str) -> tuple[str, str]:
    """An extra_sbatch entry as (name, value): `--gres=gpu:8`, `--gres gpu:8`, `-G 8`, `-G8`."""
    text = option.strip()
    if text.startswith("-") and not text.startswith("--") and len(text) > 2:
        name, rest = text[:2], text[2:]  # a short option with its value attached or spaced
        return name, rest.strip().removeprefix("=")
    name, sep, value = text.partition("=")
    if not sep:
        name, _, value = text.partition(" ")
    return name.strip(), value.strip()


def lists_gpus(value: str) -> bool:
    """A resource list naming GPUs: `gpu:8`, `shard:2,gpu:h100:8`, `gres/gpu:8`,
    `gres/gpu=8`, `gres:gpu:1` (entries `[gres/|gres:]name[:type][:count]` or `name=count`)."""
    for entry in value.split(","):
        entry = entry.strip().lower()
        for prefix in ("gres/", "gres:"):
            entry = entry.removeprefix(prefix)
        if entry.replace("=", ":").split(":")[0] == "gpu":
            return True
    return False


def asks_gpus(option: str) -> bool:
    """Whether an extra_sbatch entry asks for GPUs itself (then torchscale asks none)."""
    name, value = option_parts(option)
    if name in GPU_COUNT_OPTIONS:
        return True
    if name in RESOURCE_OPTIONS or name.startswith(RESOURCE_PREFIXES):
        return lists_gpus(value)
    return False


def gpus_used(slurm: SlurmConfig, cells: list[PlannedCell], ranks_per_node: int) -> int | None:
    """GPUs a node's cells use: launcher.slurm.gpus_per_node, else one per rank of the widest
    cell on CUDA; None on CPU."""
    if slurm.gpus_per_node is not None:
        return slurm.gpus_per_node
    return ranks_per_node if any(p.cell.device == "cuda" for p in cells) else None


def gpus_asked(slurm: SlurmConfig, cells: list[PlannedCell], ranks_per_node: int) -> int | None:
    """GPUs per node the job asks: launcher.slurm.gpus_per_node, else, for CUDA cells, one per
    rank of the widest cell (a job that asks none sees no GPU where Slurm constrains devices);
    none where extra_sbatch asks for GPUs its own way (asked twice, Slurm may refuse the job
    or grant the larger count)."""
    if slurm.gpus_per_node is None and any(asks_gpus(option) for option in slurm.extra_sbatch):
        return None
    return gpus_used(slurm, cells, ranks_per_node)


def sbatch_script(allocation: Allocation, slurm: SlurmConfig, experiment: str) -> str:
    """The job script: #SBATCH lines, the user's setup lines, then the driver, exec'd so that
    Slurm's warning signal (--signal=B:USR1) reaches it rather than a shell."""
    directory = allocation.directory
    lines = [
        "#!/bin/bash",
        f"# torchscale: {len(allocation.cells)} cell(s) of {experiment} on {allocation.nodes} "
        "node(s); written by torchscale benchmark",
        f"#SBATCH --job-name={shlex.quote(f'torchscale-{experiment}-{allocation.name}')}",
        f"#SBATCH --nodes={allocation.nodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --output={job_output_path(directory, '%j')}",
        f"#SBATCH --signal=B:USR1@{slurm.signal_grace_s}",
        "#SBATCH --no-requeue",
    ]
    if allocation.gpus_per_node is not None:
        lines.append(f"#SBATCH --gpus-per-node={allocation.gpus_per_node}")
    if allocation.cpus_asked is not None:
        lines.append(f"#SBATCH --cpus-per-task={allocation.cpus_asked}")
    options = {"partition": slurm.partition, "account": slurm.account, "qos": slurm.qos}
    options["time"] = slurm.time_limit
    lines += [f"#SBATCH --{option}={value}" for option, value in options.items() if value]
    if slurm.exclusive:
        lines.append("#SBATCH --exclusive")
    lines.extend(f"#SBATCH {option}" for option in slurm.extra_sbatch)
    lines.append("")
    if slurm.setup:
        lines += ["# launcher.slurm.setup", *slurm.setup, ""]
    driver = [allocation.python, "-m", DRIVER_MODULE, "--allocation"]
    driver += [str(directory / ALLOCATION_FILE), f"--grace-s={slurm.signal_grace_s}"]
    lines.append("exec " + shlex.join(driver))
    return "\n".join(lines) + "\n"
