"""The versioned trace analysis (`profile/<name>/analysis.json`), read by reports.

Every figure that the traces cannot give is null with the reason in `unavailable`; what was odd
or missing in the input is a finding in `notes`. Times are microseconds unless a name says
otherwise; percentages are of the cycle (median step time) unless a name says otherwise.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import Diagnosis, Estimate, Problem, StepPart
from torchscale.contracts.versioned import Record

# what each version added and how older files are read: docs/results.md, "Profile analysis
# versions"
ANALYSIS_SCHEMA_VERSION = 10


class TraceFile(Record):
    path: str
    rank: int
    rank_source: str = Field(description="distributedInfo | file name | nsys process order")
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


class StragglerFigures(Record):
    """Schema 1: the straggler the analysis named by arrival order and phase gap."""

    rank: int
    last_arrival_share: float | None = Field(
        description="share of collectives it arrived last at; null: none matched"
    )
    mean_lateness_us: float | None
    phase: str | None = Field(description="the phase whose busy time makes it late")
    phase_gap_us: float | None
    phase_gap_pct: float | None = Field(description="the gap as % of the mean step")
    shares: dict[str, float] = Field(default_factory=dict, description="rank -> last share")


class WhatIf(Record):
    """Schema 1-2: one rank's what-if, an upper bound capped by the other ranks' wait."""

    rank: int
    saved_us_per_step: float
    speedup_pct: float = Field(description="at most this % of the mean step would go")
    share: Estimate | None = Field(
        default=None, description="schema 2: the same share with its 95 % interval"
    )


class BeforeDiagnosis(Record):
    """The headline figures of a schema-1 analysis, which has no diagnosis to read them from
    (separate methods: they may disagree with each other). Never written from schema 8 on."""

    sync_stall_pct: float | None = None
    exposed_comm_pct: float | None = Field(
        default=None, description="communication not hidden behind compute, waits included"
    )
    straggler: StragglerFigures | None = None
    whatif: list[WhatIf] = Field(default_factory=list)
    findings: list[Problem] = Field(
        default_factory=list, description="schema 1's findings (from schema 10 on the diagnosis')"
    )


FindingFigures = Problem  # the diagnosis' findings (schema 3: one class for both files)
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
    schema_version: Literal[1, 2, 3, 4, 5, 6, 7, 8, 9, 10] = 10
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
        description="schema 3: the one diagnosis of the run (schema 2: attribution; the "
        "reason when null: unavailable['diagnosis']); schema 7: judged against the run's "
        "measured windows, the phase timers' split heading it where the profiler slowed the "
        "traced steps beyond the noise (the cross-check 'traced steps against the measured "
        "windows')",
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
        description="schema 10: collectives the ranks' traces disagree on (trace.*), worded by "
        "contracts/wording/trace_mismatches.py",
    )
    stored_mismatches: list[str] = Field(
        default_factory=list, description="an older version's lines no code was recognised in"
    )
    clock: list[ClockOffset] = Field(default_factory=list)
    arrival_agreement: float | None = Field(
        default=None, description="share where last-by-arrival equals last-by-duration"
    )
    arrival_shares: dict[str, float] = Field(
        default_factory=dict,
        description="schema 8: rank -> share of the matched collectives it arrived last at",
    )
    before_diagnosis: BeforeDiagnosis | None = Field(
        default=None, description="schema 1's own headline figures (it has no diagnosis)"
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
    notes: list[Finding | str] = Field(
        default_factory=list,
        description="what was odd or missing in the input (schema 10: codes with their figures, "
        "contracts/wording/trace_notes.py, profile_notes.py; older words not recognised as stored)",
    )
    unavailable: dict[str, Finding] = Field(
        default_factory=dict,
        description="schema 10: figure -> why it is null (profile.*), worded by "
        "contracts/wording/profile_notes.py",
    )
    analysis_s: float | None = Field(default=None, description="wall time of the analysis")

    @property
    def findings(self) -> list[Problem]:
        """The target's findings, ranked for it: the diagnosis' (schema 1: its own, as
        stored)."""
        return self._split()[0]

    @property
    def other_findings(self) -> list[Problem]:
        """The findings the target leaves out, by cost."""
        return self._split()[1]

    def _split(self) -> tuple[list[Problem], list[Problem]]:
        if self.diagnosis is not None:
            return findings_for_target(self.diagnosis.findings, self.target)
        before = self.before_diagnosis  # schema 1 stored the findings it showed, as shown
        return (list(before.findings) if before else []), []

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """Older files stay readable: schema 1 has no step model (said in `unavailable`);
        schema 2's attribution is read as a diagnosis decided by the traces; before schema 8
        the headline figures were copies of the diagnosis: dropped where it holds them,
        folded into it where it lacks them (schema 2's what-if), and kept apart
        (`before_diagnosis`) where there is no diagnosis. Before schema 10 the target's split
        of the diagnosis' findings was stored beside it (`findings`, `other_findings`): dropped,
        as it is read off the diagnosis (schema 1 keeps its own in `before_diagnosis`)."""
        if not isinstance(data, dict) or data.get("schema_version", 10) >= 10:
            return data
        data = dict(data)
        # lines the reader recognises become findings (upgrades/verdict_words.py)
        data["stored_mismatches"] = [m for m in data.pop("mismatches", None) or [] if m]
        stored = [*(data.pop("findings", None) or []), *(data.pop("other_findings", None) or [])]
        if data["schema_version"] < 8:
            data = _before_schema_8(data)
        reasons = (data.get("unavailable") or {}).items()
        data["unavailable"] = {key: _stored_reason(reason) for key, reason in reasons}
        diagnosis = data.get("diagnosis")
        if isinstance(diagnosis, dict) and stored and not diagnosis.get("findings"):
            by_cost = sorted(stored, key=lambda f: -float(f.get("cost_pct") or 0.0))
            data["diagnosis"] = {**diagnosis, "findings": by_cost}
        elif diagnosis is None and stored:
            data["before_diagnosis"] = {**(data.get("before_diagnosis") or {}), "findings": stored}
        return data


def _stored_reason(reason: Any) -> Any:
    """An older analysis' sentence as stored words; the reader turns the words of a code back
    into it (offline/results/upgrades/profile_reasons.py)."""
    return (
        Finding(code="profile.stored", figures={"words": reason})
        if isinstance(reason, str)
        else reason
    )


def _before_schema_8(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 1-7: the step model (schema 1: none, said in `unavailable`), schema 2's
    attribution read as a diagnosis, the headline figures that copied it dropped or kept
    apart."""
    unavailable = dict(data.get("unavailable") or {})
    if data["schema_version"] == 1:
        unavailable.setdefault("diagnosis", Finding(code="profile.v1_attribution"))
    if data["schema_version"] in (1, 2):
        attribution = data.pop("attribution", None)
        if "attribution" in unavailable:
            unavailable["diagnosis"] = unavailable.pop("attribution")
        if isinstance(attribution, dict):
            data["diagnosis"] = {**attribution, "source": "traces"}
    data.pop("cycle_us", None)  # the median of ranks[].step_us
    figures = {key: data.pop(key) for key in BEFORE_SCHEMA_8 if key in data}
    diagnosis = data.get("diagnosis")
    if diagnosis is None:
        data["before_diagnosis"] = figures
    else:
        unavailable = {k: v for k, v in unavailable.items() if k not in BEFORE_SCHEMA_8}
        data["arrival_shares"] = (figures.get("straggler") or {}).get("shares") or {}
        if isinstance(diagnosis, dict) and diagnosis.get("whatif") is None:
            data["diagnosis"] = {**diagnosis, "whatif": _folded_whatif(figures, diagnosis)}
    data["unavailable"] = unavailable
    return data


# the headline figures an analysis stored beside its diagnosis before schema 8
BEFORE_SCHEMA_8 = ("sync_stall_pct", "exposed_comm_pct", "straggler", "whatif")
SCHEMA_2_WHATIF = (
    "schema 2 analysis: the candidate's what-if capped by the other ranks' wait for peers"
)


def _folded_whatif(figures: dict[str, Any], diagnosis: dict[str, Any]) -> dict[str, Any] | None:
    """Schema 2's what-if as the diagnosis' (its attribution had none): the saving a point
    figure, the share with its interval where it has one."""
    whatif = next(iter(figures.get("whatif") or []), None)
    if not isinstance(whatif, dict):
        return None
    verdict = diagnosis.get("straggler") or {}
    share = whatif.get("share") or _point(whatif["speedup_pct"] / 100)
    return {
        "rank": whatif["rank"],
        "named": bool(verdict.get("named")) and verdict.get("rank") == whatif["rank"],
        "saved_s": _point(whatif["saved_us_per_step"] / 1e6),
        "share": share,
        "extra_work_s": None,
        "method": SCHEMA_2_WHATIF,
    }


def _point(value: float) -> dict[str, Any]:
    return {
        "value": value,
        "low": None,
        "high": None,
        "n": 1,
        "method": SCHEMA_2_WHATIF,
        "measurable": True,
        "reason": {"code": "estimate.no_interval", "figures": {}},
    }
