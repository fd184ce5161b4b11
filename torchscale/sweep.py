"""Run a plan cell by cell, one torchrun each, and never lose a finished result.

Every cell ends as a result file (ok, failed, oom, timeout or skipped) before the next starts;
summary.csv is rewritten after each cell, so an interrupted sweep keeps everything it finished
and `--resume` picks up where it stopped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from torchscale.atomic import write_text_atomic
from torchscale.config.schema import BenchConfig
from torchscale.launch.failure import classify_failure
from torchscale.launch.process import run_logged
from torchscale.launch.torchrun import LaunchCommand, torchrun_command
from torchscale.plan import Cell, PlannedCell
from torchscale.results.schema import CellResult
from torchscale.results.store import ResultStore
from torchscale.results.summary import write_summary
from torchscale.worker.spec import WorkerSpec


def definition_sha256(cell: Cell) -> str:
    return hashlib.sha256(cell.definition.encode()).hexdigest()


def worker_spec(config: BenchConfig, cell: Cell, store: ResultStore) -> WorkerSpec:
    return WorkerSpec(
        cell_id=cell.cell_id,
        definition_sha256=definition_sha256(cell),
        model=cell.model,
        batch_size=cell.batch_size,
        world_size=cell.world_size,
        precision=cell.precision,
        strategy=cell.strategy,
        device=cell.device,
        backend=cell.backend,
        training=config.training,
        measurement=config.measurement,
        data=config.data,
        result_path=str(store.cell_path(cell.cell_id)),
        steps_path=str(store.steps_path(cell.cell_id)),
    )


def cell_command(
    config: BenchConfig, cell: Cell, store: ResultStore, base_env: Mapping[str, str], cpu_cores: int
) -> LaunchCommand:
    return torchrun_command(
        cell,
        store.spec_path(cell.cell_id),
        store.log_dir(cell.cell_id),
        base_env,
        cpu_cores,
        omp_num_threads=cell.omp_num_threads,
        extra_env=config.launcher.env,
    )


def _bare_result(
    cell: Cell, status: str, error: dict[str, Any], warnings: tuple[str, ...] = ()
) -> CellResult:
    return CellResult(
        cell_id=cell.cell_id,
        definition_sha256=definition_sha256(cell),
        status=status,  # type: ignore[arg-type]
        model=cell.model.name,
        model_label=cell.model.display_name,
        batch_size=cell.batch_size,
        world_size=cell.world_size,
        precision=cell.precision,
        strategy=cell.strategy,
        device=cell.device,
        backend=cell.backend,
        warnings=list(warnings),
        error=error,
    )


@dataclass
class SweepHooks:
    """Callbacks for progress display; the sweep itself prints nothing."""

    # (cell, index, total, will_launch): will_launch is False for skipped and reused cells
    on_start: Callable[[PlannedCell, int, int, bool], None] = (
        lambda planned, index, total, will_launch: None
    )
    on_done: Callable[[CellResult, bool], None] = lambda result, reused: None


@dataclass
class SweepOutcome:
    results: list[CellResult] = field(default_factory=list)
    stopped_early: bool = False  # --fail-fast stopped it

    @property
    def failures(self) -> list[CellResult]:
        return [r for r in self.results if r.status in ("failed", "oom", "timeout")]


def run_cell(
    config: BenchConfig,
    planned: PlannedCell,
    store: ResultStore,
    base_env: Mapping[str, str],
    cpu_cores: int,
) -> CellResult:
    """Launch one cell and return its result (also written to the store)."""
    cell = planned.cell
    spec = worker_spec(config, cell, store)
    store.cell_path(cell.cell_id).unlink(missing_ok=True)  # a stale result must not pass as new
    write_text_atomic(store.spec_path(cell.cell_id), spec.model_dump_json(indent=2))
    command = cell_command(config, cell, store, base_env, cpu_cores)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    timeout = config.launcher.cell_timeout_s
    outcome = run_logged(command.argv, command.env, command.log_dir / "torchrun.log", timeout)
    launch = {
        "argv": command.argv,
        "env": command.env_overrides,
        "omp_num_threads": command.omp_num_threads,
        "log_dir": str(command.log_dir),
    }
    # the stale file was removed before launch: a result here was written by this run's rank 0
    result = None if outcome.timed_out else store.read_cell(cell.cell_id)
    if result is None:
        failure = classify_failure(outcome, command.error_file, timeout)
        result = _bare_result(cell, failure.status, failure.as_error(), planned.warnings)
    else:
        result.warnings = list(planned.warnings) + result.warnings
        if outcome.returncode != 0:  # e.g. a rank aborting in gloo teardown after the gather
            result.warnings.append(
                f"torchrun exited with {outcome.returncode} after the result was written "
                f"(shutdown failure; measurement kept): see {command.log_dir}"
            )
    result.launch = launch
    result.started_at = started
    result.wall_s = round(outcome.wall_s, 3)
    store.write_cell(result)
    return result


def run_sweep(
    config: BenchConfig,
    plan: list[PlannedCell],
    store: ResultStore,
    base_env: Mapping[str, str],
    cpu_cores: int,
    *,
    resume: bool = False,
    fail_fast: bool = False,
    hooks: SweepHooks | None = None,
) -> SweepOutcome:
    hooks = hooks or SweepHooks()
    outcome = SweepOutcome()
    store.write_config(config)
    try:
        for index, planned in enumerate(plan):
            cell = planned.cell
            previous = None
            if resume and planned.skip_reason is None:
                previous = store.finished_ok(cell.cell_id, definition_sha256(cell))
            reused = previous is not None
            hooks.on_start(planned, index, len(plan), planned.skip_reason is None and not reused)
            if planned.skip_reason is not None:
                result = _bare_result(cell, "skipped", {"reason": planned.skip_reason})
                store.write_cell(result)
            else:
                result = previous or run_cell(config, planned, store, base_env, cpu_cores)
            outcome.results.append(result)
            write_summary(store, outcome.results)
            hooks.on_done(result, reused)
            if fail_fast and result.status in ("failed", "oom", "timeout"):
                outcome.stopped_early = True
                break
    finally:
        if outcome.results:
            write_summary(store, outcome.results)
    return outcome
