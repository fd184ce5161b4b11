"""One rank's trace reduced to small per-step tables (`reduce_rank`, which runs every reducer
of registry.py), and the reductions of every rank combined into the versioned profile analysis
(`combine`: `cross_rank.analyse`, then `profile_record.profile_analysis`). Pure: reading the
traces and writing analysis.json are torchscale/orchestration/profiling/analyze.py's. Only the
cross-rank analyses see every rank, and they see the small tables only.
"""

from __future__ import annotations

import pandas as pd

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis, TraceFile
from torchscale.offline.analysis.diagnosis.inflation import TracedInflation
from torchscale.offline.analysis.trace import registry, steps
from torchscale.offline.analysis.trace.cross_rank import analyse
from torchscale.offline.analysis.trace.profile_record import profile_analysis, share_pct
from torchscale.offline.analysis.trace.reduction import RankReduction
from torchscale.offline.traces.rank_trace import RankTrace


def reduce_rank(trace: RankTrace) -> RankReduction:
    """One rank's small tables (pure over its events): its step table, then every registered
    reducer over it, in the registry's order."""
    found = steps.step_table(trace.events)
    local_notes: list[str] = list(trace.notes) + list(found.notes)
    tables = {
        name: reducer(trace, found.table, local_notes)
        for name, reducer in registry.REDUCERS.items()
    }
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
        steps=found.table,
        tables=tables,
        notes=[f"rank {trace.rank}: {note}" for note in dict.fromkeys(local_notes)],
    )


def combine(
    reductions: dict[int, RankReduction],
    *,
    source: str,
    cpu_wait: pd.DataFrame | None = None,
    target: str = "sync_stalls",
    tool: str | None = None,
    strategy: str | None = None,
    cell: CellResult | None = None,
    inflation: TracedInflation | None = None,
) -> ProfileAnalysis:
    """The versioned profile analysis of the per-rank reductions: the cross-rank analyses
    (`cross_rank.analyse`, which says what `cpu_wait`, `strategy`, `cell` and `inflation`
    add), stored as `profile_record.profile_analysis` builds it (`source`, `target`, `tool`)."""
    found = analyse(
        reductions, cpu_wait=cpu_wait, strategy=strategy, cell=cell, inflation=inflation
    )
    return profile_analysis(found, source=source, target=target, tool=tool)


__all__ = ["RankReduction", "combine", "reduce_rank", "share_pct"]
