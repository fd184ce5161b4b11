"""The reductions of every rank combined into the versioned profile analysis (`combine`:
`cross_rank.analyse`, then `profile_record.profile_analysis`). Pure: reading the traces and
writing analysis.json are torchscale/orchestration/profiling/analyze.py's.
"""

from __future__ import annotations

import pandas as pd

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.offline.analysis.diagnosis.inflation import TracedInflation
from torchscale.offline.analysis.profile.cross_rank import analyse
from torchscale.offline.analysis.profile.profile_record import profile_analysis
from torchscale.offline.analysis.trace.reduction import RankReduction


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
