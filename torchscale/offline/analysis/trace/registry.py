"""The per-rank trace reducers, listed once: `reduce.reduce_rank` runs every one of them, in the
order listed (so a reducer's notes follow those of the reducers above it), over each rank's
trace and keeps what it returns as `RankReduction.tables[name]`. What a reducer is given and may
return, and how to add one (its module and one line in `REDUCERS`): docs/architecture.md, "A
trace analysis".
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.offline.analysis.trace import breakdown, collective_matching, idle, kernels, steps
from torchscale.offline.traces.rank_trace import RankTrace

# (the rank's trace, its step table, its notes) -> the rank's small table
Reducer = Callable[[RankTrace, pd.DataFrame, list[Finding]], object]


def phases(trace: RankTrace, step_frame: pd.DataFrame, notes: list[Finding]) -> pd.DataFrame:
    """Per step and phase: its length and the rank's busy time in it (`steps.phase_table`)."""
    return steps.phase_table(trace.events, step_frame)


def rank_breakdown(
    trace: RankTrace, step_frame: pd.DataFrame, notes: list[Finding]
) -> pd.DataFrame:
    """Per complete step: compute, communication, overlap, idle (`breakdown.rank_breakdown`)."""
    return breakdown.rank_breakdown(trace.events, step_frame)


def idle_base(trace: RankTrace, step_frame: pd.DataFrame, notes: list[Finding]) -> idle.IdleBase:
    """Per complete step: the rank's part of the idle taxonomy (`idle.idle_reducer`); its
    CPU-rank note is left out where the trace says the rank is a CPU one."""
    base = idle.idle_reducer(trace.events, step_frame)
    if trace.device_type != "cpu":
        notes += base.notes
    return base


def collectives(trace: RankTrace, step_frame: pd.DataFrame, notes: list[Finding]) -> pd.DataFrame:
    """The collectives the rank ran, numbered per group (`collective_matching`)."""
    return collective_matching.collective_table(trace.events, step_frame, notes)


def top_kernels(trace: RankTrace, step_frame: pd.DataFrame, notes: list[Finding]) -> pd.DataFrame:
    """The rank's largest device kernels in its complete steps (`kernels.top_kernels`)."""
    return kernels.top_kernels(trace.events, step_frame)


# name -> reducer: the one list of per-rank trace analyses (`RankReduction.tables[name]`)
REDUCERS: dict[str, Reducer] = {
    "phases": phases,
    "breakdown": rank_breakdown,
    "idle": idle_base,
    "collectives": collectives,
    "kernels": top_kernels,
}
