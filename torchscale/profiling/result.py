"""The versioned trace analysis (`profile/<name>/analysis.json`), read by reports.

Every figure that the traces cannot give is null with the reason in `unavailable`; what was odd
or missing in the input is a line in `notes`. Times are microseconds unless a name says
otherwise; percentages are of the cycle (median step time) unless a name says otherwise.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# 1: first version (issue 7).
ANALYSIS_SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TraceFile(_Model):
    path: str
    rank: int
    rank_source: str = Field(description="distributedInfo | file name | nsys process order")
    format: str = Field(description="kineto | nsys")
    bytes: int = Field(description="uncompressed bytes parsed")


class RankFigures(_Model):
    """One rank, medians over its complete steps."""

    rank: int
    steps: int = Field(description="complete steps analysed")
    step_us: float | None
    compute_us: float | None
    comm_us: float | None
    exposed_comm_us: float | None
    overlap_pct: float | None = Field(description="HTA's: computing while communicating / comm")
    idle_us: float | None
    data_wait_us: float | None
    sync_stall_us: float | None = Field(
        description="time waiting for peers in collectives with nothing else to do"
    )
    sync_stall_pct: float | None
    transfer_us: float | None = Field(description="collective time less the wait for peers")
    host_wait_us: float | None = Field(description="GPU idle while the host had not launched")
    other_idle_us: float | None
    phases_busy_us: dict[str, float] = Field(
        default_factory=dict, description="busy time per phase (data/forward/backward/optimizer)"
    )


class OpFigures(_Model):
    op: str
    instances: int = Field(description="matched instances (one per group and index)")
    transfer_us: float = Field(description="sum of per-instance transfer (min over ranks)")
    wait_us: float = Field(description="sum over ranks and instances of the wait for peers")


class ClockOffset(_Model):
    rank: int
    offset_us: float = Field(description="this rank's clock minus the reference rank's")
    uncertainty_us: float
    samples: int


class StragglerFigures(_Model):
    rank: int
    last_arrival_share: float = Field(description="share of collectives it arrived last at")
    mean_lateness_us: float | None
    phase: str | None = Field(description="the phase whose busy time makes it late")
    phase_gap_us: float | None
    phase_gap_pct: float | None = Field(description="the gap as % of the cycle")
    shares: dict[str, float] = Field(default_factory=dict, description="rank -> last share")


class WhatIf(_Model):
    rank: int
    saved_us_per_step: float
    speedup_pct: float = Field(description="if this rank ran at the median")


class FindingFigures(_Model):
    title: str
    category: str
    cost_pct: float = Field(description="share of cycle time, %")
    evidence: list[str] = Field(default_factory=list)
    recommendation: str


class StepStall(_Model):
    """One cell of the rank x step stall heatmap."""

    rank: int
    step: int
    step_us: float
    stall_us: float


class ProfileAnalysis(_Model):
    kind: Literal["torchscale.profile_analysis"] = "torchscale.profile_analysis"
    schema_version: Literal[1] = 1
    torchscale_version: str
    target: str = Field(description="sync_stalls | comm | compute | memory | all")
    source: str = Field(description="the directory analysed")
    tool: str = Field(description="torch | nsys: which profiler wrote the traces")
    files: list[TraceFile] = Field(default_factory=list)
    world_size: int | None = Field(description="as the traces declare it")
    ranks_analysed: int
    backend: str | None
    device_type: str | None
    cycle_us: float | None = Field(description="median step time over ranks")
    sync_stall_pct: float | None = Field(
        description="time ranks wait for peers with nothing else to do (waits not hidden "
        "behind their own compute), summed over ranks / their summed step time, %"
    )
    collective_wait_pct: float | None = Field(
        default=None,
        description="all waiting for peers inside collectives, hidden behind compute or not, "
        "over step time, %",
    )
    exposed_comm_pct: float | None
    overlap_pct: float | None
    ranks: list[RankFigures] = Field(default_factory=list)
    ops: list[OpFigures] = Field(default_factory=list)
    matched_collectives: int = 0
    mismatches: list[str] = Field(default_factory=list)
    clock: list[ClockOffset] = Field(default_factory=list)
    arrival_agreement: float | None = Field(
        default=None, description="share where last-by-arrival equals last-by-duration"
    )
    straggler: StragglerFigures | None = None
    whatif: list[WhatIf] = Field(default_factory=list)
    findings: list[FindingFigures] = Field(default_factory=list)
    stall_by_step: list[StepStall] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    unavailable: dict[str, str] = Field(default_factory=dict)
    analysis_s: float | None = Field(default=None, description="wall time of the analysis")
