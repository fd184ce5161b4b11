"""The contract every scheduler's launcher keeps (each package's `launcher.py` implements it):
`Launcher`, how one kind plans, checks and runs a benchmark; `BenchmarkEvents`, what a run
reports as it goes; `BenchmarkRun`, what it hands back. The same types for every launcher: the
CLI prints from the events and picks its exit code from the run; a notebook reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

# a run's sweep, empty before it ran (its module imports no pandas: planning, a dry run and a
# command's first error need none)
from torchscale.orchestration.sweep_outcome import SweepOutcome

if TYPE_CHECKING:
    from torchscale.contracts.schema.cell_result import CellResult
    from torchscale.contracts.schema.comm_result import CommResult
    from torchscale.contracts.schema.max_batch import MaxBatchResult
    from torchscale.offline.results.store import ResultStore
    from torchscale.orchestration.comm.sweep_launch import CommLaunch, CommRequest
    from torchscale.orchestration.config.schema import BenchConfig
    from torchscale.orchestration.forecast_scoring import ForecastCheck
    from torchscale.orchestration.memory.max_batch_runs import SearchGroup
    from torchscale.orchestration.memory.search import ProbeOutcome
    from torchscale.orchestration.plan.nodes import Machine
    from torchscale.orchestration.plan.planned import Plan, PlannedCell
    from torchscale.orchestration.profiling.session import ProfiledCell
    from torchscale.orchestration.profiling.trigger import Selected
    from torchscale.rank.data.prepare import DataReady


# the environment a launcher's cells start from (os.environ, or what a caller passes)
Env = Mapping[str, str]


def _ignore(*args: object) -> None:
    return None


@dataclass(frozen=True)
class BenchmarkEvents:
    """Callbacks as the job goes; each defaults to doing nothing. The job never prints."""

    # the sweep (torchscale.orchestration.sweep.SweepHooks): (cell, index, total, will_launch)
    on_cell_start: Callable[[PlannedCell, int, int, bool], None] = _ignore
    on_cell_done: Callable[[CellResult, bool], None] = _ignore  # (result, reused)
    on_data: Callable[[DataReady], None] = _ignore
    # a measured cell scored the experiment's forecasts of it (or met a problem doing so)
    on_forecast: Callable[[ForecastCheck], None] = _ignore
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
    # what a launcher that hands the cells to a scheduler reports as it goes (what it wrote or
    # submitted, each job's state, the cell each runs, ...): one event for every launcher
    on_launcher_event: Callable[[LauncherEvent], None] = _ignore


@dataclass(frozen=True)
class RunOptions:
    resume: bool = False  # keep cells already ok for the same definition
    fail_fast: bool = False  # stop at the first failed cell (local sweeps)


@dataclass(frozen=True)
class LauncherSubmission:
    """What a launcher wrote or submitted for a scheduler to run (sbatch scripts, job
    manifests), the same shape for every launcher: the CLI prints `lines` when it is written
    and `closing` once the run is over, and knows nothing of the scheduler."""

    launcher: str  # the launcher.kind that wrote it
    directory: Path  # where it is
    files: tuple[Path, ...]  # what was written: one file per job
    lines: tuple[str, ...]  # what was written or submitted, in plain text, a line each
    closing: tuple[str, ...] = ()  # after the run: what became of it ('nothing applied: ...')
    followed: bool = False  # jobs the launcher follows until they end (the CLI shows progress)
    record: object = None  # the launcher's own account, for a caller that knows the launcher


# how a launcher's event is shown, whatever the launcher: 'submitted' carries the submission
# (its lines printed on stdout); 'progress' is one line of how the jobs go, which --quiet leaves
# out; 'problem' one that --quiet still shows (a failed check); 'detached' says the launcher
# stopped following jobs that go on without it
LauncherEventKind = Literal["submitted", "progress", "problem", "detached"]


@dataclass(frozen=True)
class LauncherEvent:
    """Something a launcher reports as it goes, in one line of plain text, with the facts
    behind it for a caller that wants them: a new launcher's progress needs no new callback,
    and the CLI shows it by its `kind` alone."""

    launcher: str  # the launcher.kind that reports it
    kind: LauncherEventKind
    message: str  # one line; about a cell (`cell_id`), the line ends with the cell's name
    cell_id: str | None = None  # the cell it is about: a renderer that knows the plan names it
    submission: LauncherSubmission | None = None  # kind 'submitted'
    payload: Mapping[str, object] = field(default_factory=dict)  # e.g. job id, state

    def line(self, cell_name: str | None = None) -> str:
        """The line to show: the message, then the cell's name (its id when none is known)."""
        if self.cell_id is None:
            return self.message
        return f"{self.message} {cell_name or self.cell_id}"


@dataclass
class BenchmarkRun:
    """Everything one benchmark produced. `exit_code` is the command's: 1 when a cell
    failed, nothing was measured, --fail-fast stopped the sweep, a comm sweep failed, a
    max-batch search ended on a failure other than running out of memory or a profile the
    config asked for gave no analysis (its profiler failed); else 0."""

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
    reused: list[str] = field(default_factory=list)  # dry run with --resume: cells kept
    # a launcher that hands the cells to a scheduler: what it wrote or submitted
    submission: LauncherSubmission | None = None

    @property
    def exit_code(self) -> int:
        broken = self.sweep.failures or self.nothing_measured or self.sweep.stopped_early
        unprofiled = any(profiled.analysis is None for _, profiled in self.profiles)
        return 1 if broken or unprofiled or not self.comm_ok or not self.max_batch_ok else 0


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
        self, plan: Plan, store: ResultStore, env: Env, options: RunOptions, events: BenchmarkEvents
    ) -> BenchmarkRun:
        """What a real run with these options would do, without running a cell: the output
        directory probed, the tools checked, the cells --resume would reuse counted."""
        ...

    def run(
        self, plan: Plan, store: ResultStore, env: Env, options: RunOptions, events: BenchmarkEvents
    ) -> BenchmarkRun: ...
