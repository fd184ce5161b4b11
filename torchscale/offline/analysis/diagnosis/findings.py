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

import pandas as pd

from torchscale.contracts.schema.cell_result import Estimate, Problem, StepSplit, StragglerVerdict
from torchscale.contracts.wording import spelled
from torchscale.contracts.wording import verdicts as verdict_words
from torchscale.contracts.wording.figures import pct, share_text
from torchscale.offline.analysis.diagnosis.traces import StepModel
from torchscale.offline.analysis.trace.collective_matching import Matched
from torchscale.offline.analysis.trace.straggler import Straggler, StragglerAnalysis

MIN_COST_FRACTION = 0.02
PHASE_WORDS = {
    "data": "data loading",
    "forward": "forward pass",
    "backward": "backward pass",
    "optimizer": "optimizer step",
}
# waits are "spread over the ranks" when the rank that waits least still waits at least this
# share of what the rank that waits most does (below it, that rank is the one waited for)
SPREAD_MIN_RATIO = 0.25


@dataclass
class RankedFinding:
    """One problem: `title` names who and what, `cost` is the part of the step model it costs (share
    of the step, with its interval), `evidence` the figures behind it, `recommendation` a concrete
    next step. `category`: straggler | load_imbalance | exposed_comm | data_wait | host_bound."""

    title: str
    cost: Estimate
    evidence: list[str]
    recommendation: str
    category: str

    @property
    def cost_fraction(self) -> float:
        """The cost's point value (share of the step)."""
        return float(self.cost.value or 0.0)

    def stored(self) -> Problem:
        """The finding as a result stores it (`CellResult.diagnosis.findings`)."""
        return Problem(
            title=self.title,
            category=self.category,
            cost_share=self.cost,
            evidence=list(self.evidence),
            recommendation=self.recommendation,
        )


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
    arrival_reason: str = ""
    whatif: Estimate | None = None  # the named rank's capped what-if share
    comm_frac: float | None = None  # all communication time (overlapped or not), evidence
    overlap_pct: float | None = None  # HTA overlap over all ranks and steps, evidence
    data_wait_worst: tuple[int, float] | None = None  # (rank, share) of the slowest loader
    compute_spread_frac: float | None = None  # median over steps of (max - min) rank compute
    rank_waits: dict[int, Estimate] = field(default_factory=dict)  # each rank's wait share
    notes: list[str] = field(default_factory=list)


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
    notes: list[str] = []
    attribution = model.attribution
    if attribution is None or not (attribution.step_s.value or 0) > 0:
        notes.append("no step model: no findings")
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
    if arrival is not None:
        inputs.arrival_reason = arrival.reason
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


def _device_word(device_type: str) -> str:
    return "rank" if device_type == "cpu" else ("GPU" if device_type == "cuda" else "device")


def _devices(device_type: str) -> str:
    """The plural: 'ranks', 'GPUs', 'devices'."""
    return _device_word(device_type) + "s"


