"""A run's diagnosis, as a cell result and a profile analysis store it alike: the step split
into parts, the straggler verdict and its test, the cross-checks, the what-if and the ranked
problems, each figure an `Estimate` with its 95 % interval. Codes and figures only; the words
are made when shown (contracts/wording/diagnosis_*.py)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from torchscale.contracts import finding
from torchscale.contracts.versioned import Record

# a stored code and its figures (contracts/finding.py)
Code = finding.Finding
# why a figure is null or has no interval: a code and its figures
Reason = Code


class Estimate(Record):
    """One figure with its 95 % interval (torchscale/offline/analysis/uncertainty.py). Inside its
    own noise (the interval reaches outside the figure's domain, e.g. a time that may be 0 or a
    share that may be 0) it is not measurable: `value` is null and the interval, clamped to the
    domain, says how large it could be. Without an interval (one repeat) `reason` says why."""

    value: float | None = Field(description="the figure; null when not measurable above noise")
    low: float | None = Field(description="lower end of the 95 % interval (clamped to the domain)")
    high: float | None = Field(description="upper end of the 95 % interval")
    n: int = Field(description="the units the interval was taken over (steps, repeats)")
    measurable: bool = Field(description="false: the interval includes 0 or leaves the domain")
    reason: Reason | None = Field(
        default=None,
        description="why not measurable, or no interval: a code and its figures (worded by "
        "contracts/wording/cell_reasons.py)",
    )


PartName = Literal["compute", "data", "wait_for_peers", "exposed_transfer", "rest"]
PART_NAMES: tuple[PartName, ...] = ("compute", "data", "wait_for_peers", "exposed_transfer", "rest")


class StepPart(Record):
    """One part of the step (docs/methodology.md, "One model of the step")."""

    name: PartName
    seconds: Estimate = Field(description="mean per step, over ranks and steps")
    share: Estimate = Field(description="seconds / the mean step")


StragglerKind = Literal["compute", "input", "host", "communication"]
# what a rank's own work is, by the source that timed it: its phase timers, or the traces'
# phase ranges or step-model parts
OwnWork = Literal["timers", "phase_ranges", "step_parts"]


class StepPattern(Record):
    """How a straggler's cost falls over the steps (offline/analysis/diagnosis/cost.py,
    `step_pattern`): one step in `period` (periodic), every step, most steps or a few of them
    (`steps` of `of`), or unevenly; `typical_s` the cost of the steps that carry it."""

    shape: Literal["periodic", "every", "most", "sporadic", "uneven"]
    period: int | None = None
    steps: int | None = None
    of: int | None = None
    typical_s: float | None = None


class StragglerVerdict(Record):
    """Whether one rank is significantly slower than the others, by a stated test."""

    named: bool = Field(description="true only when the test is significant and evidence agrees")
    rank: int | None = Field(description="the straggler; null unless named")
    phase: str | None = Field(description="its slow phase; null unless one is significant")
    candidate_rank: int | None = Field(description="the rank that costs the others most")
    gap_s: Estimate | None = Field(
        description="what the candidate costs the others per step (how far its own work runs "
        "past the slowest other's, over the others' mean cost; at 2 ranks its own work minus "
        "the other's)"
    )
    phase_gap_s: Estimate | None = Field(default=None, description="the named phase's gap")
    p_value: float | None = Field(
        description="one-sided Wilcoxon signed-rank, paired steps (a cross-check, not the gate)"
    )
    pattern: StepPattern | None = Field(
        default=None,
        description="how the cost falls over the steps (every 4th step, every step, 3 of 40 "
        "steps); null below the minimum effect",
    )
    significant: bool | None = Field(
        default=None,
        description="the own-work gap passed the test (p and minimum effect), named or "
        "withdrawn by evidence naming another rank",
    )
    min_effect_s: float | None = Field(description="smallest gap named: a share of the step")
    host_wait_s: Estimate | None = Field(
        default=None,
        description="the candidate's wait for a CPU per step (its training thread runnable, "
        "not running: Linux run_delay) minus the median of the others'; null: not measured "
        "(not Linux)",
    )
    kind: StragglerKind | None = Field(
        default=None,
        description="what the named rank's extra time is: compute (its own work takes "
        "longer), input (it waits for its data), host (it was held off the CPU), "
        "communication (its collectives start late while its work is on par); null: nobody "
        "named",
    )
    kind_rule: Code | None = Field(
        default=None,
        description="the rule that decided the kind and its figures (straggler.rule.*); null: "
        "nobody named",
    )
    device_ratio: Estimate | None = Field(
        default=None,
        description="kind compute: the named rank's calibration time over the median of the "
        "others' (1.0: the same speed), with its interval; null: not compute, or no calibration",
    )
    device: Code | None = Field(
        default=None,
        description="kind compute: a slower device or more work (straggler.device_slower, "
        ".device_partly, .more_work, .device_undecided, .device_unmeasured), worded by "
        "contracts/wording/diagnosis_straggler.py; null: not compute",
    )
    late_s: Estimate | None = Field(
        default=None,
        description="kind communication: the other ranks' wait for peers per step at the "
        "matched collectives minus the named rank's (what its late collectives cost them); "
        "null for other kinds",
    )
    why_not: Code | None = Field(
        default=None,
        description="why the candidate is not named (below the minimum effect, could be "
        "noise, too few steps, withdrawn), worded by contracts/wording/diagnosis_straggler.py; "
        "null when named",
    )
    injected: bool | None = Field(
        default=None,
        description="true when the named rank is one the run delayed on purpose "
        "(--inject-delay): the straggler is artificial, not a finding about the machine; "
        "null: nobody named",
    )
    test: Code = Field(
        description="the test the gap was judged by (straggler.test: its level, the minimum "
        "effect as a share of the step, what own work is)"
    )

    @property
    def host_bound(self) -> bool | None:
        """The candidate's extra time is its wait for a CPU (kind host); None where no CPU
        wait was timed (not judged)."""
        if self.kind != "host" and self.host_wait_s is None:
            return None
        return self.kind == "host"

    def headline_gap(self) -> Estimate | None:
        """The gap every surface prints for this verdict: what the named rank costs per step.
        Its own work over the others' (`gap_s`), except where its work is not what is late: a
        communication straggler's is the others' wait for its late collectives (`late_s`), a
        host straggler's the time the host held it off the CPU (`host_wait_s`)."""
        if self.kind == "communication":
            return self.late_s
        if self.kind == "host":
            return self.host_wait_s
        return self.gap_s


