"""Ranked findings: what costs the most step time, the evidence, and the fix.

Every finding's cost is a part of the step model (`step_model.py`), as a share of the mean step with
its interval, so a finding never gives a second answer to a question the model answers: exposed
communication costs the model's exposed transfer; a straggler and load imbalance cost its waiting
for peers; data loading its data part; a host-bound device the host-wait share of its rest. A GPU
cell's host-bound verdict (`host_bound_finding`: the busy probe's, or MFU under 1 % by arithmetic)
costs the share of the step its GPU is not busy. A finding whose cost is not measurable above noise,
or under MIN_COST_FRACTION (2 %) of the step, is not reported: below that, run-to-run noise of a
profiled step is as large as the effect, and a fix would not show.

`--target` picks which findings a profile reports and how they rank
(`contracts/schema/profile_analysis.py`, TARGET_CATEGORIES), when the analysis is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import Estimate, Problem, StepSplit, StragglerVerdict
from torchscale.contracts.wording.cell_reasons import coded
from torchscale.contracts.wording.profile import note
from torchscale.offline.analysis.diagnosis.traces import StepModel
from torchscale.offline.analysis.trace.collective_matching import Matched
from torchscale.offline.analysis.trace.straggler import Straggler, StragglerAnalysis

MIN_COST_FRACTION = 0.02
# waits are "spread over the ranks" when the rank that waits least still waits at least this
# share of what the rank that waits most does (below it, that rank is the one waited for)
SPREAD_MIN_RATIO = 0.25


@dataclass
class RankedFinding:
    """One problem: `finding` its code and figures (worded by
    contracts/wording/diagnosis_problems.py), `cost` the part of the step model it costs (share
    of the step, with its interval).
    `category`: straggler | load_imbalance | exposed_comm | data_wait | host_bound."""

    finding: Finding
    cost: Estimate
    category: str

    @property
    def cost_fraction(self) -> float:
        """The cost's point value (share of the step)."""
        return float(self.cost.value or 0.0)

    def stored(self) -> Problem:
        """The finding as a result stores it (`CellResult.diagnosis.findings`)."""
        return Problem(finding=self.finding, category=self.category, cost_share=self.cost)

    @property
    def title(self) -> str:
        return self.stored().title

    @property
    def evidence(self) -> list[str]:
        return self.stored().evidence

    @property
    def recommendation(self) -> str:
        return self.stored().recommendation


def _problem(code: str, cost: Estimate, category: str, **figures: Any) -> RankedFinding:
    return RankedFinding(Finding(code=code, figures=figures), cost, category)


def _dump(estimate: Estimate | None) -> dict[str, Any] | None:
    return None if estimate is None else estimate.model_dump(mode="json")


@dataclass
class FindingInputs:
    """What the findings read: parts of the step model (shares of the step with intervals; None: not
    measured) and the straggler verdict. Build it with `finding_inputs` or by hand."""

    cycle_us: float  # the model's mean step, us
    ranks: int
    device_type: str = "cpu"  # "cuda", "cpu", or another accelerator
    backend: str | None = None  # "nccl", "gloo", ...
    strategy: str | None = None  # the cell's (ddp, fsdp, tp, pp, hybrid) when known
    nodes: int | None = None  # hosts the ranks ran on; None: not known (traces alone)
    stall: Estimate | None = None  # the model's wait_for_peers share
    exposed_transfer: Estimate | None = None  # the model's exposed_transfer share
    data: Estimate | None = None  # the model's data share
    host_wait: Estimate | None = None  # the host-wait part of the model's rest (devices)
    waits_known: bool = False  # waits were split out of exposed_transfer (ranks matched)
    verdict: StragglerVerdict | None = None
    straggler_op: str | None = None  # the collective op the named rank is last at most often
    straggler_peer: int | None = None  # the fastest other rank in its slow phase
    arrival: Straggler | None = None  # arrival-order evidence for the named rank
    whatif: Estimate | None = None  # the named rank's capped what-if share
    comm_frac: float | None = None  # all communication time (overlapped or not), evidence
    overlap_pct: float | None = None  # HTA overlap over all ranks and steps, evidence
    data_wait_worst: tuple[int, float] | None = None  # (rank, share) of the slowest loader
    compute_spread_frac: float | None = None  # median over steps of (max - min) rank compute
    rank_waits: dict[int, Estimate] = field(default_factory=dict)  # each rank's wait share
    notes: list[Finding] = field(default_factory=list)


