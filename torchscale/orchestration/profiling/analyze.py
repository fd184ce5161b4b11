"""The whole trace analysis of a directory: read one rank at a time, reduce it, combine.

Memory stays bounded by one rank: each rank's trace is parsed, reduced to small per-step tables
(`analysis.trace.reduce.reduce_rank`) and dropped before the next rank is read; the reductions
are combined by `analysis.profile.combine.combine`. This module does the reading and the writing.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from torchscale.contracts.atomic import write_text_atomic
from torchscale.contracts.errors import ResultsError, TraceInputError, describe_os_error
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.offline.analysis.profile.combine import combine
from torchscale.offline.analysis.trace.reduce import RankReduction, reduce_rank
from torchscale.offline.results.profile_windows import read_phase_record, timer_diagnosis
from torchscale.offline.traces.rank_trace import RankTrace
from torchscale.orchestration.profiling.overhead import capture_overhead

log = logging.getLogger(__name__)


def _rank_traces(directory: Path) -> Iterator[RankTrace]:
    """Kineto traces (one per rank), or the ranks of Nsight Systems SQLite exports."""
    from torchscale.offline.traces.discover import find_traces, read_rank_traces

    if not directory.exists():
        raise TraceInputError(f"{directory}: no such directory")
    if not directory.is_dir():
        raise TraceInputError(
            f"{directory}: not a directory (give the folder that holds the traces)"
        )
    exports = sorted(directory.glob("*.sqlite"))
    if exports and not find_traces(directory):
        from torchscale.offline.traces.nsys_sqlite import read_nsys_sqlite

        for export in exports:
            yield from read_nsys_sqlite(export)
        return
    yield from read_rank_traces(directory)


def analyze_directory(
    directory: Path,
    *,
    target: str = "sync_stalls",
    tool: str | None = None,
    strategy: str | None = None,
    cell: CellResult | None = None,
) -> ProfileAnalysis:
    """Analyse every rank's trace in `directory` (see the module docstring for memory).
    `cell`: the profiled run's own result: its phase-timer step model (`timer_diagnosis`)
    becomes a cross-check of the trace model, or its headline where the traced steps ran
    longer than the measured windows beyond the noise (`overhead.capture_overhead`)."""
    started = time.perf_counter()
    inflation = None
    notes: list[Finding] = []
    # the run's no_sync window is a fact of its measured windows, not of the traces: the
    # analysis' diagnosis carries it as the run's result does, so the two are one diagnosis
    window = cell.diagnosis.no_sync if cell is not None and cell.diagnosis is not None else None
    if cell is not None:
        overhead, _ = capture_overhead(cell, directory, tool or "torch")
        inflation = overhead.inflation if overhead is not None else None
        notes += [overhead.note()] if overhead is not None else []
        cell = cell.model_copy(update={"diagnosis": timer_diagnosis(directory, cell)})
    reductions: dict[int, RankReduction] = {}
    for trace in _rank_traces(directory):
        reductions[trace.rank] = reduce_rank(trace)
        del trace
        gc.collect()  # the events of a big rank must be gone before the next is parsed
    if not reductions:
        raise TraceInputError(f"{directory}: no trace found (.json, .json.gz or nsys .sqlite)")
    analysis = combine(
        reductions,
        cpu_wait=traced_cpu_waits(directory, sorted(reductions)),
        source=str(directory),
        target=target,
        tool=tool,
        strategy=strategy,
        cell=cell,
        inflation=inflation,
    )
    analysis.notes += [n for n in notes if n not in analysis.notes]
    if analysis.diagnosis is not None and analysis.diagnosis.no_sync is None and window:
        analysis.diagnosis = analysis.diagnosis.model_copy(update={"no_sync": window})
    analysis.analysis_s = round(time.perf_counter() - started, 3)
    return analysis


def traced_cpu_waits(directory: Path, ranks: list[int]) -> pd.DataFrame | None:
    """(rank, step, cpu_wait, cpu_time) of the traced steps: each rank's wait for a CPU and
    time on a CPU per step from its `rank<k>.phases.json` beside the trace (the profiled run
    writes it); None unless every rank has the wait (traces of other jobs, runs before schema
    4, not Linux). cpu_time is NaN where a record lacks it (written before it was measured)."""
    rows = []
    for rank in ranks:
        record = read_phase_record(directory, rank)
        if record is None:
            return None
        waits, steps = record.get("cpu_wait_s"), record.get("steps")
        if not isinstance(waits, list) or not isinstance(steps, list) or len(waits) != len(steps):
            return None
        times = record.get("cpu_time_s")
        if not isinstance(times, list) or len(times) != len(steps):
            times = [None] * len(steps)
        rows += [
            (rank, int(step), float(wait), _seconds(on_cpu))
            for step, wait, on_cpu in zip(steps, waits, times, strict=True)
            if isinstance(wait, (int, float)) and isinstance(step, int)
        ]
    columns = ["rank", "step", "cpu_wait", "cpu_time"]
    return pd.DataFrame(rows, columns=columns).astype({"cpu_time": "float64"}) if rows else None


def _seconds(value: object) -> float:
    """A recorded figure as a float; NaN where it is missing or not a number."""
    return float(value) if isinstance(value, (int, float)) else float("nan")


def write_analysis(analysis: ProfileAnalysis, path: Path, *, required: bool = True) -> Path | None:
    """analysis.json, atomically. A directory we may only read (shared traces) is not an error
    unless the caller asked for this path (`required`)."""
    try:
        return write_text_atomic(path, analysis.model_dump_json(indent=2))
    except OSError as exc:
        if required:
            raise ResultsError(f"cannot write {path}: {describe_os_error(exc)}") from None
        log.info("analysis not saved to %s: %s", path, describe_os_error(exc))
        return None
