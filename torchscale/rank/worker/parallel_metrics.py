"""The `parallel` and `warmup` parts of a cell's result, from every rank's measurements.

Pure functions over the gathered RankMeasurements. Per pipeline rank, busy (the median time its
stage modules computed per step: torchscale/rank/parallel/busy.py) and bubble (1 - busy / its
median step), beside the schedule's theoretical bubble, which assumes equal stages and free
transfers: docs/strategies.md, "Pipeline: per-stage time and the bubble".
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING

from torchscale.contracts.schema.cell_result import ParallelMetrics, ProfiledComm, StageTime, Warmup
from torchscale.contracts.schema.diagnosis import Reason
from torchscale.contracts.wording.cell_reasons import coded
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.rank.worker.measure import RankMeasurement

if TYPE_CHECKING:  # imported by model-parallel cells only (model_parallel.py)
    from torchscale.rank.parallel.rank_layout import ParallelLayout


def stage_times(ranks: Sequence[RankMeasurement], layout: ParallelLayout) -> list[StageTime]:
    """Per pipeline rank: busy and step medians over the measured windows, and its bubble."""
    from torchscale.rank.parallel.rank_layout import stage_indices

    out = []
    for r in sorted(ranks, key=lambda m: m.rank):
        busy = [b for w in r.windows for b in (w.busy_s or [])]
        steps = [t for w in r.windows for t in w.step_s]
        if not busy or not steps:
            continue
        busy_s, step_s = statistics.median(busy), statistics.median(steps)
        bubble = max(0.0, 1.0 - busy_s / step_s) if step_s > 0 else 0.0
        out.append(
            StageTime(
                rank=r.rank,
                stages=stage_indices(layout, r.rank % layout.pp),
                busy_s=busy_s,
                step_s=step_s,
                bubble=bubble,
            )
        )
    return out


def parallel_metrics(
    spec: WorkerSpec, ranks: Sequence[RankMeasurement]
) -> tuple[ParallelMetrics | None, dict[str, Reason]]:
    """`parallel` of a tp/pp/hybrid cell (None for ddp and fsdp) and what it could not give."""
    shape = spec.cell.parallel
    if shape is None:
        return None, {}
    from torchscale.rank.parallel.rank_layout import theoretical_bubble
    from torchscale.rank.strategy_layouts import layout_of

    unavailable: dict[str, Reason] = {}
    layout = layout_of(spec.cell.strategy, shape, len(ranks))
    mesh, names = layout.mesh_shape()
    stages = stage_times(ranks, layout) if layout.uses_pp else []
    measured = statistics.fmean(s.bubble for s in stages) if stages else None
    slowest = max(stages, key=lambda s: s.busy_s).rank if stages else None
    if shape.pp > 1 and not stages:
        unavailable["parallel.bubble_measured"] = coded("unavailable.no_stage_busy_time")
    comm = None
    if shape.tp > 1:
        comm, why = _profiled_comm(spec, ranks)
        if why is not None:
            unavailable["parallel.profiled_comm"] = why
    return ParallelMetrics(
        mesh_shape=list(mesh),
        mesh_dim_names=list(names),
        stages=stages,
        bubble_measured=measured,
        bubble_theoretical=theoretical_bubble(layout) if layout.uses_pp else None,
        slowest_stage_rank=slowest,
        profiled_comm=comm,
    ), unavailable


def _profiled_comm(
    spec: WorkerSpec, ranks: Sequence[RankMeasurement]
) -> tuple[ProfiledComm | None, Reason | None]:
    """A tp cell's profiled communication, or why there is none."""
    if spec.profile is not None:
        return None, coded("unavailable.profiled_launch")
    from torchscale.rank.worker.comm_probe import profiled_comm

    return profiled_comm({r.rank: r.comm_probe for r in ranks})


def warmup_record(
    spec: WorkerSpec, ranks: Sequence[RankMeasurement]
) -> tuple[Warmup, dict[str, Reason]]:
    """Each warm-up step's slowest rank, and the slowest rank's compile time (or why a
    compiled cell has none)."""
    counts = {len(r.warmup_s) for r in ranks}
    steps = [max(r.warmup_s[i] for r in ranks) for i in range(min(counts))] if counts else []
    compiles = [r.compile_s for r in ranks if r.compile_s is not None]
    warmup = Warmup(step_s=steps, compile_s=max(compiles) if compiles else None)
    if spec.training.compile and warmup.compile_s is None:
        return warmup, {"warmup.compile_s": coded("unavailable.compile_time_unread")}
    return warmup, {}