def part_share(model: StepSplit | None, name: str) -> Estimate | None:
    """The share of the step model's part `name`; None: no model, or no such part."""
    parts = model.parts if model is not None else []
    return next((part.share for part in parts if part.name == name), None)


def finding_inputs(
    model: StepModel,
    breakdowns: Mapping[int, pd.DataFrame],
    *,
    matched: Matched | None = None,
    arrival: StragglerAnalysis | None = None,
    phases_by_rank: Mapping[int, pd.DataFrame] | None = None,
    device_type: str = "cpu",
    backend: str | None = None,
    strategy: str | None = None,
    nodes: int | None = None,
) -> FindingInputs:
    """The step model's parts and verdict, plus evidence from the per-rank breakdowns
    (`breakdown.rank_breakdown`), the matched collectives and arrival order."""
    notes: list[Finding] = []
    attribution = model.attribution
    if attribution is None or not (attribution.step_s.value or 0) > 0:
        notes.append(note("profile.no_findings"))
        return FindingInputs(cycle_us=float("nan"), ranks=len(breakdowns), notes=notes)
    inputs = FindingInputs(
        cycle_us=float(attribution.step_s.value or 0.0) * 1e6,
        ranks=attribution.ranks,
        device_type=device_type,
        backend=backend,
        strategy=strategy,
        nodes=nodes,
        stall=part_share(attribution, "wait_for_peers") if model.waits_known else None,
        exposed_transfer=part_share(attribution, "exposed_transfer"),
        data=part_share(attribution, "data"),
        host_wait=model.host_wait if device_type != "cpu" else None,
        waits_known=model.waits_known,
        verdict=attribution.straggler,
        notes=notes,
    )
    parts = [t.assign(rank=int(r)) for r, t in sorted(breakdowns.items()) if not t.empty]
    bd = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if not bd.empty:
        total = float(bd["step_us"].sum())
        comm = float(bd["comm_us"].sum())
        inputs.comm_frac = comm / total if total > 0 else None
        if comm > 0:
            inputs.overlap_pct = 100.0 * float((bd["comm_us"] - bd["exposed_comm_us"]).sum()) / comm
    # the model's compute part, so the evidence is in the Step line's terms
    inputs.compute_spread_frac = compute_spread(model.parts, "step", inputs.cycle_us / 1e6)
    data_by_rank = {
        rank: next((p.share.value for p in ps if p.name == "data"), None)
        for rank, ps in model.per_rank.items()
    }
    known = {r: v for r, v in data_by_rank.items() if v is not None}
    if known:
        worst = max(known, key=lambda r: known[r])
        inputs.data_wait_worst = (worst, float(known[worst]))
    verdict = attribution.straggler
    if verdict is not None and verdict.named and verdict.rank is not None:
        top = arrival.straggler if arrival is not None else None
        if top is not None and top.rank == verdict.rank:
            inputs.arrival = top
        inputs.straggler_op = _op_of(matched, verdict.rank)
        if verdict.phase is not None and phases_by_rank is not None:
            inputs.straggler_peer = _fastest_peer(phases_by_rank, verdict.rank, verdict.phase)
    return inputs


def compute_spread(parts: pd.DataFrame, key: str, step_s: float) -> float | None:
    """Median over steps (`key`) of the slowest minus the fastest rank's compute, as a share
    of the mean step `step_s`; None with fewer than two ranks or no step."""
    if parts.empty or parts["rank"].nunique() < 2 or not step_s > 0:
        return None
    by_step = parts.groupby(key)["compute"]
    return float((by_step.max() - by_step.min()).median()) / step_s


def _op_of(matched: Matched | None, rank: int) -> str | None:
    """The collective op the rank arrived last at most often (else the most common op)."""
    if matched is None or matched.usable.empty:
        return None
    use = matched.usable
    mine = use[(use["rank"] == rank) & use["last_by_duration"].astype(bool)]
    source = mine if not mine.empty else use
    return str(source["op"].value_counts().index[0])