CheckName = Literal[
    "paired",
    "cpu_wait",
    "held_launches",
    "others_wait",
    "arrival_order",
    "no_sync_comm",
    "inflation",
    "timers_split",
    "timers_straggler",
    "traces_straggler",
]


class CrossCheck(Record):
    """A second estimate of a figure of the model, shown only as agreeing or not."""

    check: CheckName = Field(
        description="which cross-check (its name and how it is measured: "
        "contracts/wording/diagnosis_checks.py)"
    )
    estimate: Estimate | None
    agrees: bool | None = Field(description="null: could not judge")
    detail: Code = Field(
        description="what it found: a code with its figures (contracts/wording/diagnosis_checks.py)"
    )


class StepSplit(Record):
    """The step split into compute + data + waiting for peers + exposed transfer + rest, each
    with its 95 % interval, the parts adding up to the step by construction; with the straggler
    verdict and cross-checks, what each source of evidence (phase timers, traces) builds."""

    steps: int = Field(description="steps the parts are averaged over (per rank)")
    ranks: int
    step_s: Estimate = Field(description="the mean step the parts add up to")
    parts: list[StepPart]
    straggler: StragglerVerdict | None = Field(description="null: one rank")
    cross_checks: list[CrossCheck] = Field(default_factory=list)


DiagnosisSource = Literal["phase timers", "traces"]


class RankWait(Record):
    """One rank's wait for peers: its mean wait per step over its own mean step."""

    rank: int
    share: Estimate


class WhatIf(Record):
    """What the step would lose if the candidate rank did the others' work: per step, the
    least wait for peers of any other rank (the wait it removes), capped by the candidate's
    extra own work at that step; an upper bound."""

    rank: int
    named: bool = Field(description="the named straggler (false: the largest gap, not named)")
    saved_s: Estimate = Field(description="mean seconds per step it would save")
    share: Estimate = Field(description="saved / the mean step")
    extra_work_s: float | None = Field(
        description="its mean own work past the slowest other rank's per step (the cap); null: "
        "capped by its late collectives"
    )


class Problem(Record):
    """One problem of the run, ranked by its cost: who and what, its cost (a part of the step
    model), the figures behind it and a concrete next step. (A `contracts.finding.Finding` is
    a verdict's code and figures; this is the diagnosis' ranked problem.)"""

    finding: Code = Field(
        description="what the problem is: its code and the figures its words are made of "
        "(contracts/wording/diagnosis_problems.py)"
    )
    category: str = Field(
        description="straggler | load_imbalance | exposed_comm | data_wait | host_bound"
    )
    cost_share: Estimate = Field(description="the cost as a share of the step with its interval")
    notes: list[Code] = Field(
        default_factory=list, description="evidence added by a later judgement, as findings"
    )

    # its words: contracts/wording/diagnosis_problems.py sets this when the wording layer loads (the
    # schema does not import the layer that imports it)
    words: ClassVar[Any] = None

    @property
    def title(self) -> str:
        return str(type(self).words.title(self))

    @property
    def evidence(self) -> list[str]:
        return list(type(self).words.evidence(self.finding, self.notes))

    @property
    def recommendation(self) -> str:
        """The next step as stored figures say it (a report words it for its run)."""
        return str(type(self).words.recommendation(self.finding))

    @property
    def cost_pct(self) -> float:
        """The cost's point value in % (0 where it is not measurable)."""
        return 100.0 * float(self.cost_share.value or 0.0)


class NoSyncWindow(Record):
    """The DDP no_sync() windows, interleaved with the synchronised ones: each rank's compute
    without gradient sync, a cross-check of the split (each rank's own figures: `ranks[].
    compute_time`)."""

    step_s: float | None = Field(description="median step under no_sync(), all ranks pooled")


class Diagnosis(StepSplit):
    """The one diagnosis of a run, computed once (torchscale/offline/analysis/diagnosis/) from
    all the evidence it has and rendered by every surface: the step split (the parts above),
    the per-rank waits, the straggler verdict, the what-if, the findings, the busy-machine
    caveat and the no_sync windows beside the split. `source` is the evidence that decided
    them (docs/methodology.md, "One diagnosis"); other estimates are `cross_checks`, shown on
    request."""

    source: DiagnosisSource = Field(description="the evidence the figures come from")
    rank_waits: list[RankWait] = Field(default_factory=list)
    whatif: WhatIf | None = None
    findings: list[Problem] = Field(default_factory=list, description="most expensive first")
    busy: Code | None = Field(
        default=None,
        description="why the verdict may be the machine's, not the workload's "
        "(caveat.busy_machine, caveat.shared_cores)",
    )
    no_sync: NoSyncWindow | None = Field(
        default=None,
        description="what the no_sync() windows measured beside the split; null: none ran "
        "(one rank, not DDP, traces alone)",
    )

    def part(self, name: str) -> StepPart | None:
        """The part of that name (compute, data, wait_for_peers, exposed_transfer, rest)."""
        return next((p for p in self.parts if p.name == name), None)
