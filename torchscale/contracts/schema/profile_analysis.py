"""The versioned trace analysis (`profile/<name>/analysis.json`), read by reports.

Every figure that the traces cannot give is null with the reason in `unavailable`; what was odd
or missing in the input is a finding in `notes`. Times are microseconds unless a name says
otherwise; percentages are of the cycle (median step time) unless a name says otherwise.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import Diagnosis, Estimate, Problem, StepPart
from torchscale.contracts.versioned import Record

# what a version holds: docs/results.md, "Profile analysis versions"; the one upgrade a version
# change ships from the version before it: offline/results/upgrade.py
ANALYSIS_SCHEMA_VERSION = 11
ANALYSIS_KIND = "torchscale.profile_analysis"


# what told a trace's rank: the trace's own distributedInfo, its file's name, an NVTX mark the
# rank left, the order nsys lists the processes in, or the caller
RankSource = Literal["distributedInfo", "file_name", "nvtx_mark", "process_order", "given"]


class TraceFile(Record):
    path: str
    rank: int
    rank_source: RankSource
    format: str = Field(description="kineto | nsys")
    bytes: int = Field(description="uncompressed bytes parsed")


class RankFigures(Record):
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
        description="data-phase time with nothing computing or communicating"
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
        description="this rank's parts of the step model over the model's steps (seconds per "
        "step and shares of its own step, 95 % intervals)",
    )


class OpFigures(Record):
    op: str
    instances: int = Field(description="matched instances (one per group and index)")
    transfer_us: float = Field(description="sum of per-instance transfer (min over ranks)")
    wait_us: float = Field(description="sum over ranks and instances of the wait for peers")


class ClockOffset(Record):
    rank: int
    offset_us: float = Field(description="this rank's clock minus the reference rank's")
    uncertainty_us: float
    samples: int


# per `--target`: the finding categories it reports, in the order it ranks them (None: all, by
# cost); what the target does to the diagnosis' findings (`target_findings`), never stored
TARGET_CATEGORIES: dict[str, tuple[str, ...] | None] = {
    "sync_stalls": ("straggler", "load_imbalance"),
    "comm": ("exposed_comm", "straggler", "load_imbalance"),
    "compute": ("host_bound", "data_wait"),
    "memory": (),
    "all": None,
}


def findings_for_target(
    findings: list[Problem], target: str
) -> tuple[list[Problem], list[Problem]]:
    """(the target's findings in its order, the others by cost): the diagnosis' findings
    split for `--target`; within a target, categories rank in its order, then by cost."""
    order = TARGET_CATEGORIES.get(target)
    if order is None:
        return list(findings), []
    kept = [f for f in findings if f.category in order]
    kept.sort(key=lambda f: (order.index(f.category), -f.cost_pct))
    return kept, [f for f in findings if f.category not in order]


class KernelFigures(Record):
    """A device kernel by total time over the analysed ranks and complete steps."""

    name: str
    calls: int
    total_us: float
    share_of_compute: float = Field(description="of all compute-kernel time, 0-1")


class StepStall(Record):
    """One cell of the rank x step stall heatmap."""

    rank: int
    step: int
    step_us: float
    stall_us: float


class ProfileAnalysis(Record):
    kind: Literal["torchscale.profile_analysis"] = "torchscale.profile_analysis"
    schema_version: Literal[11] = 11
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
    diagnosis: Diagnosis | None = Field(
        default=None,
        description="the one diagnosis of the run (the reason when null: "
        "unavailable['diagnosis']), judged against the run's measured windows: the phase "
        "timers' split heads it where the profiler slowed the traced steps beyond the noise "
        "(the cross-check 'traced steps against the measured windows')",
    )
    collective_wait_pct: float | None = Field(
        default=None,
        description="all waiting for peers inside collectives, hidden behind compute or not, "
        "over step time, % (null: no collective matched)",
    )
    overlap_pct: float | None = Field(
        description="HTA's: time computing while communicating / communication time, %"
    )
    ranks: list[RankFigures] = Field(default_factory=list)
    ops: list[OpFigures] = Field(default_factory=list)
    matched_collectives: int = 0
    mismatches: list[Finding] = Field(
        default_factory=list,
        description="collectives the ranks' traces disagree on (trace.*), worded by "
        "contracts/wording/profile.py",
    )
    clock: list[ClockOffset] = Field(default_factory=list)
    arrival_agreement: float | None = Field(
        default=None, description="share where last-by-arrival equals last-by-duration"
    )
    arrival_shares: dict[str, float] = Field(
        default_factory=dict,
        description="rank -> share of the matched collectives it arrived last at",
    )
    top_kernels: list[KernelFigures] = Field(
        default_factory=list, description="device kernels by total time (GPU traces)"
    )
    memory_copy_share: Estimate | None = Field(
        default=None,
        description="device memcpy/memset time not under a kernel, share of the step (part of "
        "the model's compute); null on CPU ranks",
    )
    stall_by_step: list[StepStall] = Field(default_factory=list)
    notes: list[Finding] = Field(
        default_factory=list,
        description="what was odd or missing in the input: codes with their figures "
        "(contracts/wording/profile.py, profile_notes.py)",
    )
    unavailable: dict[str, Finding] = Field(
        default_factory=dict,
        description="figure -> why it is null (profile.*), worded by contracts/wording/profile.py",
    )
    analysis_s: float | None = Field(default=None, description="wall time of the analysis")

    @property
    def findings(self) -> list[Problem]:
        """The target's findings, ranked for it: the diagnosis'."""
        return self._split()[0]

    @property
    def other_findings(self) -> list[Problem]:
        """The findings the target leaves out, by cost."""
        return self._split()[1]

    def _split(self) -> tuple[list[Problem], list[Problem]]:
        if self.diagnosis is None:
            return [], []
        return findings_for_target(self.diagnosis.findings, self.target)
