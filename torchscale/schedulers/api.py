"""The contract every scheduler's launcher keeps (each package's `launcher.py` implements it):
`Launcher`, how one kind plans, checks and runs a benchmark; `BenchmarkEvents`, what a run
reports as it goes; `BenchmarkRun`, what it hands back. The same types for every launcher: the
CLI prints from the events and picks its exit code from the run; a notebook reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from torchscale.sweep import SweepOutcome

if TYPE_CHECKING:
    from torchscale.comm.comm_result import CommResult
    from torchscale.comm.sweep_launch import CommLaunch, CommRequest
    from torchscale.config.schema import BenchConfig
    from torchscale.data.prepare import DataReady
    from torchscale.memory.max_batch_result import MaxBatchResult
    from torchscale.memory.max_batch_runs import SearchGroup
    from torchscale.memory.search import ProbeOutcome
    from torchscale.plan import Machine, Plan, PlannedCell
    from torchscale.profiling.session import ProfiledCell
    from torchscale.profiling.trigger import Selected
    from torchscale.results.store import ResultStore
    from torchscale.schedulers.kubernetes.manifests import Applied
    from torchscale.schedulers.slurm.client import JobState
    from torchscale.schedulers.slurm.jobs import JobRecord
    from torchscale.schedulers.slurm.submission import SlurmSweep
    from torchscale.schema.cell_result import CellResult


def _ignore(*args: object) -> None:
    return None


@dataclass(frozen=True)
class BenchmarkEvents:
    """Callbacks as the job goes; each defaults to doing nothing. The job never prints."""

    # the sweep (torchscale.sweep.SweepHooks): (cell, index, total, will_launch)
    on_cell_start: Callable[[PlannedCell, int, int, bool], None] = _ignore
    on_cell_done: Callable[[CellResult, bool], None] = _ignore  # (result, reused)
    on_data: Callable[[DataReady], None] = _ignore
    # a check before the first cell launches (the compile toolchain), in one line: what is
    # checked, then what was found
    on_check: Callable[[str], None] = _ignore
    # the sweep is over (`run.sweep`, `run.nothing_measured`); the suites follow
    on_sweep_done: Callable[[BenchmarkRun], None] = _ignore
    # the config's comm: section, one sweep per world size
    on_comm_start: Callable[[CommRequest, CommLaunch], None] = _ignore
    on_comm_done: Callable[[CommResult, Path], None] = _ignore  # (result, where stored)
    # memory.max_batch_search
    on_max_batch_start: Callable[[], None] = _ignore
    on_probe: Callable[[SearchGroup, int, ProbeOutcome], None] = _ignore
    on_max_batch_done: Callable[[list[MaxBatchResult]], None] = _ignore
    # profiling after the sweep: (cell selected, a note on the tool chosen, index from 0,
    # total runs) before each run, (cell selected, what it left, index, total) after it
    on_profile_start: Callable[[Selected, str | None, int, int], None] = _ignore
    on_profile_done: Callable[[Selected, ProfiledCell, int, int], None] = _ignore
    # something the user should know that does not stop the run (a section a launcher does
    # not run, storage that may not be shared, ...)
    on_warning: Callable[[str], None] = _ignore
    # Slurm: the allocations written (and the jobs submitted: empty on a dry run), then each
    # job's state changes, the cell each starts, each preflight step's verdict
    on_slurm_submitted: Callable[[SlurmSweep, list[JobRecord]], None] = _ignore
    on_slurm_job: Callable[[JobRecord, JobState], None] = _ignore
    on_slurm_running: Callable[[JobRecord, str], None] = _ignore
    on_slurm_preflight: Callable[[JobRecord, str, str], None] = _ignore
    # Ctrl-C or a signal stopped following the jobs; they go on in Slurm (the results dir)
    on_slurm_detached: Callable[[Path], None] = _ignore
    # Kubernetes: the manifests written, before any is applied
    on_kubernetes_written: Callable[[KubernetesSubmission], None] = _ignore


@dataclass(frozen=True)
class RunOptions:
    resume: bool = False  # keep cells already ok for the same definition
    fail_fast: bool = False  # stop at the first failed cell (local sweeps)


@dataclass(frozen=True)
class KubernetesSubmission:
    """The manifests written (one per cell) and what `kubectl apply` said of each (empty when
    not applied); torchscale does not follow Kubernetes jobs."""

    directory: Path  # where the manifests and their worker specs are
    manifests: list[Path]
    skipped: int  # cells skipped by the plan: no manifest
    applied: list[Applied] = field(default_factory=list)


@dataclass
class BenchmarkRun:
    """Everything one benchmark produced. `exit_code` is the command's: 1 when a cell
    failed, nothing was measured, --fail-fast stopped the sweep, a comm sweep failed or a
    max-batch search ended on a failure other than running out of memory; else 0."""

    plan: Plan
    store: ResultStore
    sweep: SweepOutcome = field(default_factory=SweepOutcome)
    nothing_measured: str | None = None
    dry_run: bool = False
    comm: list[CommResult] = field(default_factory=list)
    comm_ok: bool = True
    max_batch: list[MaxBatchResult] = field(default_factory=list)
    max_batch_ok: bool = True
    profiles: list[tuple[Selected, ProfiledCell]] = field(default_factory=list)
    slurm: SlurmSweep | None = None  # launcher.kind slurm: what was written and submitted
    reused: list[str] = field(default_factory=list)  # dry run with --resume: cells kept
    kubernetes: KubernetesSubmission | None = None  # launcher.kind k8s

    @property
    def exit_code(self) -> int:
        broken = self.sweep.failures or self.nothing_measured or self.sweep.stopped_early
        return 1 if broken or not self.comm_ok or not self.max_batch_ok else 0


class Launcher(Protocol):
    """How one kind of launcher plans, checks and runs a benchmark. Nothing prints: progress
    goes to `BenchmarkEvents`, and everything produced comes back in a `BenchmarkRun`."""

    def machine(self, config: BenchConfig) -> Machine:
        """The nodes cells run on (the submitting host's GPUs say nothing about a cluster's)."""
        ...

    def results_store(self, config: BenchConfig, output_dir: Path, dry_run: bool) -> ResultStore:
        """Where results go; first checks the tools this launcher needs, before anything is
        written (a UsageError names what is missing)."""
        ...

    def dry_run(
        self,
        plan: Plan,
        store: ResultStore,
        env: Mapping[str, str],
        options: RunOptions,
        events: BenchmarkEvents,
    ) -> BenchmarkRun:
        """What a real run with these options would do, without running a cell: the output
        directory probed, the tools checked, the cells --resume would reuse counted."""
        ...

    def run(
        self,
        plan: Plan,
        store: ResultStore,
        env: Mapping[str, str],
        options: RunOptions,
        events: BenchmarkEvents,
    ) -> BenchmarkRun: ...