def _who(device_type: str, rank: int) -> str:
    word = _device_word(device_type)
    return f"rank {rank}" if word == "rank" else f"{word}-{rank}"


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
    who = _who(i.device_type, v.rank)
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
            method=f"{v.gap_s.method}, over the mean step",
            measurable=v.gap_s.measurable,
        )
    else:
        return None
    prefix = " ".join(p for p in (_backend_word(i.backend), i.straggler_op) if p)
    prefix = f"{prefix}: " if prefix else ""
    if v.kind == "host":
        title = f"{prefix}{who} held off the CPU by other work on its cores"
    elif v.kind == "communication":
        title = f"{prefix}{who} starts its collectives late (its work is on par)"
    elif v.phase is not None:
        than = (
            _who(i.device_type, i.straggler_peer)
            if i.straggler_peer is not None
            else f"the other {_devices(i.device_type)}"
        )
        title = f"{prefix}{who} finishing {PHASE_WORDS.get(v.phase, v.phase)} slower than {than}"
    else:
        title = f"{prefix}{who} is slower than the other {_devices(i.device_type)}"
    evidence = [f"step model: {verdict_words.summary(v)}"]
    if v.phase is not None and v.phase_gap_s is not None and v.phase_gap_s.value is not None:
        evidence.append(
            f"its {PHASE_WORDS.get(v.phase, v.phase)} takes "
            f"{spelled.trace_seconds(v.phase_gap_s.value)} longer than the median of the other "
            "ranks, step by step"
        )
    if (s := i.arrival) is not None:
        evidence.append(
            f"cross-check: {who} arrived last at {s.instances_last} of {s.instances} matched "
            f"collectives ({spelled.pct_whole(s.share_last)}; chance alone: "
            f"{spelled.pct_whole(s.expected_share)})"
        )
    elif i.arrival_reason:
        evidence.append(f"cross-check, arrival order: {i.arrival_reason}")
    if i.stall is not None:
        evidence.append(
            f"ranks wait for peers {share_text(i.stall)} of the step (mean over ranks, exposed)"
        )
    else:
        evidence.append(
            "waits not separable from the transfer (no collective matched): the cost is its "
            "extra own work per step"
        )
    if i.whatif is not None:
        evidence.append(
            f"what-if (upper bound): had {who} arrived with the others, steps would be at most "
            f"{share_text(i.whatif)} shorter (capped by the other ranks' wait for it)"
        )
    return RankedFinding(title, cost, evidence, _straggler_fix(i, v, who), "straggler")


# the fix for a rank the host held back, whether it is named or the one the others wait for
HOST_FIX = (
    "{who}'s training thread was ready to run and waited for a CPU for most of its extra "
    "time: other work shares its cores. Check what runs there (`top -H`, `ps -eLo "
    "psr,pcpu,comm`), give each rank cores of its own (fewer ranks or threads per node, CPU "
    "pinning) and move other work off the node; the code is not slower."
)


