"""Run the user's own launch line once, through the one launch path, and turn what its ranks
measured into one CellResult written as a sweep's cell (OUTPUT_DIR/<experiment>/cells/<id>.json,
the run's log, measurements and environment in logs/<id>/), so `torchscale report` reads it
like any measured cell: its diagnosis, straggler and findings. (A profiled run's folder,
profile/<id>/, is read by the report only through its trace analysis, which a user's job has
not: its result there would be shown as "not analysed".)

The job's process group is stopped on Ctrl-C, SIGTERM or SIGHUP (launch/process.py), and what
the ranks measured before is kept. Each way it ends without a measurement (exited, hung, never
stepped an optimizer, wrote nothing) is one finding, said in one line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from torchscale.contracts import wording
from torchscale.contracts.catalog import Strategy
from torchscale.contracts.cell import CellIdentity, Status
from torchscale.contracts.errors import UsageError
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellError, CellResult
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.contracts.signals import Terminated, signal_name
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.launch.attempt import Attempt, run_attempt
from torchscale.orchestration.launch.torchrun import LaunchCommand
from torchscale.orchestration.own_job.command import (
    ENVIRONMENT_FILE,
    OwnJobRequest,
    job_command,
    job_label,
    missing_program,
    redacted,
)
from torchscale.orchestration.own_job.identity import (
    how_written,
    job_device,
    job_facts,
    job_identity,
    job_precision,
    job_spec,
    job_strategy,
    measured_batch,
)
from torchscale.rank.own_job import ENV_DIR as DIR_ENV

if TYPE_CHECKING:  # the aggregation loads torch (rank/): imported where it is called
    from torchscale.rank.worker.measure import RankMeasurement

# the probe's reader (torchscale.rank.own_job.read_rank_files): the ranks' measurements, by
# rank, and the problems found reading them
RankReader = Callable[[Path], "tuple[list[RankMeasurement], list[Finding]]"]
NO_STEP = "own_job.no_optimizer_step"  # the probe's code for a rank that never stepped
ENDED_EARLY = "own_job.ended_early"  # ... for one that ended before its measured steps
EXIT_NO_MEASUREMENT = 1


@dataclass(frozen=True)
class OwnJobRun:
    """What one run of the user's job left: its folder, its result (ok with the measurement,
    or failed), the one line said when nothing was measured, and the signal that stopped it."""

    directory: Path  # the run's folder: its log, the ranks' files, its environment
    result_path: Path
    result: CellResult
    problem: Finding | None = None
    stopped_by: int | None = None
    warnings: list[Finding] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if self.stopped_by is not None:
            return 128 + self.stopped_by
        return EXIT_NO_MEASUREMENT if self.problem is not None else 0


def probe_reader() -> RankReader:
    """The probe's own reader of its files (the host never parses them itself)."""
    from torchscale.rank.own_job import read_rank_files

    return read_rank_files


def run_id(label: str, now: datetime) -> str:
    """'own_train.py__20261128-031502': the job's folder under profile/."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)
    return f"own_{slug}__{now.strftime('%Y%m%d-%H%M%S')}"


def measured(ranks: list[RankMeasurement]) -> list[RankMeasurement]:
    """The ranks with at least one measured step (a window with step times)."""
    return [r for r in ranks if any(w.step_s for w in r.windows)]


REPEATS = 5  # the measured steps cut into this many blocks: the interval's repeats


def as_repeats(ranks: list[RankMeasurement]) -> list[RankMeasurement]:
    """Each rank's measured steps as REPEATS consecutive blocks (`in_blocks`), so the
    aggregation gives the job's throughput an interval as it does a cell's repeats."""
    from torchscale.rank.own_job.reading import OwnJobMeasurement, in_blocks

    def blocks(rank: RankMeasurement) -> RankMeasurement:
        steps = sum(len(w.step_s) for w in rank.windows)
        if not isinstance(rank, OwnJobMeasurement) or steps < 2 * REPEATS:
            return rank
        return in_blocks(rank, steps // REPEATS)

    return [blocks(r) for r in ranks]


@dataclass(frozen=True)
class Launched:
    """One launch of the job: its command, how it ended, what its ranks wrote."""

    command: LaunchCommand
    attempt: Attempt[list[RankMeasurement]] | None  # None: stopped by a signal
    ranks: list[RankMeasurement]  # every rank file read, measured steps or not
    findings: list[Finding]
    wall_s: float  # the launch's own time (not reading the files after it)
    started_unix: float  # its start on the wall clock: the ranks' start-up counts from it
    stopped_by: int | None = None

    @property
    def kept(self) -> list[RankMeasurement]:
        """The measured ranks, with their start-up from this launch's start."""
        return with_start_up(measured(self.ranks), self.started_unix)


