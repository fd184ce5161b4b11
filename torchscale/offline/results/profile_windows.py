"""A profiled run's measured windows against its traced steps, from the files beside its
traces: `rank<k>.phases.json` (each rank's traced steps, timed by the step timer of the
measured windows), `steps.jsonl` (every measured step with its phases) and `result.json`.

The profiled run's diagnosis judges its traces against its measured windows
(`inflation.with_inflation`): this module reads the traced steps' times and the phase timers'
diagnosis of the measured windows (`timer_diagnosis`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.diagnosis import Diagnosis
from torchscale.contracts.step_phases import STEP_RECORD_TIMES, seconds_column
from torchscale.contracts.versioned import read_json_object
from torchscale.contracts.worker_spec import phases_name
from torchscale.offline.analysis.diagnosis import (
    RunEvidence,
    TimerEvidence,
    busy_caveat,
    diagnose,
    with_caveat,
)
from torchscale.offline.analysis.diagnosis.device import calibration_table, work_equal
from torchscale.offline.analysis.diagnosis.step_model import NoSyncSteps
from torchscale.offline.results.directory_layout import ProfileRun


def read_step_records(path: Path) -> list[dict[str, Any]] | None:
    """The steps file's records; None when absent, unreadable or torn (a torn file is not
    half-used)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    records = []
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            return None
        if not isinstance(record, dict) or not isinstance(record.get("time_s"), int | float):
            return None
        records.append(record)
    return records


def read_phase_record(directory: Path, rank: int) -> dict[str, Any] | None:
    """Rank `rank`'s `rank<k>.phases.json` in `directory` (written by rank/worker/capture.py),
    the one reader of it: its traced step times here, its waits for a CPU for the trace
    analysis (orchestration/profiling/analyze.py). None when it is absent, unreadable or not
    a record (traces of other jobs have none)."""
    return read_json_object(directory / phases_name(rank))


def traced_step_times(directory: Path, world_size: int) -> tuple[dict[int, list[float]], str]:
    """Each rank's traced step times from its `rank<k>.phases.json` (absent or unreadable
    files are left out) and the step timer they name."""
    times: dict[int, list[float]] = {}
    timing = "unknown"
    for rank in range(world_size):
        record = read_phase_record(directory, rank)
        if record is None:
            continue
        steps = record.get("step_s")
        if isinstance(steps, list) and steps:
            times[rank] = [float(s) for s in steps if isinstance(s, (int, float))]
            timing = str(record.get("timing", timing))
    return times, timing


def timer_diagnosis(directory: Path, cell: CellResult) -> Diagnosis | None:
    """The phase timers' diagnosis of the profiled run's measured windows: the result's own
    where rank 0 wrote it, else (a result an earlier analysis rewrote with its diagnosis)
    rebuilt from steps.jsonl beside it as rank 0 built it; None where the run has none
    (FSDP and model-parallel cells have no step split) or the steps are not there."""
    stored = cell.diagnosis
    if stored is None:
        return None
    if stored.source == "phase timers" and not any(
        c.check == "inflation" for c in stored.cross_checks
    ):
        return stored
    records = read_step_records(ProfileRun(directory).steps_path)
    if not records:
        return None
    table, no_sync = steps_table(records)
    if table.empty:
        return None
    rebuilt = diagnose(
        RunEvidence(
            timers=TimerEvidence(
                steps=table,
                no_sync=no_sync,
                calibration=calibration_table(
                    {r.rank: r.calibration for r in cell.ranks},
                    work_equal(cell.cell),
                    cell.cell.ranks_per_gpu,
                ),
            ),
            device_type=cell.cell.device,
            backend=cell.cell.backend,
            strategy=cell.cell.strategy,
            nodes=cell.cell.nodes,
            injected_ranks=frozenset(d.rank for d in cell.injected_delays),
        )
    )
    if rebuilt is None:
        return None
    return with_caveat(rebuilt, busy_caveat(cell.telemetry))  # as rank 0 added it


def steps_table(records: list[dict[str, object]]) -> tuple[pd.DataFrame, NoSyncSteps | None]:
    """The step records as the phase table rank 0 diagnoses (window, step, rank, step_s, the
    phases, cpu_wait, cpu_time, comm holds; NaN where not measured) and the no_sync windows'
    steps per rank (None without)."""
    rows = []
    no_sync: dict[int, list[float]] = {}
    for record in records:
        rank = record.get("rank")
        if not isinstance(rank, int):
            continue
        if record.get("window") == "no_sync":
            no_sync.setdefault(rank, []).append(_seconds(record.get("time_s")))
            continue
        row = {
            "window": record.get("repeat", 0),
            "step": record.get("step"),
            "rank": rank,
            "step_s": _seconds(record.get("time_s")),
        }
        for column in STEP_RECORD_TIMES:
            row[column] = _seconds(record.get(seconds_column(column)))
        rows.append(row)
    columns = ["window", "step", "rank", "step_s", *STEP_RECORD_TIMES]
    table = pd.DataFrame(rows, columns=columns)
    ranks = set(table["rank"]) if not table.empty else set()
    complete = bool(no_sync) and set(no_sync) == ranks
    return table, NoSyncSteps(no_sync) if complete else None


def _seconds(value: object) -> float:
    """A recorded figure as a float; NaN where it is missing or not a number."""
    return float(value) if isinstance(value, (int, float)) else float("nan")
