"""One rank's trace reduced to small per-step tables (`reduce_rank`, which runs every reducer
of registry.py). Pure. Only the cross-rank analyses (offline/analysis/profile/, which combine
the reductions) see every rank, and they see the small tables only.
"""

from __future__ import annotations

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.profile_analysis import TraceFile
from torchscale.contracts.wording.profile import distinct, on_rank
from torchscale.offline.analysis.trace import registry, steps
from torchscale.offline.analysis.trace.reduction import RankReduction
from torchscale.offline.traces.rank_trace import RankTrace


def reduce_rank(trace: RankTrace) -> RankReduction:
    """One rank's small tables (pure over its events): its step table, then every registered
    reducer over it, in the registry's order."""
    found = steps.step_table(trace.events)
    local_notes: list[Finding] = list(trace.notes) + list(found.notes)
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
        notes=[on_rank(note, trace.rank) for note in distinct(local_notes)],
    )


__all__ = ["RankReduction", "reduce_rank"]