def launch_job(
    command: LaunchCommand,
    request: OwnJobRequest,
    reader: RankReader,
    keep_on_stop: bool = False,
) -> Launched:
    """Run the job once and read its ranks' files (a stale one of an earlier launch in the
    same folder removed first). Ctrl-C and SIGTERM stop the job's group (run_logged); with
    `keep_on_stop` what the ranks measured before is kept and the signal recorded, else
    the signal goes on up (a sweep stops)."""
    rank_dir = Path(command.env_overrides[DIR_ENV])
    shutil.rmtree(rank_dir, ignore_errors=True)
    rank_dir.mkdir(parents=True, exist_ok=True)
    read: list[tuple[list[RankMeasurement], list[Finding]]] = []

    def read_written() -> list[RankMeasurement] | None:
        read.append(reader(rank_dir))
        return measured(read[-1][0]) or None

    clock, started_unix = time.perf_counter(), time.time()
    attempt: Attempt[list[RankMeasurement]] | None = None
    stopped_by: int | None = None
    try:
        attempt = run_attempt(command, request.timeout_s, read_written)
    except KeyboardInterrupt:  # the job's group is down already (run_logged)
        if not keep_on_stop:
            raise
        stopped_by = signal.SIGINT
    except Terminated as stop:
        if not keep_on_stop:
            raise
        stopped_by = stop.signum
    # the job's own time: the launch's, not reading its files after (the reader loads torch)
    wall_s = attempt.outcome.wall_s if attempt is not None else time.perf_counter() - clock
    if attempt is None:
        read_written()
    ranks, findings = read[-1]
    return Launched(command, attempt, ranks, findings, wall_s, started_unix, stopped_by)


# the job's set-up is one span to the probe: no CUDA context or process group apart
SETUP_WHOLE = "unavailable.own_job_setup_whole"


def with_start_up(ranks: list[RankMeasurement], launched_unix: float) -> list[RankMeasurement]:
    """Each rank's start-up as a cell's fixed costs: the launch's start to torch imported
    (torchrun's and the interpreter's start, imports: process start), torch imported to the
    first sight of training (the job's own set-up, whole: shown as the model build) and its
    warm-up steps."""
    from torchscale.rank.worker.fixed_costs import RankFixedCosts

    whole = Finding(code=SETUP_WHOLE)
    out = []
    for rank in ranks:
        imported = getattr(rank, "torch_imported_unix", None)
        training = getattr(rank, "training_started_unix", None)
        setup = None if imported is None or training is None else max(0.0, training - imported)
        fixed = RankFixedCosts(
            process_start_s=None if imported is None else max(0.0, imported - launched_unix),
            model_build_s=setup,
            warmup_s=sum(rank.warmup_s) if rank.warmup_s else None,
            notes={"device_init_s": whole, "process_group_init_s": whole},
        )
        out.append(replace(rank, fixed=fixed))
    return out


