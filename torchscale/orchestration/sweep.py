"""Run a plan cell by cell, one torchrun each, and never lose a finished result.

Every cell ends as a result file (ok, failed, oom, timeout or skipped) before the next starts;
summary.csv is rewritten after each cell, so an interrupted sweep keeps everything it finished
and `--resume` picks up where it stopped. A write that fails (disk full) stops the sweep with
ResultsError; results already written stay as they are.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from torchscale.contracts.cell import Status
from torchscale.contracts.errors import ResultsError
from torchscale.contracts.schema.cell_result import CellError, CellResult, Cost
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.contracts.schema.sweep_state import PlannedCell as PlannedEntry
from torchscale.contracts.schema.sweep_state import SweepState
from torchscale.contracts.signals import Terminated
from torchscale.contracts.wording import say
from torchscale.offline.analysis.cost import cell_cost
from torchscale.offline.results.store import ResultStore
from torchscale.offline.results.summary_csv import write_summary
from torchscale.orchestration.forecast_scoring import ForecastCheck, ForecastScorer
from torchscale.orchestration.launch.attempt import run_attempt
from torchscale.orchestration.launch.torchrun import LaunchCommand
from torchscale.orchestration.plan.planned import Plan, PlannedCell
from torchscale.orchestration.sweep_outcome import SweepOutcome
from torchscale.rank.data.prepare import DataReady, prepare_data


def unmeasured_result(
    planned: PlannedCell, status: Status, error: CellError, warnings: tuple[CellWarning, ...] = ()
) -> CellResult:
    """The result of a cell that produced no measurement (skipped, failed, oom, timeout)."""
    return CellResult(cell=planned.cell, status=status, warnings=list(warnings), error=error)


def nothing_measured(results: Sequence[CellResult], planned: int) -> str | None:
    """Why a sweep measured nothing (no cell ok), or None when a cell was measured.

    Skipped cells are not failures, so without this a sweep whose every cell was skipped (a
    GPU config on a node without GPUs) would pass a CI gate with nothing measured; the CLI
    prints this line and exits 1 (docs/cli.md, exit codes)."""
    if any(r.status == Status.OK for r in results):
        return None
    if planned == 0:
        return "nothing measured: the plan has no cells"
    skipped = [r for r in results if r.status == Status.SKIPPED]
    failed = sum(1 for r in results if r.status.is_failure)
    first = next((say(r.error.finding) for r in skipped if r.error is not None), None)
    why = f" (first reason: {first})" if first else ""
    if len(skipped) == planned:
        every = "the only cell was" if planned == 1 else f"all {planned} cells"
        return f"nothing measured: {every} skipped{why}"
    parts = [f"{failed} failed"] if failed else []
    if skipped:
        parts.append(f"{len(skipped)} skipped{why}")
    if len(results) < planned:
        parts.append(f"{planned - len(results)} not run")
    cells = "1 cell" if planned == 1 else f"{planned} cells"
    return f"nothing measured: no cell of {cells} ok ({', '.join(parts)})"


@dataclass
class SweepHooks:
    """Callbacks for progress display; the sweep itself prints nothing."""

    # (cell, index, total, will_launch): will_launch is False for skipped and reused cells
    on_start: Callable[[PlannedCell, int, int, bool], None] = (
        lambda planned, index, total, will_launch: None
    )
    on_done: Callable[[CellResult, bool], None] = lambda result, reused: None
    # the dataset was generated, found cached or checked (data.source disk / cifar100), once
    # before the first cell that launches; never called for synthetic data
    on_data: Callable[[DataReady], None] = lambda ready: None
    # a measured cell scored the experiment's forecasts of it, or met a problem doing so
    on_forecast: Callable[[ForecastCheck], None] = lambda check: None


# (cell, spec file, log directory, inherited environment) -> the launch; the default is the
# cell's own one-node torchrun, a Slurm allocation wraps torchrun in an srun step
CommandBuilder = Callable[[PlannedCell, Path, Path, Mapping[str, str]], LaunchCommand]


def run_cell(
    planned: PlannedCell,
    store: ResultStore,
    base_env: Mapping[str, str],
    price_per_gpu_hour: float | None = None,
    command_for: CommandBuilder = PlannedCell.command,
    launch_notes: Mapping[str, Any] | None = None,
) -> CellResult:
    """Launch one cell and return its result (also written to the store), priced at
    `price_per_gpu_hour` (config `cost:`) when it finished ok. `launch_notes` join the
    result's `launch` record (a Slurm job id and node list). A `jobs:` row's cell runs the
    user's command through the own-job host instead (orchestration/own_job/sweep_cell.py)."""
    if planned.job is not None:
        from torchscale.orchestration.own_job.sweep_cell import run_job_cell

        result = priced(run_job_cell(planned, store, base_env), price_per_gpu_hour)
        store.write_cell(result)
        return result
    cell_id = planned.cell.id
    store.prepare_cell(cell_id)
    spec_path = store.write_spec(
        planned.worker_spec(
            store.attempt_result_path(cell_id),
            store.attempt_steps_path(cell_id),
            store.peak_search_dirs,
        )
    )
    # compiled cells load what an earlier cell, probe or run of the experiment compiled
    shared = planned.sharing_compile_cache(store.compile_cache_dir)
    command = command_for(shared, spec_path, store.log_dir(cell_id), base_env)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    timeout = planned.launch.timeout_s
    # stale attempts were removed before launch: a result here was written by this launch,
    # after every rank's measurement was gathered, and is kept however the launch ended
    result_path = store.attempt_result_path(cell_id)  # rank 0 writes it atomically, last
    attempt = run_attempt(
        command, timeout, lambda: store.read_attempt(cell_id), finished=result_path.exists
    )
    outcome = attempt.outcome
    measured = attempt.written
    if measured is None:
        assert attempt.failure is not None
        result = unmeasured_result(
            planned, attempt.failure.status, attempt.failure.as_error(), planned.cell_warnings
        )
    else:
        # rank 0's part: what the host adds (the launch, its wall time, the shutdown's
        # warnings, the price) is known only once the launch is over, so the host writes
        # the one result file
        result = measured
        result.warnings = list(planned.cell_warnings) + result.warnings + attempt.warnings
    result.launch = {
        "argv": command.argv,
        "env": command.env_overrides,
        "omp_num_threads": command.omp_num_threads,
        "log_dir": str(command.log_dir),
        **(launch_notes or {}),
    }
    result.started_at = started
    result.wall_s = round(outcome.wall_s, 3)
    result = priced(result, price_per_gpu_hour)
    if measured is None:
        store.write_cell(result)
    else:  # written once; on a failed write rank 0's own result is kept instead
        store.keep_attempt(result)
    return result