def _fastest_peer(phases_by_rank: Mapping[int, pd.DataFrame], rank: int, phase: str) -> int | None:
    """The other rank with the least median effective time in `phase` (the first on a tie)."""
    medians = {
        int(other): float(table.loc[table["phase"] == phase, "effective_us"].median())
        for other, table in phases_by_rank.items()
        if other != rank and not table.empty and (table["phase"] == phase).any()
    }
    return min(medians, key=medians.__getitem__) if medians else None


def _backend_word(backend: str | None) -> str:
    if not backend:
        return ""
    b = backend.split(",")[0].split(":")[-1].strip()
    return b.upper() if b.lower() in ("nccl", "rccl", "hccl") else b


def rank_findings(inputs: FindingInputs) -> list[RankedFinding]:
    """Findings whose cost is measurable and at least MIN_COST_FRACTION of the step, most
    expensive first."""
    if not (inputs.cycle_us > 0):
        return []
    found: list[RankedFinding] = []
    for make in (_straggler, _imbalance, _exposed_comm, _data_wait, _host_bound):
        f = make(inputs)
        if f is not None and f.cost.measurable and (f.cost.value or 0) >= MIN_COST_FRACTION:
            found.append(f)
    return sorted(found, key=lambda f: f.cost_fraction, reverse=True)


def _straggler(i: FindingInputs) -> RankedFinding | None:
    v = i.verdict
    if v is None or not v.named or v.rank is None:
        return None
    step_s = i.cycle_us / 1e6
    if i.stall is not None:
        cost = i.stall
    elif v.gap_s is not None and v.gap_s.value is not None and step_s > 0:
        # waits not separable (no matched collectives): its extra own work is the cost
        cost = Estimate(
            value=min(v.gap_s.value / step_s, 1.0),
            low=None if v.gap_s.low is None else max(0.0, min(v.gap_s.low / step_s, 1.0)),
            high=None if v.gap_s.high is None else max(0.0, min(v.gap_s.high / step_s, 1.0)),
            n=v.gap_s.n,
            measurable=v.gap_s.measurable,
        )
    else:
        return None
    s = i.arrival
    arrival = (
        None
        if s is None
        else {
            "last": s.instances_last,
            "instances": s.instances,
            "share": s.share_last,
            "expected": s.expected_share,
        }
    )
    return _problem(
        "problem.straggler",
        cost,
        "straggler",
        device=i.device_type,
        rank=v.rank,
        backend=_backend_word(i.backend) or None,
        op=i.straggler_op,
        kind=v.kind,
        phase=v.phase,
        peer=i.straggler_peer,
        phase_gap_s=v.phase_gap_s.value if v.phase_gap_s is not None else None,
        arrival=arrival,
        stall=_dump(i.stall),
        whatif=_dump(i.whatif),
    )


def waits_spread(rank_waits: Mapping[int, Estimate]) -> tuple[bool, int | None]:
    """(the waits are spread over the ranks, the rank that waits least). Spread: the rank
    that waits least still waits at least SPREAD_MIN_RATIO of what the rank that waits most
    does; otherwise that rank is the one the others wait for. Unknown waits count as spread."""
    known = {r: float(e.value if e.value is not None else 0.0) for r, e in rank_waits.items()}
    if len(known) < 2:
        return True, None
    least = min(known, key=lambda r: (known[r], r))
    most = max(known.values())
    return most <= 0 or known[least] >= SPREAD_MIN_RATIO * most, least


def _imbalance(i: FindingInputs) -> RankedFinding | None:
    """Waiting for peers without a named straggler: "ranks take turns" only when no rank's
    own-work gap is significant and the waits are spread over the ranks; otherwise say who is
    waited for, or that the evidence is disputed, never a turn-taking story."""
    if (i.verdict is not None and i.verdict.named) or i.stall is None or i.ranks < 2:
        return None
    spread, least = waits_spread(i.rank_waits)
    rank = None
    if i.verdict is not None and i.verdict.host_bound and i.verdict.candidate_rank is not None:
        code, rank = "problem.imbalance.host", i.verdict.candidate_rank
    elif i.verdict is not None and i.verdict.significant:
        code = "problem.imbalance.disputed"
    elif not spread and least is not None:
        code, rank = "problem.imbalance.waited_for", least
    else:
        code = "problem.imbalance.turns"
    return _problem(
        code,
        i.stall,
        "load_imbalance",
        device=i.device_type,
        rank=rank,
        stall=_dump(i.stall),
        rank_waits=[[r, _dump(e)] for r, e in sorted(i.rank_waits.items())],
        compute_spread=i.compute_spread_frac,
    )