def combined(launches: Sequence[Launched]) -> list[RankMeasurement]:
    """The ranks' measurements of a cell: one launch's steps cut into REPEATS blocks (as
    `profile` does), or several launches', a window per launch (a relaunch is a repeat)."""
    if len(launches) == 1:
        return as_repeats(launches[0].kept)
    from torchscale.rank.own_job.reading import OwnJobMeasurement, relaunched

    kept = [[r for r in launch.kept if isinstance(r, OwnJobMeasurement)] for launch in launches]
    return list(relaunched(kept)) if all(kept) else []


def job_result(
    launches: Sequence[Launched],
    request: OwnJobRequest,
    store: ResultStore,
    identity_of: Callable[[int, str, int | None, Strategy | None, str | None], CellIdentity],
    precision: str | None = None,
) -> tuple[CellResult, Finding | None, list[Finding]]:
    """(the result of the launches, why nothing was measured or None, the notes said):
    `identity_of(world, device, batch, strategy, precision)` names the cell from what the
    ranks' files tell (`precision`: a sweep's, else the counted one)."""
    last = launches[-1]
    notes = [f for launch in launches for f in launch.findings]
    if last.stopped_by is not None:
        figures = {"signal": signal_name(last.stopped_by)}
        notes.append(Finding(code="own_job.stopped", figures=figures))
    kept = combined(launches) if last.kept else []
    device, counted = job_device(last.ranks), measured_batch(kept)
    batch = request.samples_per_step or counted
    if request.samples_per_step is not None:  # the result says which count it used
        given = {"given": request.samples_per_step, "counted": counted}
        notes.append(Finding(code="own_job.samples_given", figures=given))
    shown_precision = precision or job_precision(kept)
    identity = identity_of(len(last.ranks), device, batch, job_strategy(kept), shown_precision)
    problem = None
    if kept:
        from torchscale.rank.worker.aggregate import aggregate

        paths = store.cell_path(identity.id), store.steps_path(identity.id)
        spec = job_spec(identity, *paths, request, kept)
        result = aggregate(spec, kept, job_facts(kept, device, batch, precision))
        shutdown = [
            _launched_by(w, request.argv)
            for launch in launches
            if launch.attempt
            for w in launch.attempt.warnings
        ]
        result.warnings = [*result.warnings, *shutdown, *(_warning(n) for n in notes)]
        result.job = how_written(kept)
    else:
        problem = _problem(
            request,
            last.attempt,
            last.ranks,
            last.findings,
            last.stopped_by,
            last.wall_s,
            last.command.log_path,
        )
        error = last.attempt.failure.as_error() if last.attempt and last.attempt.failure else None
        if error is None:
            error = CellError(why=problem)
        elif problem.code not in JOB_FAILED:  # the job ended well: ours is why
            error = error.model_copy(update={"why": problem})  # its log tail and signal kept
        result = CellResult(
            cell=identity,
            status=_status(last.attempt),
            error=error,
            warnings=[_warning(n) for n in notes],
        )
    result.wall_s = round(sum(launch.wall_s for launch in launches), 3)
    result.launch = {"argv": last.command.argv, "env": redacted(last.command.env_overrides)}
    if len(launches) > 1:
        result.launch["launches"] = len(launches)
    return result, problem, notes


def record_environment(store: ResultStore, command: LaunchCommand, directory: Path) -> None:
    """The job's argv and environment, secrets redacted, beside its log."""
    record = {"argv": command.argv, "env": redacted(command.env)}
    store.write_text(directory / ENVIRONMENT_FILE, json.dumps(record, indent=2))


