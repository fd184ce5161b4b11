"""The whole trace analysis of a directory: read one rank at a time, reduce it, combine.

Memory stays bounded by one rank: each rank's trace is parsed, reduced to small per-step tables
(steps, phase busy times, the local breakdown, its collectives) and dropped before the next rank
is read; only the cross-rank analyses (collective matching, clock offsets, stragglers, what-if,
findings) see every rank, and they see the small tables only.
"""

from __future__ import annotations

import gc
import logging
import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from torchscale import __version__
from torchscale.analysis.trace import breakdown, clock, collectives, findings, idle, steps
from torchscale.analysis.trace import straggler as straggler_analysis
from torchscale.analysis.trace import whatif as whatif_analysis
from torchscale.atomic import write_text_atomic
from torchscale.errors import ResultsError, TraceError, describe_os_error
from torchscale.profiling.result import (
    ClockOffset,
    FindingFigures,
    OpFigures,
    ProfileAnalysis,
    RankFigures,
    StepStall,
    StragglerFigures,
    TraceFile,
    WhatIf,
)
from torchscale.traces.model import RankTrace

log = logging.getLogger(__name__)


@dataclass
class RankReduction:
    """What is kept of one rank once its events are dropped."""

    file: TraceFile
    device_type: str
    backend: str | None
    world_size: int | None
    steps: pd.DataFrame  # steps.step_table(...).table: step, start, end, dur, partial
    phases: pd.DataFrame
    breakdown: pd.DataFrame
    collectives: pd.DataFrame
    idle: idle.IdleBase
    notes: list[str] = field(default_factory=list)


def reduce_rank(trace: RankTrace) -> RankReduction:
    """One rank's small tables (pure over its events)."""
    events = trace.events
    found = steps.step_table(events)
    step_frame = found.table
    local_notes: list[str] = list(trace.notes) + list(found.notes)
    activity = breakdown.activity(events)
    idle_base = idle.idle_reducer(events, step_frame, activity)
    local_notes += idle_base.notes if trace.device_type != "cpu" else []
    return RankReduction(
        file=TraceFile(
            path=str(trace.path),
            rank=trace.rank,
            rank_source=trace.rank_source,
            format=trace.source_format,
            bytes=trace.bytes_read,
        ),
        device_type=trace.device_type,
        backend=trace.backend,
        world_size=trace.world_size,
        steps=step_frame,
        phases=steps.phase_table(events, step_frame),
        breakdown=breakdown.rank_breakdown(events, step_frame),
        collectives=collectives.collective_table(events, step_frame, local_notes),
        idle=idle_base,
        notes=[f"rank {trace.rank}: {note}" for note in dict.fromkeys(local_notes)],
    )


def _rank_traces(directory: Path) -> Iterator[RankTrace]:
    """Kineto traces (one per rank), or the ranks of Nsight Systems SQLite exports."""
    from torchscale.traces.discover import find_traces, read_rank_traces

    if not directory.exists():
        raise TraceError(f"{directory}: no such directory")
    if not directory.is_dir():
        raise TraceError(f"{directory}: not a directory (give the folder that holds the traces)")
    exports = sorted(directory.glob("*.sqlite"))
    if exports and not find_traces(directory):
        from torchscale.traces.nsys_sqlite import read_nsys_sqlite

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
) -> ProfileAnalysis:
    """Analyse every rank's trace in `directory` (see the module docstring for memory)."""
    started = time.perf_counter()
    reductions: dict[int, RankReduction] = {}
    for trace in _rank_traces(directory):
        reductions[trace.rank] = reduce_rank(trace)
        del trace
        gc.collect()  # the events of a big rank must be gone before the next is parsed
    if not reductions:
        raise TraceError(f"{directory}: no trace found (.json, .json.gz or nsys .sqlite)")
    analysis = combine(
        reductions, source=str(directory), target=target, tool=tool, strategy=strategy
    )
    analysis.analysis_s = round(time.perf_counter() - started, 3)
    return analysis


def _median(values: Iterable[float]) -> float | None:
    series = pd.Series(list(values), dtype="float64").dropna()
    return float(series.median()) if len(series) else None


