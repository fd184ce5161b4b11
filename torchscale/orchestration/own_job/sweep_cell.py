"""A sweep's job cell (a `jobs:` row at one world size, batch and precision), run through the
own-job host as `profile -- COMMAND` runs a command, so its measurement and faults are the
same: `measurement.repeats` launches (a repeat is a relaunch; each launch's start-up is its
fixed costs, apart from the measured steps), its result named by the plan's identity, so the
sweep's state, --resume and the report read it as any cell's. A launch that measures nothing
ends the cell with that launch's root cause; the sweep goes on."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from torchscale.contracts.catalog import Strategy
from torchscale.contracts.cell import CellIdentity, Status
from torchscale.contracts.cell_settings import MeasurementConfig
from torchscale.contracts.schema.cell_result import CellError, CellResult
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.launch.torchrun import LaunchCommand
from torchscale.orchestration.own_job.command import OwnJobRequest, missing_program
from torchscale.orchestration.own_job.identity import as_measured
from torchscale.orchestration.own_job.job_line import JobLine
from torchscale.orchestration.own_job.run import (
    Launched,
    RankReader,
    job_result,
    launch_job,
    probe_reader,
    record_environment,
)


class JobCell(Protocol):
    """What this reads of a plan's cell (plan.PlannedCell, which imports this package)."""

    @property
    def cell(self) -> CellIdentity: ...

    @property
    def job(self) -> JobLine | None: ...

    @property
    def job_request(self) -> OwnJobRequest: ...

    @property
    def measurement(self) -> MeasurementConfig: ...

    @property
    def cell_warnings(self) -> tuple[CellWarning, ...]: ...

    def command(
        self, spec_path: Path, log_dir: Path, base_env: Mapping[str, str]
    ) -> LaunchCommand: ...


def launch_dir(log_dir: Path, repeat: int, repeats: int) -> Path:
    """Where a launch keeps its log, environment and ranks' files: the cell's log folder, or
    launch<k>/ inside it when the cell relaunches."""
    return log_dir / f"launch{repeat + 1}" if repeats > 1 else log_dir


def run_job_cell(
    planned: JobCell,
    store: ResultStore,
    base_env: Mapping[str, str],
    read_ranks: RankReader | None = None,
) -> CellResult:
    """Launch the job cell's command `measurement.repeats` times and return its result (the
    caller prices and writes it, as a cell's)."""
    job = planned.job
    assert job is not None, "a job cell"
    cell = planned.cell
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    store.prepare_cell(cell.id)
    repeats = planned.measurement.repeats
    request = planned.job_request
    reader = read_ranks or probe_reader()
    launches: list[Launched] = []
    for repeat in range(repeats):
        directory = launch_dir(store.log_dir(cell.id), repeat, repeats)
        command = planned.command(Path(), directory, base_env)
        missing = missing_program(command.argv, command.env)
        if missing is not None:  # one clear line in the cell's error; the sweep goes on
            error = CellError(why=missing)
            warnings = list(planned.cell_warnings)
            return CellResult(
                cell=cell, status=Status.FAILED, error=error, warnings=warnings, started_at=started
            )
        record_environment(store, command, directory)
        launches.append(launch_job(command, request, reader))
        if not launches[-1].kept:
            break
    precision = cell.precision if "precision" in job.named else None

    def identity_of(
        world: int,
        device: str,
        batch: int | None,
        strategy: Strategy | None,
        counted: str | None,
    ) -> CellIdentity:
        return as_measured(cell, world, device, batch, strategy, counted)

    result, _, _ = job_result(launches, request, store, identity_of, precision)
    result.warnings = [*planned.cell_warnings, *result.warnings]
    result.started_at = started
    return result