def run_own_job(
    request: OwnJobRequest,
    output_dir: Path,
    experiment: str,
    base_env: Mapping[str, str],
    read_ranks: RankReader | None = None,
    now: datetime | None = None,
    on_start: Callable[[OwnJobRequest], object] | None = None,
    wrap: Callable[[LaunchCommand, Path], LaunchCommand] | None = None,
    traced: Callable[[CellResult, Launched, OwnJobRequest], CellResult] | None = None,
) -> OwnJobRun:
    """Run the job, read its ranks' files, write and return its result (`on_start` is told
    once the command is found, just before it starts). The traced window is the profiler's
    (orchestration/profiling/own_job_window.py): `wrap` puts the launch line inside it (nsys),
    `traced` gives the result its traces' analysis."""
    missing = missing_program(request.argv, base_env)
    if missing is not None:
        raise UsageError(wording.say(missing))
    reader = read_ranks or probe_reader()
    started = now or datetime.now(timezone.utc)
    store = ResultStore.for_experiment(output_dir, experiment)
    cell_id = run_id(job_label(request.argv), started)
    if store.cell_path(cell_id).exists() or store.log_dir(cell_id).exists():  # same second
        cell_id = f"{cell_id}-{os.getpid()}"
    directory, result_path = store.log_dir(cell_id), store.cell_path(cell_id)
    command = job_command(request, directory, base_env)
    if wrap is not None:  # nsys around the launch line (profiling/own_job_window.py)
        command = wrap(command, directory)
    record_environment(store, command, directory)
    if on_start is not None:
        on_start(request)
    launched = launch_job(command, request, reader, keep_on_stop=True)
    label = job_label(request.argv)

    def identity_of(
        world: int,
        device: str,
        batch: int | None,
        strategy: Strategy | None,
        precision: str | None,
    ) -> CellIdentity:
        return job_identity(cell_id, request.argv, label, world, device, batch, strategy, precision)

    result, problem, notes = job_result([launched], request, store, identity_of)
    result.started_at = started.isoformat(timespec="seconds")
    if traced is not None and request.trace_steps and result.status is Status.OK:
        result = traced(result, launched, request)
    store.write_text(result_path, result.model_dump_json(indent=2))
    return OwnJobRun(directory, result_path, result, problem, launched.stopped_by, notes)


def _launched_by(warning: CellWarning, argv: tuple[str, ...]) -> CellWarning:
    """A shutdown warning names what exited: the job's own launcher (python, accelerate),
    not always torchrun as a cell's."""
    coded = warning.finding
    if coded is None or coded.code != "warning.exit_after_result":
        return warning
    figures = {**coded.figures, "program": PurePath(argv[0]).name}
    return CellWarning.of(warning.kind, coded.code, figures)


def _warning(finding: Finding) -> CellWarning:
    return CellWarning.of("other", finding.code, dict(finding.figures))


def _status(attempt: Attempt[list[RankMeasurement]] | None) -> Status:
    if attempt is not None and attempt.failure is not None:
        return attempt.failure.status
    return Status.FAILED


# the job's own failure, whose root cause the launch found (today's, as for a cell)
JOB_FAILED = frozenset({"own_job.exited", "own_job.timed_out"})


def _problem(
    request: OwnJobRequest,
    attempt: Attempt[list[RankMeasurement]] | None,
    ranks: list[RankMeasurement],
    findings: list[Finding],
    stopped_by: int | None,
    wall_s: float,
    log: Path,
) -> Finding:
    """Why nothing was measured, in the order a user acts on it."""
    where = {"log": str(log), "wall_s": wall_s}
    if stopped_by is not None:
        return Finding(code="own_job.stopped", figures={"signal": signal_name(stopped_by)})
    outcome = attempt.outcome if attempt is not None else None
    if outcome is not None and outcome.timed_out:
        return Finding(code="own_job.timed_out", figures={"timeout_s": request.timeout_s, **where})
    if outcome is not None and outcome.returncode not in (0, None):
        return Finding(code="own_job.exited", figures={"returncode": outcome.returncode, **where})
    never_stepped = [f for f in findings if f.code == NO_STEP]
    if never_stepped and not ranks:
        return Finding(code="own_job.no_step_seen", figures={"ranks": len(never_stepped), **where})
    if ranks or any(f.code == ENDED_EARLY for f in findings):  # stepped, not past the warm-up
        figures = {"warmup": request.warmup_steps, **where}
        return Finding(code="own_job.too_few_steps", figures=figures)
    return Finding(code="own_job.no_rank_files", figures=where)
