"""What a benchmark run reports as it goes (`BenchmarkEvents`) and what it hands back
(`BenchmarkRun`), the same types for every launcher: the CLI prints from the one and picks its
exit code from the other; a notebook reads them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from torchscale.sweep import SweepOutcome

if TYPE_CHECKING:
    from torchscale.comm.comm_result import CommResult
    from torchscale.comm.sweep_launch import CommLaunch, CommRequest
    from torchscale.data.prepare import DataReady
    from torchscale.k8s import Applied
    from torchscale.memory.max_batch_result import MaxBatchResult
    from torchscale.memory.max_batch_runs import SearchGroup
    from torchscale.memory.search import ProbeOutcome
    from torchscale.plan import Plan, PlannedCell
    from torchscale.profiling.session import ProfiledCell
    from torchscale.profiling.trigger import Selected
    from torchscale.results.store import ResultStore
    from torchscale.schema.cell_result import CellResult
    from torchscale.slurm.client import JobState
    from torchscale.slurm.jobs import JobRecord
    from torchscale.slurm.submission import SlurmSweep


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
