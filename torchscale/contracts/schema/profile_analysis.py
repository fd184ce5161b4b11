"""The versioned trace analysis (`profile/<name>/analysis.json`), read by reports.

Every figure that the traces cannot give is null with the reason in `unavailable`; what was odd
or missing in the input is a line in `notes`. Times are microseconds unless a name says
otherwise; percentages are of the cycle (median step time) unless a name says otherwise.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from torchscale.contracts.schema.cell_result import Diagnosis, Estimate, Finding, StepPart

# what each version added and how older files are read: docs/results.md, "Profile analysis
# versions"
ANALYSIS_SCHEMA_VERSION = 7
V1_ATTRIBUTION = (
    "analysis of schema 1: no step model (attribution); its stall, exposed communication, "
    "straggler and what-if figures come from separate methods and may disagree with each other"
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TraceFile(_Model):
    path: str
    rank: int
    rank_source: str = Field(description="distributedInfo | file name | nsys process order")
    format: str = Field(description="kineto | nsys")
    bytes: int = Field(description="uncompressed bytes parsed")


class RankFigures(_Model):
    """One rank, medians over its complete steps (HTA-style detail figures), and its parts of
    the step model (means with intervals, `parts`)."""

    rank: int
    steps: int = Field(description="complete steps analysed")
    step_us: float | None
    compute_us: float | None
    comm_us: float | None
    exposed_comm_us: float | None
    overlap_pct: float | None = Field(description="HTA's: computing while communicating / comm")
    idle_us: float | None
    data_wait_us: float | None = Field(
        description="data-phase time with nothing computing or communicating (schema 1: the "
        "whole data phase, compute inside it included)"
    )
    sync_stall_us: float | None = Field(
        description="time waiting for peers in collectives with nothing else to do"
    )
    sync_stall_pct: float | None
    transfer_us: float | None = Field(
        description="exposed collective time less the wait for peers (the exposed transfer)"
    )
    host_wait_us: float | None = Field(description="GPU idle while the host had not launched")
    other_idle_us: float | None
    phases_busy_us: dict[str, float] = Field(
        default_factory=dict, description="busy time per phase (data/forward/backward/optimizer)"
    )
    parts: list[StepPart] = Field(
        default_factory=list,
        description="schema 2: this rank's parts of the step model over the model's steps "
        "(seconds per step and shares of its own step, 95 % intervals)",
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
    """Schema 2: set only when the step model's verdict names a straggler (its rank, phase and
    gap); the arrival figures are its cross-check."""

    rank: int
    last_arrival_share: float | None = Field(
        description="share of collectives it arrived last at; null: none matched"
    )
    mean_lateness_us: float | None
    phase: str | None = Field(description="the phase whose busy time makes it late")
    phase_gap_us: float | None
    phase_gap_pct: float | None = Field(description="the gap as % of the mean step")
    shares: dict[str, float] = Field(default_factory=dict, description="rank -> last share")


class WhatIf(_Model):
    """Schema 2: the straggler candidate's what-if, an upper bound capped by the other ranks'
    wait for peers."""

    rank: int
    saved_us_per_step: float
    speedup_pct: float = Field(description="at most this % of the mean step would go")
    share: Estimate | None = Field(
        default=None, description="schema 2: the same share with its 95 % interval"
    )


FindingFigures = Finding  # the diagnosis' findings (schema 3: one class for both files)


class KernelFigures(_Model):
    """A device kernel by total time over the analysed ranks and complete steps."""

    name: str
    calls: int
    total_us: float
    share_of_compute: float = Field(description="of all compute-kernel time, 0-1")


class StepStall(_Model):
    """One cell of the rank x step stall heatmap."""

    rank: int
    step: int
    step_us: float
    stall_us: float


class ProfileAnalysis(_Model):
    kind: Literal["torchscale.profile_analysis"] = "torchscale.profile_analysis"
    schema_version: Literal[1, 2, 3, 4, 5, 6, 7] = 7
    torchscale_version: str
    target: str = Field(
        description="sync_stalls | comm | compute | memory | all: what the findings focus on"
    )
    source: str = Field(description="the directory analysed")
    tool: str = Field(description="torch | nsys: which profiler wrote the traces")
    files: list[TraceFile] = Field(default_factory=list)
    world_size: int | None = Field(description="as the traces declare it")
    ranks_analysed: int
    backend: str | None
    device_type: str | None
    cycle_us: float | None = Field(description="median step time over ranks")
    diagnosis: Diagnosis | None = Field(
        default=None,
        description="schema 3: the one diagnosis of the run (schema 2: attribution; the "
        "reason when null: unavailable['diagnosis']); schema 7: judged against the run's "
        "measured windows, the phase timers' split heading it where the profiler slowed the "
        "traced steps beyond the noise (the cross-check 'traced steps against the measured "
        "windows')",
    )
    sync_stall_pct: float | None = Field(
        description="time ranks wait for peers with nothing else to do (waits not hidden "
        "behind their own compute), % of the step: schema 2, the model's wait_for_peers share; "
        "null when unknown or not measurable above noise (the reason in unavailable)"
    )
    collective_wait_pct: float | None = Field(
        default=None,
        description="all waiting for peers inside collectives, hidden behind compute or not, "
        "over step time, %",
    )
    exposed_comm_pct: float | None = Field(
        description="schema 2: the model's exposed_transfer share, % (schema 1: all "
        "communication not hidden behind compute, waits included)"
    )
    overlap_pct: float | None = Field(
        description="HTA's: time computing while communicating / communication time, %"
    )
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
    findings: list[FindingFigures] = Field(
        default_factory=list, description="the target's findings, ranked for it"
    )
    other_findings: list[FindingFigures] = Field(
        default_factory=list, description="schema 2: findings the target leaves out, by cost"
    )
    top_kernels: list[KernelFigures] = Field(
        default_factory=list, description="schema 2: device kernels by total time (GPU traces)"
    )
    memory_copy_share: Estimate | None = Field(
        default=None,
        description="schema 2: device memcpy/memset time not under a kernel, share of the step "
        "(part of the model's compute); null on CPU ranks",
    )
    stall_by_step: list[StepStall] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    unavailable: dict[str, str] = Field(default_factory=dict)
    analysis_s: float | None = Field(default=None, description="wall time of the analysis")

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """Older files stay readable: schema 1 has no step model (said in `unavailable`);
        schema 2's attribution is read as a diagnosis decided by the traces."""
        if not isinstance(data, dict):
            return data
        if data.get("schema_version") == 1:
            unavailable = dict(data.get("unavailable") or {})
            unavailable.setdefault("diagnosis", V1_ATTRIBUTION)
            data = {**data, "unavailable": unavailable}
        if data.get("schema_version") in (1, 2):
            data = dict(data)
            attribution = data.pop("attribution", None)
            unavailable = dict(data.get("unavailable") or {})
            if "attribution" in unavailable:
                unavailable["diagnosis"] = unavailable.pop("attribution")
            data["unavailable"] = unavailable
            if isinstance(attribution, dict):
                data["diagnosis"] = {**attribution, "source": "traces"}
        return data
