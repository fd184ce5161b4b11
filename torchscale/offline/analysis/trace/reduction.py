"""What is kept of one rank's trace once its events are dropped (`RankReduction`): the record
`reduce.reduce_rank` writes and the cross-rank analyses (`profile/cross_rank.analyse`) and
the stored profile analysis (`profile/profile_record.profile_analysis`) read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.profile_analysis import TraceFile
from torchscale.offline.analysis.trace.idle import IdleBase


@dataclass
class RankReduction:
    """What is kept of one rank once its events are dropped: its step table and, by name,
    the table of every reducer in `registry.REDUCERS` (`tables`)."""

    file: TraceFile
    device_type: str
    backend: str | None
    world_size: int | None
    steps: pd.DataFrame  # steps.step_table(...).table: step, start, end, dur, partial
    tables: dict[str, object] = field(default_factory=dict)  # reducer name -> its table
    notes: list[Finding] = field(default_factory=list)

    # the tables `combine` reads, by their registry names
    @property
    def phases(self) -> pd.DataFrame:
        return cast(pd.DataFrame, self.tables["phases"])

    @property
    def breakdown(self) -> pd.DataFrame:
        return cast(pd.DataFrame, self.tables["breakdown"])

    @property
    def idle(self) -> IdleBase:
        return cast(IdleBase, self.tables["idle"])

    @property
    def collectives(self) -> pd.DataFrame:
        return cast(pd.DataFrame, self.tables["collectives"])

    @property
    def kernels(self) -> pd.DataFrame:  # name, calls, total_us
        return cast(pd.DataFrame, self.tables["kernels"])
