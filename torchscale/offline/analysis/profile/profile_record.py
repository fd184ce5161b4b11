"""The stored profile analysis (the versioned `ProfileAnalysis` schema) built from what the
cross-rank analyses found (`cross_rank.TraceAnalyses`): every figure it writes is a field of the
schema, read off the run's one diagnosis where the diagnosis answers the question, so a stored
figure never gives a second answer. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from torchscale import __version__
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.profile_analysis import (
    ClockOffset,
    OpFigures,
    ProfileAnalysis,
    RankFigures,
    StepStall,
)
from torchscale.contracts.wording.profile import coded, distinct
from torchscale.offline.analysis.diagnosis import traces as step_model
from torchscale.offline.analysis.profile.cross_rank import TraceAnalyses
from torchscale.offline.analysis.trace import kernels
from torchscale.offline.analysis.trace.reduction import RankReduction


def profile_analysis(
    found: TraceAnalyses, *, source: str, target: str = "sync_stalls", tool: str | None = None
) -> ProfileAnalysis:
    """The stored analysis of one profile (`target` splits the findings, `tool` names the
    profiler: by default nsys when every trace is an nsys export, else torch)."""
    reductions, ranks, first = found.reductions, found.ranks, found.first
    matched, model, inputs, diagnosis = found.matched, found.model, found.inputs, found.diagnosis
    arrival, arrivals, offsets = found.arrival, found.arrivals, found.offsets
    notes = list(found.notes)
    usable = matched.usable
    unavailable: dict[str, Finding] = {}
    formats = {reductions[r].file.format for r in ranks}
    # the headline figures (sync stall, exposed communication, straggler, what-if) are the
    # diagnosis' own: read by offline/results/profile_figures.py, never stored beside it
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
        diagnosis=diagnosis,
        collective_wait_pct=found.raw_wait.overall_pct,
        overlap_pct=None,
        matched_collectives=0 if usable.empty else len(usable.drop_duplicates(["group", "index"])),
        mismatches=list(matched.mismatches),
    )
    if diagnosis is None:
        unavailable["diagnosis"] = coded(model.reason or "profile.no_step_model")
    if analysis.device_type not in (None, "cpu"):
        analysis.memory_copy_share = model.memory
    analysis.clock = [
        ClockOffset(
            rank=int(row.rank),
            offset_us=float(row.offset_us),
            uncertainty_us=float(row.uncertainty_us),
            samples=int(row.samples),
        )
        for row in offsets.table.itertuples()
    ]
    analysis.arrival_agreement = arrivals.agreement  # a share of instances: None or finite
    analysis.arrival_shares = {str(k): float(v) for k, v in arrival.shares.items()}
    analysis.ops = _op_figures(usable)
    analysis.ranks = [_rank_figures(r, reductions[r], model, found.taxonomy) for r in ranks]
    if model.waits_known:
        analysis.stall_by_step = [
            StepStall(
                rank=int(row.rank),
                step=int(row.step),
                step_us=float(row.step_s) * 1e6,
                stall_us=float(row.wait_for_peers) * 1e6,
            )
            for row in model.parts.itertuples()
        ]
    analysis.top_kernels = kernels.kernel_figures([reductions[r].kernels for r in ranks])
    # HTA's overlap over every rank and step: computing while communicating / communication
    analysis.overlap_pct = inputs.overlap_pct
    if inputs.overlap_pct is None:
        unavailable["overlap_pct"] = coded("profile.no_communication")
    notes += list(inputs.notes)
    # the target's findings are the diagnosis', split when read (`ProfileAnalysis.findings`)
    if target == "memory":
        unavailable.setdefault("memory.allocations", coded("profile.no_memory_events"))
    analysis.notes = list(distinct(notes))
    analysis.unavailable = unavailable
    return analysis


def _median(values: Iterable[float]) -> float | None:
    series = pd.Series(list(values), dtype="float64").dropna()
    return float(series.median()) if len(series) else None


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
    pairs = [(v, f.step_us) for f in figures if (v := getattr(f, column)) is not None and f.step_us]
    return float(100 * sum(a for a, _ in pairs) / sum(b for _, b in pairs)) if pairs else None


def _median_of(frame: pd.DataFrame, column: str) -> float | None:
    if column not in frame.columns or frame.empty:
        return None
    return _median(frame[column])


def _rank_figures(
    rank: int, reduction: RankReduction, model: step_model.StepModel, taxonomy: pd.DataFrame
) -> RankFigures:
    """One rank: HTA-style medians of its breakdown, the medians of its partition (the step
    model's own per-step figures, so they never overlap) and its parts with intervals."""
    table = reduction.breakdown
    phases = reduction.phases
    medians = phases.groupby("phase", observed=True)["busy_us"].median() if len(phases) else {}
    busy = {str(k): float(v) for k, v in medians.items()}
    split = taxonomy[taxonomy["rank"] == rank] if "rank" in taxonomy.columns else taxonomy
    parts = model.parts[model.parts["rank"] == rank] if not model.parts.empty else model.parts
    stall_us = _median(parts["wait_for_peers"] * 1e6) if len(parts) else None
    stall_pct = None
    if len(parts) and model.waits_known:
        shares = 100 * parts["wait_for_peers"] / parts["step_s"].where(parts["step_s"] > 0)
        stall_pct = _median(shares)
    return RankFigures(
        rank=rank,
        steps=len(table),
        step_us=_median_of(table, "step_us"),
        compute_us=_median_of(table, "compute_us"),
        comm_us=_median_of(table, "comm_us"),
        exposed_comm_us=_median_of(table, "exposed_comm_us"),
        overlap_pct=_median_of(table, "overlap_pct"),
        idle_us=_median_of(table, "idle_us"),
        data_wait_us=_median_of(split, "data_us"),
        sync_stall_us=stall_us if model.waits_known else None,
        sync_stall_pct=stall_pct,
        transfer_us=_median_of(split, "transfer_us"),
        host_wait_us=_median_of(split, "host_wait_us") if reduction.device_type != "cpu" else None,
        other_idle_us=_median_of(split, "other_idle_us"),
        phases_busy_us=busy,
        # one rank's parts are the diagnosis' own, stored there once
        parts=model.per_rank.get(rank, []) if len(model.per_rank) > 1 else [],
    )
