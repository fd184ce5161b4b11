"""Ranked findings: what costs the most cycle time, the evidence, and the fix.

Each finding carries `cost_fraction`, the share of the cycle (median step time) it costs.
Findings under MIN_COST_FRACTION (2 %) are not reported: below that, run-to-run noise of a
profiled step is as large as the effect, and a fix would not show. Costs are estimates from
different angles and may overlap (a straggler's slow data loading shows as its stall cost and in
the mean data wait): rank by them, do not add them up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from torchscale.analysis.trace.collectives import SyncStall
from torchscale.analysis.trace.straggler import Straggler, StragglerAnalysis

MIN_COST_FRACTION = 0.02
PHASE_WORDS = {
    "data": "data loading",
    "forward": "forward pass",
    "backward": "backward pass",
    "optimizer": "optimizer step",
}


@dataclass
class Finding:
    """One problem: `title` names who and what, `cost_fraction` is the share of cycle time it
    costs, `evidence` the figures behind it, `recommendation` a concrete next step.
    `category`: straggler | load_imbalance | exposed_comm | data_wait | host_bound."""

    title: str
    cost_fraction: float
    evidence: list[str]
    recommendation: str
    category: str


@dataclass
class FindingInputs:
    """Summary figures the other analyses produce (fractions are of the cycle time; None: not
    measured). Build it with `finding_inputs` or by hand."""

    cycle_us: float  # median full-step time over ranks
    ranks: int
    device_type: str = "cpu"  # "cuda", "cpu", or another accelerator
    backend: str | None = None  # "nccl", "gloo", ...
    strategy: str | None = None  # the cell's (ddp, fsdp, tp, pp, hybrid) when known
    stall_frac: float | None = None  # time ranks wait for peers, exposed, mean over ranks
    straggler: Straggler | None = None
    straggler_reason: str = ""
    straggler_saving_frac: float | None = None  # what-if speed-up if the straggler caught up
    exposed_transfer_frac: float | None = None  # exposed comm that is transfer, not waiting
    waits_known: bool = False  # waits were split out of exposed_transfer_frac (ranks matched)
    comm_frac: float | None = None  # all communication time (overlapped or not)
    overlap_pct: float | None = None  # HTA overlap over all ranks and steps
    data_wait_frac: float | None = None  # data-phase time, mean over ranks
    data_wait_worst: tuple[int, float] | None = None  # (rank, fraction) of the slowest loader
    host_wait_frac: float | None = None  # GPU idle waiting for launches, mean over ranks
    compute_spread_frac: float | None = None  # median over steps of (max - min) rank compute
    notes: list[str] = field(default_factory=list)


def _mean_frac(table: pd.DataFrame, column: str) -> float | None:
    if table.empty or column not in table.columns:
        return None
    total = float(table["step_us"].sum())
    return float(table[column].sum()) / total if total > 0 else None


def finding_inputs(
    breakdowns: Mapping[int, pd.DataFrame],
    *,
    idle: pd.DataFrame | None = None,
    stall: SyncStall | None = None,
    straggler: StragglerAnalysis | None = None,
    whatif: pd.DataFrame | None = None,
    device_type: str = "cpu",
    backend: str | None = None,
    strategy: str | None = None,
) -> FindingInputs:
    """Summarise the module outputs: `breakdowns` per rank (`breakdown.rank_breakdown`),
    `idle` (`idle.idle_taxonomy`), `stall` (`collectives.sync_stall`), `straggler`
    (`straggler.attribute_straggler`), `whatif` (`whatif.what_if`)."""
    parts = [t.assign(rank=int(r)) for r, t in sorted(breakdowns.items()) if not t.empty]
    bd = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    notes: list[str] = []
    if bd.empty:
        cycle = float("nan")
        notes.append("no full steps: no findings")
    else:
        cycle = float(bd.groupby("rank")["step_us"].median().median())
    inputs = FindingInputs(
        cycle_us=cycle,
        ranks=len(breakdowns),
        device_type=device_type,
        backend=backend,
        strategy=strategy,
        notes=notes,
    )
    if not bd.empty:
        inputs.comm_frac = _mean_frac(bd, "comm_us")
        comm = float(bd["comm_us"].sum())
        if comm > 0:
            overlap = float((bd["comm_us"] - bd["exposed_comm_us"]).sum())
            inputs.overlap_pct = 100.0 * overlap / comm
        inputs.data_wait_frac = _mean_frac(bd, "data_wait_us")
        per_rank = bd.groupby("rank")[["data_wait_us", "step_us"]].sum()
        per_rank = per_rank[per_rank["step_us"] > 0]
        if len(per_rank):
            frac = per_rank["data_wait_us"] / per_rank["step_us"]
            inputs.data_wait_worst = (int(frac.idxmax()), float(frac.max()))
        if bd["rank"].nunique() > 1:
            spread = bd.groupby("step")["compute_us"].agg(lambda s: float(s.max() - s.min()))
            counted = bd.groupby("step")["rank"].nunique() > 1
            if counted.any() and cycle > 0:
                inputs.compute_spread_frac = float(spread[counted].median()) / cycle
        inputs.exposed_transfer_frac = _mean_frac(bd, "exposed_comm_us")
    # waits are known only where collectives were matched across ranks
    inputs.waits_known = stall is not None and stall.overall_pct is not None
    if idle is not None and not idle.empty:
        inputs.exposed_transfer_frac = _mean_frac(idle, "transfer_us")
        if inputs.waits_known:
            inputs.stall_frac = _mean_frac(idle, "waiting_for_peers_us")
        if device_type != "cpu":
            inputs.host_wait_frac = _mean_frac(idle, "host_wait_us")
    if inputs.stall_frac is None and stall is not None and stall.overall_pct is not None:
        inputs.stall_frac = stall.overall_pct / 100.0
    if straggler is not None:
        inputs.straggler = straggler.straggler
        inputs.straggler_reason = straggler.reason
        if straggler.straggler is not None and whatif is not None and not whatif.empty:
            row = whatif[whatif["rank"] == straggler.straggler.rank]
            if len(row):
                inputs.straggler_saving_frac = float(row["speedup_pct"].iloc[0]) / 100.0
    return inputs


def _device_word(device_type: str) -> str:
    return "rank" if device_type == "cpu" else ("GPU" if device_type == "cuda" else "device")


def _who(device_type: str, rank: int) -> str:
    word = _device_word(device_type)
    return f"rank {rank}" if word == "rank" else f"{word}-{rank}"


def _backend_word(backend: str | None) -> str:
    if not backend:
        return ""
    b = backend.split(",")[0].split(":")[-1].strip()
    return b.upper() if b.lower() in ("nccl", "rccl", "hccl") else b


def _pct(x: float) -> str:
    return f"{100.0 * x:.1f} %"


def _us(x: float) -> str:
    return f"{x / 1000.0:.2f} ms" if abs(x) >= 1000 else f"{x:.0f} us"


def rank_findings(inputs: FindingInputs) -> list[Finding]:
    """Findings costing at least MIN_COST_FRACTION of the cycle, most expensive first."""
    if not (inputs.cycle_us > 0):
        return []
    found: list[Finding] = []
    for make in (_straggler, _imbalance, _exposed_comm, _data_wait, _host_bound):
        f = make(inputs)
        if f is not None and f.cost_fraction >= MIN_COST_FRACTION:
            found.append(f)
    return sorted(found, key=lambda f: f.cost_fraction, reverse=True)


def _straggler(i: FindingInputs) -> Finding | None:
    s = i.straggler
    if s is None:
        return None
    cost = i.straggler_saving_frac if i.straggler_saving_frac is not None else i.stall_frac
    if cost is None:
        return None
    who = _who(i.device_type, s.rank)
    prefix = " ".join(p for p in (_backend_word(i.backend), s.op) if p)
    if s.phase is not None:
        than = (
            _who(i.device_type, s.peer_rank)
            if s.peer_rank is not None
            else f"the other {_device_word(i.device_type)}s"
        )
        title = f"{prefix}: {who} finishing {PHASE_WORDS.get(s.phase, s.phase)} slower than {than}"
    else:
        title = f"{prefix}: {who} arrives last at {s.share_last:.0%} of the collectives"
    evidence = [
        f"{who} arrived last at {s.instances_last} of {s.instances} matched collectives "
        f"({s.share_last:.0%}; chance alone: {s.expected_share:.0%}, p = {s.p_value:.2g})",
        f"the other ranks waited {_us(s.mean_lateness_us)} for it on average (median over "
        "ranks, from durations: no clock alignment needed)",
    ]
    if s.mean_arrival_lateness_us is not None:
        evidence.append(
            f"on aligned clocks it started {_us(s.mean_arrival_lateness_us)} after the first "
            "arrival on average"
        )
    if s.phase is not None and s.phase_gap_us is not None:
        pct = f" ({s.phase_gap_pct:.1f} % of its step)" if s.phase_gap_pct is not None else ""
        evidence.append(
            f"its {PHASE_WORDS.get(s.phase, s.phase)} takes {_us(s.phase_gap_us)} longer than "
            f"the median of the other ranks, step by step{pct}"
        )
    elif s.phase_reason:
        evidence.append(s.phase_reason)
    if i.straggler_saving_frac is not None:
        evidence.append(
            f"what-if: had {who} arrived with the second-last rank, steps would be "
            f"{_pct(i.straggler_saving_frac)} shorter (rest of the step unchanged)"
        )
    if i.stall_frac is not None:
        evidence.append(f"ranks wait for peers {_pct(i.stall_frac)} of the step time (exposed)")
    return Finding(title, float(cost), evidence, _straggler_fix(i, s, who), "straggler")


def _straggler_fix(i: FindingInputs, s: Straggler, who: str) -> str:
    gpu = i.device_type != "cpu"
    if s.phase in ("forward", "backward"):
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
    if s.phase == "data":
        return (
            f"{who} waits on its DataLoader: raise num_workers, set pin_memory=True and "
            "persistent_workers=True, prefetch_factor >= 4; check that rank's storage or "
            "network read speed and that its data shard is not larger than the others."
        )
    if s.phase == "optimizer":
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


def _imbalance(i: FindingInputs) -> Finding | None:
    if i.straggler is not None or i.stall_frac is None or i.ranks < 2:
        return None
    evidence = [
        f"ranks wait for peers {_pct(i.stall_frac)} of the step time",
        f"no single straggler: {i.straggler_reason}" if i.straggler_reason else "no straggler",
    ]
    if i.compute_spread_frac is not None:
        evidence.append(
            f"compute time differs between the fastest and slowest rank by "
            f"{_pct(i.compute_spread_frac)} of the step (median over steps)"
        )
    return Finding(
        "Load imbalance: ranks take turns waiting for each other",
        float(i.stall_frac),
        evidence,
        "Give every rank the same work per step: equal batch sizes (DistributedSampler with "
        "drop_last=True), sequences bucketed or padded to equal lengths per step "
        "(length-grouped sampling), no rank-dependent extra work; check dynamic shapes or "
        "expert routing that vary by rank.",
        "load_imbalance",
    )


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


def _exposed_comm(i: FindingInputs) -> Finding | None:
    if i.exposed_transfer_frac is None:
        return None
    b = _backend_word(i.backend)
    how = (
        "waiting for peers excluded"
        if i.waits_known
        else "may include waiting for peers: no other rank matched to separate it"
    )
    evidence = [
        f"communication not hidden behind compute: {_pct(i.exposed_transfer_frac)} of the "
        f"step ({how})"
    ]
    if i.comm_frac is not None:
        evidence.append(f"all communication: {_pct(i.comm_frac)} of the step")
    if i.overlap_pct is not None:
        evidence.append(f"compute/communication overlap: {i.overlap_pct:.0f} % (HTA definition)")
    model_parallel = MODEL_PARALLEL_FIX.get(i.strategy or "")
    if model_parallel is not None:
        fix = model_parallel
    elif i.device_type == "cpu" or (i.backend or "").lower().startswith("gloo"):
        fix = (
            "Hide or shrink gradient communication: DDP bucket_cap_mb (smaller buckets start "
            "earlier and overlap more of backward; larger ones cut per-call overhead), "
            "gradient_as_bucket_view=True, gradient accumulation under no_sync(), a bf16/fp16 "
            "compression comm hook; set GLOO_SOCKET_IFNAME to the fast interface."
        )
    else:
        fix = (
            "Hide or shrink gradient communication: tune DDP bucket_cap_mb, set "
            "gradient_as_bucket_view=True and static_graph=True, accumulate gradients under "
            "no_sync(), register a bf16 compression comm hook; for FSDP enable "
            "forward/backward prefetch. Check NCCL uses the fast transport (NCCL_DEBUG=INFO; "
            "NCCL_IB_HCA / NCCL_SOCKET_IFNAME; do not force NCCL_ALGO/NCCL_PROTO)."
        )
    title = f"Exposed {b + ' ' if b else ''}communication"
    return Finding(title, float(i.exposed_transfer_frac), evidence, fix, "exposed_comm")


def _data_wait(i: FindingInputs) -> Finding | None:
    if i.data_wait_frac is None:
        return None
    evidence = [f"data loading takes {_pct(i.data_wait_frac)} of the step (mean over ranks)"]
    if i.data_wait_worst is not None and i.ranks > 1:
        r, f = i.data_wait_worst
        evidence.append(f"slowest: {_who(i.device_type, r)} at {_pct(f)}")
    return Finding(
        "Training waits for data",
        float(i.data_wait_frac),
        evidence,
        "Feed the loop ahead of time: DataLoader num_workers > 0 (about the cores per rank), "
        "pin_memory=True with .to(device, non_blocking=True), persistent_workers=True, "
        "prefetch_factor 4; move decoding and augmentation out of the step.",
        "data_wait",
    )


def _host_bound(i: FindingInputs) -> Finding | None:
    if i.host_wait_frac is None or i.device_type == "cpu":
        return None
    return Finding(
        f"{_device_word(i.device_type)} idle waiting for the host to launch work",
        float(i.host_wait_frac),
        [
            f"the device idles with nothing queued {_pct(i.host_wait_frac)} of the step "
            "(the next kernel was launched only after the previous one ended)"
        ],
        "Give the device more work per launch: a larger batch per GPU, CUDA graphs "
        "(torch.compile(mode='reduce-overhead')), torch.compile to fuse small kernels, and no "
        "host syncs (.item(), .cpu(), printing tensors) inside the step.",
        "host_bound",
    )


def cost_table(findings: list[Finding]) -> pd.DataFrame:
    """Findings as a table: title, category, cost_pct."""
    return pd.DataFrame(
        {
            "title": [f.title for f in findings],
            "category": [f.category for f in findings],
            "cost_pct": np.asarray([100.0 * f.cost_fraction for f in findings], dtype=float),
        }
    )