def combine(
    reductions: dict[int, RankReduction],
    *,
    source: str,
    target: str = "sync_stalls",
    tool: str | None = None,
    strategy: str | None = None,
) -> ProfileAnalysis:
    """The cross-rank analyses over the per-rank reductions (`strategy`, when known, picks
    the remedies of the findings)."""
    ranks = sorted(reductions)
    first = reductions[ranks[0]]
    notes = [note for rank in ranks for note in reductions[rank].notes]
    unavailable: dict[str, str] = {}
    formats = {reductions[r].file.format for r in ranks}
    device_types = {reductions[r].device_type for r in ranks}
    if len(device_types) > 1:
        notes.append(f"ranks report different devices: {sorted(device_types)}")
    steps_by_rank = {r: reductions[r].steps for r in ranks}
    matched = collectives.match_collectives({r: reductions[r].collectives for r in ranks})
    notes += list(matched.notes)
    exposed = {r: reductions[r].idle.exposed for r in ranks}
    # the stall: waiting for peers with nothing else to do (the wait hidden behind this rank's
    # own compute costs no time); the raw wait inside collectives is kept beside it
    stall = collectives.sync_stall(matched, steps_by_rank, exposed)
    raw_wait = collectives.sync_stall(matched, steps_by_rank)
    notes += list(stall.notes)
    offsets = clock.estimate_offsets(matched)
    arrivals = clock.arrivals(matched, offsets)
    found = straggler_analysis.attribute_straggler(
        matched, arrivals, {r: reductions[r].phases for r in ranks}, steps_by_rank
    )
    whatif = whatif_analysis.what_if(matched, steps_by_rank, exposed)
    taxonomy = idle.idle_taxonomy({r: reductions[r].idle for r in ranks}, matched)
    breakdowns = {r: reductions[r].breakdown for r in ranks}

    analysis = ProfileAnalysis(
        torchscale_version=__version__,
        target=target,
        source=source,
        tool=tool or ("nsys" if formats == {"nsys"} else "torch"),
        files=[reductions[r].file for r in ranks],
        world_size=first.world_size,
        ranks_analysed=len(ranks),
        backend=first.backend,
        device_type=first.device_type,
        cycle_us=None,
        sync_stall_pct=stall.overall_pct,
        collective_wait_pct=raw_wait.overall_pct,
        exposed_comm_pct=None,
        overlap_pct=None,
        matched_collectives=_instances(matched.usable),
        mismatches=list(matched.mismatches),
    )
    if stall.overall_pct is None:
        unavailable["sync_stall_pct"] = (
            "one rank in the input: waiting for peers needs the same collectives on two or "
            "more ranks"
            if len(ranks) < 2
            else "no collective could be matched across ranks"
        )
    analysis.clock = [
        ClockOffset(
            rank=int(row.rank),
            offset_us=float(row.offset_us),
            uncertainty_us=float(row.uncertainty_us),
            samples=int(row.samples),
        )
        for row in offsets.table.itertuples()
    ]
    analysis.arrival_agreement = _finite(arrivals.agreement)
    if found.straggler is not None:
        s = found.straggler
        analysis.straggler = StragglerFigures(
            rank=s.rank,
            last_arrival_share=s.share_last,
            mean_lateness_us=_finite(s.mean_lateness_us),
            phase=s.phase,
            phase_gap_us=_finite(s.phase_gap_us),
            phase_gap_pct=_finite(s.phase_gap_pct),
            shares={str(k): float(v) for k, v in found.shares.items()},
        )
    elif len(ranks) > 1:
        unavailable["straggler"] = found.reason or "no rank stands out"
    analysis.whatif = [
        WhatIf(
            rank=int(row.rank),
            saved_us_per_step=float(row.saved_us_per_step),
            speedup_pct=float(row.speedup_pct),
        )
        for row in whatif.itertuples()
        if _finite(float(row.speedup_pct)) is not None
    ]
    analysis.ops = _op_figures(matched.usable)
    analysis.ranks = [_rank_figures(r, reductions[r], stall.table, taxonomy) for r in ranks]
    analysis.stall_by_step = [
        StepStall(
            rank=int(row.rank),
            step=int(row.step),
            step_us=float(row.step_us),
            stall_us=float(row.stall_us),
        )
        for row in stall.table.itertuples()
    ]
    analysis.cycle_us = _median(f.step_us for f in analysis.ranks if f.step_us is not None)
    analysis.exposed_comm_pct = share_pct(analysis.ranks, "exposed_comm_us")
    inputs = findings.finding_inputs(
        breakdowns,
        idle=taxonomy,
        stall=stall,
        straggler=found,
        whatif=whatif,
        device_type=first.device_type,
        backend=first.backend,
        strategy=strategy,
    )
    # HTA's overlap over every rank and step: computing while communicating / communication
    analysis.overlap_pct = inputs.overlap_pct
    if inputs.overlap_pct is None:
        unavailable["overlap_pct"] = "no communication in the traced steps"
    notes += list(inputs.notes)
    analysis.findings = [
        FindingFigures(
            title=f.title,
            category=f.category,
            cost_pct=100 * f.cost_fraction,
            evidence=list(f.evidence),
            recommendation=f.recommendation,
        )
        for f in findings.rank_findings(inputs)
    ]
    analysis.notes = list(dict.fromkeys(notes))
    analysis.unavailable = unavailable
    return analysis


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _instances(usable: pd.DataFrame) -> int:
    if usable.empty:
        return 0
    return int(usable[["group", "index"]].drop_duplicates().shape[0])