def _exposed_comm(i: FindingInputs) -> RankedFinding | None:
    if i.exposed_transfer is None:
        return None
    return _problem(
        "problem.exposed_comm",
        i.exposed_transfer,
        "exposed_comm",
        backend=_backend_word(i.backend) or None,
        exposed=_dump(i.exposed_transfer),
        waits_known=i.waits_known,
        comm_frac=i.comm_frac,
        overlap_pct=i.overlap_pct,
        strategy=i.strategy,
        nodes=i.nodes,
        gloo=i.device_type == "cpu" or (i.backend or "").lower().startswith("gloo"),
    )


def _data_wait(i: FindingInputs) -> RankedFinding | None:
    if i.data is None:
        return None
    worst = i.data_wait_worst if i.ranks > 1 else None
    return _problem(
        "problem.data_wait",
        i.data,
        "data_wait",
        device=i.device_type,
        data=_dump(i.data),
        worst_rank=worst[0] if worst is not None else None,
        worst_share=worst[1] if worst is not None else None,
    )


def _host_bound(i: FindingInputs) -> RankedFinding | None:
    if i.host_wait is None or i.device_type == "cpu":
        return None
    return _problem(
        "problem.launch_wait",
        i.host_wait,
        "host_bound",
        device=i.device_type,
        host_wait=_dump(i.host_wait),
    )


# a GPU whose step's FLOPs at its peak fill under this share of the step is host-bound by
# arithmetic alone (results without a busy probe): even at 100x below peak it would idle
HOST_BOUND_MFU = 0.01


def host_bound_finding(
    *,
    busy_share: float | None,
    mfu: float | None,
    gpu_busy_s: float | None = None,
    step_s: float | None = None,
    compiled: bool = False,
    mfu_interval: Estimate | None = None,
    verdict: Finding | None = None,
) -> RankedFinding:
    """The host-bound verdict of a GPU cell as a finding: from the busy probe (`busy_share`:
    the GPU's busy time over the median step) or, without one, by arithmetic (`mfu`: the
    step's FLOPs at the GPU's peak over the step, under HOST_BOUND_MFU); `compiled`: the cell
    ran under torch.compile, so the fix does not offer it again; `verdict`: the measured
    verdict (its code and figures: the problem's title, with `busy_share`). Its cost
    is the share of the step the GPU is not busy (by arithmetic: at most 1 - MFU, the share
    its FLOPs leave)."""
    if busy_share is not None:
        share = min(max(busy_share, 0.0), 1.0)
        cost = Estimate(
            value=1.0 - share,
            low=None,
            high=None,
            n=1,
            measurable=True,
            reason=None,
        )
        return _problem(
            "problem.host_bound.busy",
            cost,
            "host_bound",
            verdict=verdict.model_dump(mode="json") if verdict is not None else None,
            busy_share=share,
            gpu_busy_s=gpu_busy_s,
            step_s=step_s,
            compiled=compiled,
        )
    share = min(max(mfu or 0.0, 0.0), 1.0)
    # arithmetic bounds the idle share from above only (memory traffic and launches are
    # GPU time it cannot see): the cost is not measurable, with that bound
    cost = Estimate(
        value=None,
        low=None,
        high=1.0 - share,
        n=1,
        measurable=False,
        reason=coded("estimate.no_busy_probe"),
    )
    return _problem(
        "problem.host_bound.arithmetic",
        cost,
        "host_bound",
        # the MFU once: with its interval where there is one
        **({"mfu_interval": _dump(mfu_interval)} if mfu_interval is not None else {"mfu": share}),
        threshold=HOST_BOUND_MFU,
        compiled=compiled,
    )


def is_host_bound_verdict(finding: Problem) -> bool:
    """The cell's host-bound verdict among its stored findings, by its code (the device
    idling for launches, a part of the step model, is of the same category)."""
    return finding.finding.code in ("problem.host_bound.busy", "problem.host_bound.arithmetic")