def _straggler_fix(i: FindingInputs, v: StragglerVerdict, who: str) -> str:
    gpu = i.device_type != "cpu"
    phase = "data" if v.kind == "input" else v.phase
    if v.kind == "host":
        return HOST_FIX.format(who=who)
    if v.kind == "communication":
        return (
            f"{who} launches its collectives after the others with its work on par: look at "
            "what runs between its backward and its all-reduce (a DDP communication hook, "
            "gradient compression, a per-bucket callback, logging), its NIC or link (`ibstat`, "
            "NCCL_DEBUG=INFO) and, on GPUs, a stream that launches the collective late."
        )
    if phase in ("forward", "backward"):
        if gpu:
            return (
                f"Check {who}: SM clock and throttle reasons in the telemetry (thermal, power "
                "cap; `nvidia-smi -q -d PERFORMANCE,CLOCK,TEMPERATURE`), other processes on "
                "that GPU (`nvidia-smi`), its PCIe/NVLink link; if the hardware is healthy, "
                "look for uneven inputs on that rank (longer sequences, larger batch)."
            )
        return (
            f"Check the host of {who}: CPU frequency scaling and other processes on its cores "
            "(`top`, `lscpu`), OMP_NUM_THREADS and core pinning (`taskset`/`numactl`) so ranks "
            "do not share cores; if the host is healthy, look for uneven inputs on that rank."
        )
    if phase == "data":
        return (
            f"{who} waits on its DataLoader: raise num_workers, set pin_memory=True and "
            "persistent_workers=True, prefetch_factor >= 4; check that rank's storage or "
            "network read speed and that its data shard is not larger than the others."
        )
    if phase == "optimizer":
        return (
            f"The optimizer step on {who} is slower: use the fused/foreach optimizer "
            "implementation (`fused=True`), check for CPU offload or host contention on that "
            "rank."
        )
    return (
        f"{who} loses the time outside the marked phases: look for extra work on that rank "
        "(logging, checkpointing, evaluation, host syncs) and mark phases with "
        "`record_function` ranges to narrow it down."
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
    evidence = [f"ranks wait for peers {share_text(i.stall)} of the step (mean over ranks)"]
    if i.verdict is not None:
        evidence.append(f"no single straggler: {verdict_words.summary(i.verdict)}")
    spread, least = waits_spread(i.rank_waits)
    if i.rank_waits:
        evidence.append(
            "wait for peers by rank (share of its own step): "
            + ", ".join(f"rank {r} {share_text(e)}" for r, e in sorted(i.rank_waits.items()))
        )
    if i.compute_spread_frac is not None:
        evidence.append(
            f"compute time differs between the fastest and slowest rank by "
            f"{pct(i.compute_spread_frac)} of the step (median over steps)"
        )
    if i.verdict is not None and i.verdict.host_bound and i.verdict.candidate_rank is not None:
        who = _who(i.device_type, i.verdict.candidate_rank)
        title = f"Ranks wait for {who}, which the host held back (it waited for a CPU)"
        fix = HOST_FIX.format(who=who)
    elif i.verdict is not None and i.verdict.significant:
        title = "Waiting for peers: the slowest rank's own work is disputed by other evidence"
        fix = (
            "The own-work test found a slower rank but another check points elsewhere (see the "
            "verdict): profile again with more steps (--profile-steps) on a quiet machine "
            "before acting on one rank."
        )
    elif not spread and least is not None:
        who = _who(i.device_type, least)
        title = f"Ranks wait for {who}, though its measured work is not significantly slower"
        fix = (
            f"{who} is late outside the work the timers measure, or by too little per step for "
            "the test: check its host (other processes on its cores, CPU frequency, "
            "`top`/`lscpu`), logging or host syncs on that rank, and measure more steps "
            "(--steps) so a smaller gap can be tested."
        )
    else:
        title = "Load imbalance: ranks take turns waiting for each other"
        fix = (
            "Give every rank the same work per step: equal batch sizes (DistributedSampler with "
            "drop_last=True), sequences bucketed or padded to equal lengths per step "
            "(length-grouped sampling), no rank-dependent extra work; check dynamic shapes or "
            "expert routing that vary by rank."
        )
    return RankedFinding(title, i.stall, evidence, fix, "load_imbalance")


# a tp, pp or hybrid cell's communication is not DDP's gradient all-reduce: other remedies
MODEL_PARALLEL_FIX = {
    "tp": (
        "Tensor-parallel all-reduces sit inside every layer's forward and backward, on the "
        "critical path: keep each TP group inside one node (NVLink), use a smaller tp with "
        "more data parallelism (hybrid fsdp_tp) if memory allows, and consider sequence "
        "parallelism (reduce-scatter + all-gather, less activation memory); on CPU/gloo TP "
        "communication is rarely worth it beyond measuring."
    ),
    "pp": (
        "Pipeline transfers and waits between stages: more micro-batches, the 1f1b or "
        "interleaved_1f1b schedule, and stages of equal cost (see parallel.stages in the "
        "benchmark result)."
    ),
    "hybrid": (
        "A 2-D mesh communicates on both axes: keep the inner axis (tp or pp) inside a node "
        "and the data-parallel axis across nodes, and compare with the pure layouts in the "
        "report's strategies view before tuning collectives."
    ),
}


def _exposed_comm(i: FindingInputs) -> RankedFinding | None:
    if i.exposed_transfer is None:
        return None
    b = _backend_word(i.backend)
    how = (
        "waiting for peers excluded"
        if i.waits_known
        else "may include waiting for peers: no other rank matched to separate it"
    )
    evidence = [
        f"exposed transfer (communication with nothing computing, {how}): "
        f"{share_text(i.exposed_transfer)} of the step"
    ]
    if i.comm_frac is not None:
        evidence.append(f"all communication, hidden or not: {pct(i.comm_frac)} of the step")
    if i.overlap_pct is not None:
        evidence.append(
            f"compute/communication overlap: {spelled.percent_whole(i.overlap_pct)} of the "
            "communication time "
            "(HTA definition)"
        )
    model_parallel = MODEL_PARALLEL_FIX.get(i.strategy or "")
    # which network interface carries the traffic is a question only across hosts
    across = "" if i.nodes == 1 else ("across hosts, " if i.nodes is None else "")
    if model_parallel is not None:
        fix = model_parallel
    elif i.device_type == "cpu" or (i.backend or "").lower().startswith("gloo"):
        interface = (
            "" if i.nodes == 1 else f"; {across}set GLOO_SOCKET_IFNAME to the fast interface"
        )
        fix = (
            "Hide or shrink gradient communication: DDP bucket_cap_mb (smaller buckets start "
            "earlier and overlap more of backward; larger ones cut per-call overhead), "
            "gradient_as_bucket_view=True, gradient accumulation under no_sync(), a bf16/fp16 "
            f"compression comm hook{interface}."
        )
    else:
        transport = (
            ""
            if i.nodes == 1
            else f" {across.capitalize()}check NCCL uses the fast transport (NCCL_DEBUG=INFO; "
            "NCCL_IB_HCA / NCCL_SOCKET_IFNAME; do not force NCCL_ALGO/NCCL_PROTO)."
        )
        fix = (
            "Hide or shrink gradient communication: tune DDP bucket_cap_mb, set "
            "gradient_as_bucket_view=True and static_graph=True, accumulate gradients under "
            "no_sync(), register a bf16 compression comm hook; for FSDP enable "
            f"forward/backward prefetch.{transport}"
        )
    title = f"Exposed {b + ' ' if b else ''}communication"
    return RankedFinding(title, i.exposed_transfer, evidence, fix, "exposed_comm")


def _data_wait(i: FindingInputs) -> RankedFinding | None:
    if i.data is None:
        return None
    evidence = [
        f"waiting for data with nothing else running: {share_text(i.data)} of the step (mean over "
        "ranks)"
    ]
    if i.data_wait_worst is not None and i.ranks > 1:
        r, f = i.data_wait_worst
        evidence.append(f"slowest: {_who(i.device_type, r)} at {pct(f)} of its step")
    return RankedFinding(
        "Training waits for data",
        i.data,
        evidence,
        "Feed the loop ahead of time: DataLoader num_workers > 0 (about the cores per rank), "
        "pin_memory=True with .to(device, non_blocking=True), persistent_workers=True, "
        "prefetch_factor 4; move decoding and augmentation out of the step.",
        "data_wait",
    )


def _host_bound(i: FindingInputs) -> RankedFinding | None:
    if i.host_wait is None or i.device_type == "cpu":
        return None
    return RankedFinding(
        f"{_device_word(i.device_type)} idle waiting for the host to launch work",
        i.host_wait,
        [
            f"the device idles with nothing queued {share_text(i.host_wait)} of the step (part of "
            "the step model's rest: the next kernel was launched only after the previous one "
            "ended)"
        ],
        "Give the device more work per launch: a larger batch per GPU, CUDA graphs "
        "(torch.compile(mode='reduce-overhead')), torch.compile to fuse small kernels, and no "
        "host syncs (.item(), .cpu(), printing tensors) inside the step.",
        "host_bound",
    )


# a GPU whose step's FLOPs at its peak fill under this share of the step is host-bound by
# arithmetic alone (results without a busy probe): even at 100x below peak it would idle
HOST_BOUND_MFU = 0.01
HOST_BOUND_TITLE = "host-bound"  # every host-bound verdict's title starts so (one per cell)
# the host-bound verdict's cost estimators: the stored fields that tell it from the other
# host_bound-category finding (the device idling for launches, a part of the step model)
BUSY_COST = "1 - the GPU's busy share of the median step"
ARITHMETIC_COST = "at most 1 - MFU (by arithmetic)"
HOST_BOUND_FIX = (
    "Give the GPU more work per launch: a bigger batch or model, CUDA graphs "
    "(torch.compile mode='reduce-overhead'), or torch.compile to cut launches; a host-bound "
    "step is noisier, so judge its spread after that."
)
# a compiled cell has had its launches cut once already
HOST_BOUND_FIX_COMPILED = (
    "Give the GPU more work per launch: a bigger batch or model, or CUDA graphs "
    "(torch.compile mode='reduce-overhead'; this cell was compiled in the default mode); a "
    "host-bound step is noisier, so judge its spread after that."
)


def host_bound_finding(
    *,
    busy_share: float | None,
    mfu: float | None,
    method: str,
    gpu_busy_s: float | None = None,
    step_s: float | None = None,
    compiled: bool = False,
    mfu_interval: Estimate | None = None,
    title: str = "",
) -> RankedFinding:
    """The host-bound verdict of a GPU cell as a finding: from the busy probe (`busy_share`:
    the GPU's busy time over the median step) or, without one, by arithmetic (`mfu`: the
    step's FLOPs at the GPU's peak over the step, under HOST_BOUND_MFU); `compiled`: the cell
    ran under torch.compile, so the fix does not offer it again; `title`: the measured
    verdict's words, made by contracts/wording from its code (with `busy_share`). Its cost
    is the share of the step the GPU is not busy (by arithmetic: at most 1 - MFU, the share
    its FLOPs leave)."""
    fix = HOST_BOUND_FIX_COMPILED if compiled else HOST_BOUND_FIX
    if busy_share is not None:
        share = min(max(busy_share, 0.0), 1.0)
        evidence = [
            f"GPU busy {spelled.trace_seconds(gpu_busy_s)} of a {spelled.trace_seconds(step_s)} "
            f"step ({method})"
            if gpu_busy_s is not None and step_s is not None
            else f"GPU busy {pct(share)} of the step ({method})"
        ]
        cost = Estimate(
            value=1.0 - share,
            low=None,
            high=None,
            n=1,
            method=BUSY_COST,
            measurable=True,
            reason=None,
        )
    else:
        share = min(max(mfu or 0.0, 0.0), 1.0)
        # the MFU as the GPU table spells it, with its interval where the result has one
        known = mfu_interval is not None and mfu_interval.value is not None
        shown = share_text(mfu_interval) if known else pct_small(share)
        title = (
            f"{HOST_BOUND_TITLE} (by arithmetic): MFU {shown}, the step's FLOPs at the GPU's "
            "peak fill that share of the step; the GPU waits for Python/launches"
        )
        evidence = [
            f"MFU {shown}, under {pct(HOST_BOUND_MFU)}: at its peak the GPU would finish the "
            f"step's arithmetic in that share of the step ({method})"
        ]
        # arithmetic bounds the idle share from above only (memory traffic and launches are
        # GPU time it cannot see): the cost is not measurable, with that bound
        cost = Estimate(
            value=None,
            low=None,
            high=1.0 - share,
            n=1,
            method=ARITHMETIC_COST,
            measurable=False,
            reason="the GPU's busy time was not measured (no busy probe)",
        )
    return RankedFinding(title, cost, evidence, fix, "host_bound")


def is_host_bound_verdict(finding: Problem) -> bool:
    """The cell's host-bound verdict among its stored findings, by its fields (category and
    cost estimator), never by its words: a result stored with it, in whatever wording, is
    found again."""
    method = finding.cost_share.method if finding.cost_share is not None else None
    return finding.category == "host_bound" and method in (BUSY_COST, ARITHMETIC_COST)


def pct_small(x: float) -> str:
    """A share too small for one decimal keeps its first significant digits."""
    return pct(x) if x >= 0.001 else spelled.pct_small(x)
