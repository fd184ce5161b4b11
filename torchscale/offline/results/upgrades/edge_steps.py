"""Step times of results that timed each window's first step (schema 15 or older).

Up to schema 15 a window timed the step right after its edge work (gc.collect, the telemetry
sampler's start, a synchronize and a barrier), and that step was systematically slower (1.35-1.6x
the median on an H100), so it inflated the step-time CV. Today's windows run it untimed
(`CellResult.window_edge_steps`). One rule reads both alike: where the steps file is there, an
older result's step-time statistics (pooled, per rank, the percentile intervals, the
high-variance warning, each rank's no_sync compute time) are recomputed without step 0 of each
window, and the steps table leaves those steps out too; the result says so in
`unavailable["step_time"]`. Throughput is the windows' wall time and stays as measured; the
stored step model (the diagnosis) too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from torchscale.contracts.schema.cell_result import CellResult, CellWarning, StepTimeStats
from torchscale.contracts.thresholds import CV_WARN_THRESHOLD
from torchscale.offline.analysis.stats import step_stats

# the newest schema whose windows timed the first step after their edge work
LAST_TIMED_EDGE = 15
EDGE_NOTE = "first step of each window excluded: it followed the window's edge work"
# the warnings this rule words again: the high variance it judges anew, and its own
REPLACED = ("warning.step_time_cv", "warning.edge_steps_dropped")


def timed_edge(version: int | None) -> bool:
    """A result of this schema version timed each window's first step."""
    return version is not None and version <= LAST_TIMED_EDGE


def is_edge_step(record: Mapping[str, Any]) -> bool:
    """The step a window ran right after its edge work (step 0 of every window)."""
    return record.get("step") == 0


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


def _sync_times(
    records: Iterable[Mapping[str, Any]], rank: int | None = None, window: str = "sync"
) -> list[float]:
    return [
        float(r["time_s"])
        for r in records
        if r.get("window") == window
        and not is_edge_step(r)
        and (rank is None or r.get("rank") == rank)
    ]


def _warnings(warnings: Sequence[CellWarning], pooled: StepTimeStats) -> list[CellWarning]:
    """The high-variance warning as today's worker words it, judged on the steps kept, and
    the warning that says the steps were read so."""
    kept = [w for w in warnings if w.finding is None or w.finding.code not in REPLACED]
    if pooled.cv > CV_WARN_THRESHOLD:
        figures = {"cv": pooled.cv, "threshold": CV_WARN_THRESHOLD}
        kept.append(CellWarning.of("high variance", "warning.step_time_cv", figures))
    # said once among the cell's warnings, so every surface that lists them tells the reader
    kept.append(CellWarning.of("other", "warning.edge_steps_dropped", {}))
    return kept


def without_edge_steps(result: CellResult, records: Sequence[Mapping[str, Any]]) -> CellResult:
    """`result` with its step-time statistics recomputed from its sync windows' steps less
    step 0 of each window; as it was where no step is left."""
    pooled_times = _sync_times(records)
    if result.step_time is None or len(pooled_times) < 2:
        return result
    from torchscale.offline.analysis.uncertainty import percentile_of_steps

    pooled = step_stats(pooled_times)
    ranks = []
    for rank in result.ranks:
        update: dict[str, Any] = {}
        if times := _sync_times(records, rank.rank):
            update["step_time"] = step_stats(times)
        if rank.compute_time is not None and (alone := _sync_times(records, rank.rank, "no_sync")):
            update["compute_time"] = step_stats(alone)  # its no_sync window, by the same rule
        ranks.append(rank.model_copy(update=update))
    update = {
        "step_time": pooled,
        "ranks": ranks,
        "warnings": _warnings(result.warnings, pooled),
        "unavailable": {**result.unavailable, "step_time": EDGE_NOTE},
    }
    if result.intervals is not None:
        update["intervals"] = result.intervals.model_copy(
            update={f"step_p{q}_s": percentile_of_steps(pooled_times, q) for q in (50, 95, 99)}
        )
    return result.model_copy(update=update)


def with_edge_rule(result: CellResult, version: int | None, cell_path: Path) -> CellResult:
    """A result that timed each window's first step, recomputed without it where its steps
    file is there; any other result as read."""
    if not timed_edge(version) or result.step_time is None:
        return result
    from torchscale.offline.results.directory_layout import ResultLayout

    # <root>/steps/<cell_id>.jsonl, beside cells/
    records = read_step_records(ResultLayout(cell_path.parent.parent).steps_path(result.cell.id))
    return without_edge_steps(result, records) if records else result