def priced(result: CellResult, price_per_gpu_hour: float | None) -> CellResult:
    """The result with its `cost` at this price (a copy; cost is derived, never measured)."""
    if result.status != Status.OK or result.throughput is None:
        return result
    throughput = result.throughput
    fields, unavailable = cell_cost(
        throughput.samples_per_s,
        throughput.tokens_per_s,
        result.cell.world_size,
        price_per_gpu_hour,
    )
    stale = {k: v for k, v in result.unavailable.items() if not k.startswith("cost")}
    return result.model_copy(update={"cost": Cost(**fields), "unavailable": stale | unavailable})


def _previous_ok(planned: PlannedCell, store: ResultStore, resume: bool) -> CellResult | None:
    """With --resume, the stored ok result of exactly this cell definition (any version)."""
    if not resume or planned.skip is not None:
        return None
    return store.finished_ok(planned.cell.id, planned.cell.definition_sha256)


def reusable_cells(plan: Plan, store: ResultStore) -> list[str]:
    """The cells --resume would keep rather than run (what a dry run reports)."""
    return [p.cell.id for p in plan.cells if _previous_ok(p, store, resume=True) is not None]


def run_sweep(
    plan: Plan,
    store: ResultStore,
    base_env: Mapping[str, str],
    *,
    resume: bool = False,
    fail_fast: bool = False,
    hooks: SweepHooks | None = None,
) -> SweepOutcome:
    hooks = hooks or SweepHooks()
    outcome = SweepOutcome()
    store.write_config(plan.config_yaml)
    total = len(plan.cells)
    planned_entries = planned_cells(plan)
    store.write_sweep_state(SweepState(phase="running", planned=planned_entries, finished=0))
    current: str | None = None
    scorer = ForecastScorer(store.root)
    try:
        # the dataset every cell reads, made (or verified) once here: DataError stops the sweep
        # before any launch; nothing to do when no cell will launch (all skipped or resumed)
        if any(p.skip is None and _previous_ok(p, store, resume) is None for p in plan.cells):
            ready = prepare_data(plan.data)
            if ready is not None:
                hooks.on_data(ready)
        for index, planned in enumerate(plan.cells):
            current = planned.cell.id
            previous = _previous_ok(planned, store, resume)
            reused = previous is not None
            hooks.on_start(planned, index, total, planned.skip is None and not reused)
            if planned.skip is not None:
                error = CellError(why=planned.skip)
                result = unmeasured_result(planned, Status.SKIPPED, error)
                store.write_cell(result)
            else:
                # a reused result is kept as it was written (any schema version, its own
                # price); the report's --cost-per-gpu-hour prices it anew
                result = previous or run_cell(planned, store, base_env, plan.price_per_gpu_hour)
            outcome.results.append(result)
            current = None
            outcome.table = write_summary(store, outcome.results)
            if index + 1 < total:
                running = SweepState(phase="running", planned=planned_entries, finished=index + 1)
                store.write_sweep_state(running)
            hooks.on_done(result, reused)
            check = None if reused else scorer.check(result)
            if check is not None:
                hooks.on_forecast(check)
            if fail_fast and result.status.is_failure:
                outcome.stopped_early = True
                break
    except BaseException as exc:
        # best effort on the way out (Ctrl-C, a full disk): never mask the first error
        with contextlib.suppress(ResultsError):
            if outcome.results:
                write_summary(store, outcome.results)
            finished = len(outcome.results)
            stopped = SweepState(
                phase="stopped",
                planned=planned_entries,
                finished=finished,
                stopped_by=stopped_by(exc),
                during=current,
            )
            if finished == total:  # every cell done: a stop in the last hook cut nothing short
                stopped = SweepState(phase="complete", planned=planned_entries, finished=total)
            store.write_sweep_state(stopped)
        raise
    done = len(outcome.results)
    state = SweepState(phase="complete", planned=planned_entries, finished=done)
    if outcome.stopped_early:
        state = state.model_copy(update={"phase": "stopped", "stopped_by": "--fail-fast"})
    store.write_sweep_state(state)
    return outcome


def planned_cells(plan: Plan) -> list[PlannedEntry]:
    """The plan's cells as the sweep state lists them, in plan order."""
    return [PlannedEntry(id=p.cell.id, label=p.cell.shape_label, skip=p.skip) for p in plan.cells]


def stopped_by(exc: BaseException) -> str:
    """What stopped a sweep, in the words its state file keeps."""
    if isinstance(exc, Terminated):
        return exc.name
    if isinstance(exc, KeyboardInterrupt):
        return "Ctrl-C (SIGINT)"
    return f"{type(exc).__name__}: {exc}".split("\n")[0]