def _op_figures(usable: pd.DataFrame) -> list[OpFigures]:
    """Per op: matched instances, their transfer (min over ranks, once per instance) and the
    waits of every rank."""
    if usable.empty:
        return []
    per_instance = usable.groupby(["op", "group", "index"], observed=True).agg(
        transfer_us=("transfer_us", "first"), wait_us=("wait_us", "sum")
    )
    per_op = per_instance.groupby(level="op", observed=True).agg(
        instances=("transfer_us", "size"),
        transfer_us=("transfer_us", "sum"),
        wait_us=("wait_us", "sum"),
    )
    return [
        OpFigures(
            op=str(op),
            instances=int(row.instances),
            transfer_us=float(row.transfer_us),
            wait_us=float(row.wait_us),
        )
        for op, row in per_op.sort_values("wait_us", ascending=False).iterrows()
    ]


def share_pct(figures: list[RankFigures], column: str) -> float | None:
    """Sum of a per-rank figure over the sum of step time, in % (None when absent)."""
    pairs = [
        (getattr(f, column), f.step_us)
        for f in figures
        if getattr(f, column) is not None and f.step_us
    ]
    if not pairs:
        return None
    return float(100 * sum(a for a, _ in pairs) / sum(b for _, b in pairs))


def _median_of(frame: pd.DataFrame, column: str) -> float | None:
    if column not in frame.columns or frame.empty:
        return None
    return _median(frame[column])


def _rank_figures(
    rank: int, reduction: RankReduction, stall: pd.DataFrame, taxonomy: pd.DataFrame
) -> RankFigures:
    table = reduction.breakdown
    phases = reduction.phases
    busy = (
        {
            str(k): float(v)
            for k, v in phases.groupby("phase", observed=True)["busy_us"].median().items()
        }
        if len(phases)
        else {}
    )
    stall_rank = stall[stall["rank"] == rank] if "rank" in stall.columns else stall
    split = taxonomy[taxonomy["rank"] == rank] if "rank" in taxonomy.columns else taxonomy
    return RankFigures(
        rank=rank,
        steps=len(table),
        step_us=_median_of(table, "step_us"),
        compute_us=_median_of(table, "compute_us"),
        comm_us=_median_of(table, "comm_us"),
        exposed_comm_us=_median_of(table, "exposed_comm_us"),
        overlap_pct=_median_of(table, "overlap_pct"),
        idle_us=_median_of(table, "idle_us"),
        data_wait_us=_median_of(table, "data_wait_us"),
        sync_stall_us=_median_of(stall_rank, "stall_us"),
        sync_stall_pct=_median_of(stall_rank, "stall_pct"),
        transfer_us=_median_of(split, "transfer_us"),
        host_wait_us=_median_of(split, "host_wait_us") if reduction.device_type != "cpu" else None,
        other_idle_us=_median_of(split, "other_idle_us"),
        phases_busy_us=busy,
    )


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
