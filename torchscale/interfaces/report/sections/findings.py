"""The report's findings, ranked by cost (share of the step). The report computes none of
its own about where a run's step goes: they are the run's diagnosis' (torchscale/offline/analysis/
diagnosis.py, `Diagnosis.findings`: ranked, each costing a part of the diagnosis' step split),
the same findings in the same words as the terminal.

- A profile's findings are its analysis' (the diagnosis' findings split by `--target`); its
  result.json holds the same diagnosis, so the run gives one verdict, never the phase timers'
  beside the traces'.
- A sweep cell's findings are its result's diagnosis' (schema 10).
- Added from other figures, which the diagnosis does not cover: per-rank compute slower than at
  the smallest world size (`slowdown_finding`) and GPU clocks throttled during the windows
  (`throttling_finding`); a straggler an injected delay made is marked artificial.
- Every finding of a run carries its busy-machine caveat (`Diagnosis.caveat`), shown with it on
  every surface.

A step model stored without findings is read with those its parts give by the diagnosis' rule
(`offline/results/upgrades/stored_model.py`). A result without a step model has only point
figures: for those only, findings come from the point figures
(`older_result_findings`, used only where a figure can be a share of the step, in [0, 1]),
with the thresholds below.

Shared by the summary (top lines) and the bottlenecks section (all of them)."""

from __future__ import annotations

import re

from torchscale.contracts.schema.cell_result import CellResult, Finding
from torchscale.interfaces.report.model import ReportFinding
from torchscale.interfaces.report.sections.context import (
    Context,
    ProfileRef,
    cost_severity,
    fmt,
    integer,
    ranks,
    records,
)
from torchscale.offline.analysis.diagnosis.findings import MIN_COST_FRACTION
from torchscale.offline.analysis.numbers import finite

GROUP = ("experiment", "model_label", "batch_size", "precision", "strategy", "device")
SLOWDOWN_MIN = 0.10  # per-rank compute beyond the smallest world size's (not in the diagnosis)
# the older derivation's thresholds (results older than schema 10 only): below these shares of
# the step a figure was noise or not worth a finding
STRAGGLER_MIN = 0.05  # load imbalance: the other ranks' wait for the slowest
EXPOSED_COMM_MIN = 0.10  # communication not hidden behind compute
DATA_WAIT_MIN = 0.10  # waiting for the next batch (input pipeline)


def caveat_of(result: CellResult) -> str | None:
    """The run's busy-machine caveat: its diagnosis'."""
    return result.diagnosis.caveat if result.diagnosis is not None else None


def no_finding_text(ctx: Context) -> str:
    """What 'no finding' means for these runs: no diagnosis finding, no slowdown, no
    throttling (and the point figures' thresholds where runs without a diagnosis are among
    them)."""
    text = (
        "no run's diagnosis found a cost of at least "
        f"{fmt(MIN_COST_FRACTION, 'ratio_pct')} of the step above noise, no per-rank compute "
        f"slowdown above {fmt(SLOWDOWN_MIN, 'ratio_pct')} of the step and no throttled GPU"
    )
    without = [r for r in (ctx.result(row) for row in records(ctx.ok)) if r.diagnosis is None]
    if without:
        text += (
            f"; results older than schema 10 ({len(without)}): no straggler wait above "
            f"{fmt(STRAGGLER_MIN, 'ratio_pct')}, exposed communication above "
            f"{fmt(EXPOSED_COMM_MIN, 'ratio_pct')} or data wait above "
            f"{fmt(DATA_WAIT_MIN, 'ratio_pct')} of the step"
        )
    return text


def _injected_note(result: CellResult, rank: int | None) -> str | None:
    for delay in result.injected_delays:
        if rank is None or delay.rank == rank:
            return (
                f"artificial: --inject-delay made rank {delay.rank} sleep {delay.ms:g} ms in "
                f"its {delay.phase} phase every step"
            )
    return None


# what an artificial straggler asks of the reader: nothing about the host (its advice to check
# the host's cores and clocks would send them after a delay the run made itself)
INJECTED_ADVICE = (
    "Nothing to fix on the machine: this straggler is artificial (--inject-delay); run "
    "without it to measure the host."
)
INJECTED_GENERIC = "artificial: --inject-delay delayed this rank on purpose"


def diagnosis_finding(
    item: Finding,
    *,
    source: str,
    caveat: str | None,
    injected: CellResult | None = None,
    straggler_rank: int | None = None,
    verdict_injected: bool = False,
) -> ReportFinding:
    """One of a diagnosis' findings as the report shows it: its own title, cost, evidence and
    fix; the caveat as its own field (not repeated in the evidence); marked artificial, with
    no advice about the host, when the run's own --inject-delay makes the straggler (the
    verdict says so from schema 14, `verdict_injected`; older results: a delay of
    `injected` on the straggler's rank)."""
    evidence = [line for line in item.evidence if line != caveat]
    title, severity = item.title, cost_severity(item.cost_pct)
    advice = item.recommendation
    if item.category == "straggler":
        note = _injected_note(injected, straggler_rank) if injected is not None else None
        if note is None and verdict_injected:
            note = INJECTED_GENERIC
        if note is not None:
            evidence.insert(0, note)
            severity = "info"
            title = f"{title} (injected delay)"
            advice = INJECTED_ADVICE
    return ReportFinding(
        title=title,
        cost_pct=item.cost_pct,
        source=source,
        evidence=evidence,
        recommendation=advice,
        severity=severity,
        caveat=caveat,
    )


def profile_findings(ref: ProfileRef) -> list[ReportFinding]:
    """A profile's findings as its analysis holds them (the diagnosis' findings for its
    target), with its caveat, marked artificial when an injected delay makes the straggler."""
    analysis, diagnosis = ref.entry.analysis, ref.diagnosis
    verdict = diagnosis.straggler if diagnosis is not None else None
    if verdict is not None and verdict.named:
        rank = verdict.rank
    else:
        rank = analysis.straggler.rank if analysis.straggler else None
    caveat = diagnosis.caveat if diagnosis is not None else None
    result = ref.entry.result
    if caveat is None and result is not None:
        caveat = caveat_of(result)
    found = [
        diagnosis_finding(
            item,
            source=ref.label,
            caveat=caveat,
            injected=result,
            straggler_rank=rank,
            verdict_injected=bool(verdict is not None and verdict.injected),
        )
        for item in analysis.findings
    ]
    return found if result is None else [applicable(f, result) for f in found]


def cell_findings(result: CellResult, label: str) -> list[ReportFinding]:
    """A sweep cell's diagnosis' findings (schema 10), in its order."""
    diagnosis = result.diagnosis
    if diagnosis is None:
        return []
    verdict = diagnosis.straggler
    rank = verdict.rank if verdict is not None and verdict.named else None
    return [
        diagnosis_finding(
            item,
            source=label,
            caveat=diagnosis.caveat,
            injected=result,
            straggler_rank=rank,
            verdict_injected=bool(verdict is not None and verdict.injected),
        )
        for item in diagnosis.findings
    ]


# ------------------------------------------------- older results (before schema 10) only

DEVICE_AND_HOST_ADVICE = (
    "its device and host: clocks and throttling on GPUs, other processes and core pinning "
    "(OMP_NUM_THREADS, taskset/numactl) on CPU; then uneven inputs on that rank"
)
PHASE_ADVICE = {
    "data": "its input pipeline: more DataLoader workers, pinned memory, faster storage",
    "forward": DEVICE_AND_HOST_ADVICE,
    "backward": DEVICE_AND_HOST_ADVICE,
    "optimizer": "host-side work in its optimizer step (offload, non-fused optimizer) and its "
    "device",
}


def older_straggler_finding(result: CellResult, label: str, source: str) -> ReportFinding | None:
    """Results older than schema 10 only. The straggler: named by the significance test where
    the result has the step model (schema 8-9); in older results the one the phase timers
    found, when the others wait for it long enough (load imbalance >= STRAGGLER_MIN of the
    step, and a share it can have)."""
    straggler, comm = result.straggler, result.communication
    imbalance = finite(comm.load_imbalance) if comm else None
    if straggler is None or imbalance is None or not STRAGGLER_MIN <= imbalance <= 1.0:
        return None
    rank = straggler.rank
    title = f"{label}: rank {rank} is the straggler"
    evidence = [
        f"compute time ({straggler.basis}): rank {rank} {fmt(straggler.compute_s, 'seconds')} "
        f"against {fmt(straggler.others_compute_s, 'seconds')} for the other ranks (median)"
    ]
    if straggler.phase is not None and straggler.gap_s is not None:
        title += f", slow in {straggler.phase}"
        evidence.append(
            f"its {straggler.phase} phase takes {fmt(straggler.gap_s, 'seconds')} longer than "
            "the other ranks' (phase timers, medians)"
        )
    waits = [
        f"rank {r.rank} {fmt(r.phases.grad_sync_wait, 'seconds')}"
        for r in result.ranks
        if r.phases is not None and r.phases.grad_sync_wait is not None
    ]
    if waits:
        evidence.append(f"grad-sync wait per step: {', '.join(waits)}")
    evidence.append(f"the other ranks wait for it {fmt(imbalance, 'ratio_pct')} of each step")
    note = _injected_note(result, rank)
    if note is not None:
        evidence.insert(0, note)
        title += " (injected delay)"
    advice = PHASE_ADVICE.get(straggler.phase or "", PHASE_ADVICE["backward"])
    return ReportFinding(
        title=title,
        cost_pct=imbalance * 100,
        source=source,
        evidence=evidence,
        recommendation=INJECTED_ADVICE if note else f"Check rank {rank}: {advice}.",
        severity="info" if note else cost_severity(imbalance * 100),
    )


def _exposed_comm(
    result: CellResult, label: str, share: float, evidence: list[str]
) -> ReportFinding:
    return ReportFinding(
        title=f"{label}: exposed communication {fmt(share, 'ratio_pct')} of each step",
        cost_pct=share * 100,
        source=label,
        evidence=evidence,
        recommendation=_comm_advice(result),
        severity=cost_severity(share * 100),
    )


def _comm_advice(result: CellResult) -> str:
    network = (
        "set GLOO_SOCKET_IFNAME to the fast interface"
        if result.cell.backend == "gloo"
        else "check the NCCL transport (NCCL_DEBUG=INFO: NVLink/IB, not sockets)"
    )
    return (
        "Hide or shrink gradient communication: DDP bucket_cap_mb, gradient_as_bucket_view, "
        f"gradient accumulation under no_sync(), a bf16 compression hook; {network}."
    )


def older_exposed_comm_finding(result: CellResult, label: str) -> ReportFinding | None:
    """Results older than schema 10 only. Exposed communication: the step model's exposed
    transfer (schema 8-9), or an older result's point figure when it is a share it can have."""
    comm = result.communication
    share = finite(comm.comm_overhead) if comm else None
    if comm is None or share is None or not EXPOSED_COMM_MIN <= share <= 1.0:
        return None
    evidence = [
        f"median step {fmt(comm.step_time_s, 'seconds')}, slowest rank's compute "
        f"{fmt(comm.slowest_compute_s, 'seconds')} (no_sync): "
        f"{fmt(comm.exposed_comm_s, 'seconds')} of communication is not hidden",
    ]
    imbalance = finite(comm.load_imbalance)
    if imbalance is not None and 0.0 <= imbalance <= 1.0:
        evidence.append(f"load imbalance {fmt(imbalance, 'ratio_pct')} of the step")
    evidence.append("older result: point figures, no interval")
    return _exposed_comm(result, label, share, evidence)


def older_data_wait_finding(result: CellResult, label: str) -> ReportFinding | None:
    """Results older than schema 10 only. The step waits for its batch: the DataLoader or the
    storage under it is the bottleneck (never for synthetic data, made on the device once)."""
    data = result.data
    share = finite(data.share) if data else None
    if data is None or data.source == "synthetic" or share is None:
        return None
    if not DATA_WAIT_MIN <= share <= 1.0:
        return None
    evidence = [
        f"{data.source} data: the slowest rank waits {fmt(data.wait_s, 'seconds')} per "
        f"step for its batch ({fmt(share, 'ratio_pct')} of the median step)",
    ]
    if data.read_bytes_per_s is not None:
        evidence.append(f"read {data.read_bytes_per_s / 1e6:.1f} MB/s over the measured windows")
    workers = f"{data.num_workers} worker(s)" if data.num_workers is not None else "the workers"
    return ReportFinding(
        title=f"{label}: input pipeline waits {fmt(share, 'ratio_pct')} of each step",
        cost_pct=share * 100,
        source=label,
        evidence=evidence,
        recommendation=f"Feed the GPUs faster: more DataLoader workers than {workers}, "
        "pin_memory with non-blocking copies, a larger prefetch_factor, faster or local "
        "storage (copy the dataset to NVMe), or decode and augment on the GPU.",
        severity=cost_severity(share * 100),
    )


def slowdown_finding(
    result: CellResult, label: str, base: CellResult, base_label: str
) -> ReportFinding | None:
    """Each rank computes slower than the same batch per GPU did at the smallest world size:
    ranks compete for something (cores, memory bandwidth, clocks)."""
    comm, cell = result.communication, result.cell
    slowest = finite(comm.slowest_compute_s) if comm else None
    step = finite(comm.step_time_s) if comm else None
    if base.cell.world_size == 1:
        before = finite(base.step_time.p50) if base.step_time else None
    else:
        before = finite(base.communication.slowest_compute_s) if base.communication else None
    if slowest is None or step is None or before is None or step <= 0 or before <= 0:
        return None
    share = (slowest - before) / step
    if share < SLOWDOWN_MIN:
        return None
    device_advice = (
        "on CPU, give each rank its own cores (OMP_NUM_THREADS x ranks per host <= cores, "
        "pinning with taskset/numactl)"
        if cell.device == "cpu"
        else "check clocks and throttling, and host contention (data-loading threads, NUMA "
        "binding, PCIe sharing)"
    )
    return ReportFinding(
        title=f"{label}: each rank computes {slowest / before:.2f}x slower than at "
        f"{ranks(base.cell.world_size, base.cell.device)}",
        cost_pct=share * 100,
        source=label,
        evidence=[
            f"slowest rank's compute (no_sync) {fmt(slowest, 'seconds')} against "
            f"{fmt(before, 'seconds')} for {base_label}, with the same {cell.batch_size} "
            f"samples per {'GPU' if cell.device == 'cuda' else 'rank'}",
            f"the difference is {fmt(share, 'ratio_pct')} of the {fmt(step, 'seconds')} step",
        ],
        recommendation=f"Ranks compete for a shared resource: {device_advice}.",
        severity=cost_severity(share * 100),
    )


def throttling_finding(result: CellResult, label: str) -> ReportFinding | None:
    """GPU clocks held down by power, heat or hardware during the measured windows (the
    telemetry's clocks-event reasons). No cost: the share of samples throttled is not a share
    of the step."""
    telemetry = result.telemetry
    if telemetry is None or not telemetry.throttled:
        return None
    evidence = []
    for rank in telemetry.ranks:
        if not rank.throttle_reasons:
            continue
        line = (
            f"rank {rank.rank} ({rank.gpu_name or rank.device}): "
            f"{', '.join(rank.throttle_reasons)} set in "
            f"{fmt(rank.throttled_fraction, 'ratio_pct')} of {rank.samples} samples"
        )
        if rank.sm_clock_mhz is not None:
            line += f"; SM clock mean {rank.sm_clock_mhz.mean:.0f} MHz"
        if rank.temperature_c is not None:
            line += f", up to {rank.temperature_c.max:.0f} C"
        if rank.power_w is not None:
            line += f", power mean {rank.power_w.mean:.0f} W"
        evidence.append(line)
    evidence.append(
        f"sampled every {telemetry.interval_ms} ms over {telemetry.windows} measured window(s)"
    )
    return ReportFinding(
        title=f"{label}: GPU clocks throttled ({', '.join(telemetry.throttle_reasons)})",
        cost_pct=None,
        source=label,
        evidence=evidence,
        recommendation="The figures were measured below full clocks. Thermal reasons point at "
        "cooling or airflow, SwPowerCap at the power limit (`nvidia-smi -q -d "
        "PERFORMANCE,POWER,TEMPERATURE`); in a multi-GPU cell a throttled GPU becomes the "
        "straggler every rank waits for.",
        severity="warn",
    )


def _weak_bases(ctx: Context) -> dict[tuple[object, ...], CellResult]:
    """(experiment, model, batch, precision, strategy, device) -> the ok cell at the smallest
    world size of that group."""
    bases: dict[tuple[object, ...], CellResult] = {}
    ok = ctx.ok.sort_values(["world_size", "cell_id"], kind="stable")
    for row in records(ok):
        bases.setdefault(_group(row), ctx.result(row))
    return bases


def _group(row: dict[str, object]) -> tuple[object, ...]:
    return tuple(row[c] for c in GROUP)


def rank_findings(findings: list[ReportFinding]) -> list[ReportFinding]:
    """Highest cost first; findings without a cost last; ties by title."""
    return sorted(
        findings, key=lambda f: (f.cost_pct is None, -(f.cost_pct or 0.0), f.title, f.source)
    )


def older_result_findings(result: CellResult, label: str) -> list[ReportFinding]:
    """The fallback for a result older than schema 10, which stored no findings with its step
    model: the older derivation (data wait; with two ranks or more the straggler and exposed
    communication), from its step model (schema 8-9) or its point figures (7 and older)."""
    found = [older_data_wait_finding(result, label)]
    if result.cell.world_size >= 2:
        found += [
            older_straggler_finding(result, label, label),
            older_exposed_comm_finding(result, label),
        ]
    return [f for f in found if f is not None]


# where the whole advice is read: the first screen gives its first words only
HOW = "how: the Bottlenecks section, with --full"


def action_text(finding: ReportFinding) -> str:
    """A finding as the first screen's 'What to do' line, in plain words: its title, cost and
    the plain first clause of its advice ('Exposed gloo communication (70.7 % of the step):
    hide or shrink gradient communication (how: ...)'); the technical detail after the
    clause (bucket_cap_mb, no_sync(), comm hooks) stays with the finding in Bottlenecks."""
    cost = f" ({finding.cost_pct:.1f} % of the step)" if finding.cost_pct is not None else ""
    advice = short_advice(finding.recommendation)
    if not advice:
        return f"{finding.title}{cost}"
    return f"{finding.title}{cost}: {advice[:1].lower()}{advice[1:]} ({HOW})"


def short_advice(recommendation: str | None) -> str:
    """The plain first clause of a recommendation: every finding's advice reads 'what to do:
    how, in technical terms' ('Hide or shrink gradient communication: DDP bucket_cap_mb
    ...')."""
    if not recommendation:
        return ""
    return recommendation.split(": ", 1)[0].split("; ", 1)[0].rstrip(".")


def _with_caveat(findings: list[ReportFinding], caveat: str | None) -> list[ReportFinding]:
    if caveat is None:
        return findings
    return [f if f.caveat else f.model_copy(update={"caveat": caveat}) for f in findings]


def collect_findings(ctx: Context) -> list[ReportFinding]:
    """Every run's findings, ranked by cost: each profile's (its diagnosis', one verdict per
    run: the profile's result.json is not read for a second one), each ok sweep cell's
    diagnosis' (older results: `older_result_findings`), and per cell what the diagnosis does
    not cover (throttling, a slowdown against the smallest world size)."""
    findings: list[ReportFinding] = []
    for ref in ctx.profiles:
        findings += profile_findings(ref)
    bases = _weak_bases(ctx)
    for row in records(ctx.ok):
        result, label = ctx.result(row), ctx.label(row)
        found = [throttling_finding(result, label)]
        if result.diagnosis is not None:
            found += cell_findings(result, label)
        else:
            found += older_result_findings(result, label)
        if (integer(row["world_size"]) or 0) >= 2:
            base = bases.get(_group(row))
            if base is not None and base.cell.world_size < result.cell.world_size:
                base_label = ctx.result_label(str(row["experiment"]), base)
                found.append(slowdown_finding(result, label, base, base_label))
        kept = [applicable(f, result) for f in found if f is not None]
        findings += _with_caveat(kept, caveat_of(result))
    return rank_findings(findings)


# advice that applies only to some runs, as the findings word it (also in results stored
# before the findings were conditioned): which network interface carries the traffic is a
# question only across hosts; an equal batch per rank is given by synthetic data already
_INTERFACE = re.compile(
    r";? ?(?:across hosts, )?(?:set (?:GLOO|NCCL)_SOCKET_IFNAME to the fast interface"
    r"|check the NCCL transport \(NCCL_DEBUG=INFO: NVLink/IB, not sockets\))"
)
_SAMPLER = re.compile(r" ?\(DistributedSampler with drop_last=True\)")


def applicable(finding: ReportFinding, result: CellResult) -> ReportFinding:
    """`finding` without the advice that does not apply to its run: no socket-interface
    advice on one host, no DistributedSampler(drop_last) for synthetic batches (every rank
    makes the same fixed-size batch)."""
    advice = finding.recommendation
    if not advice:
        return finding
    if (result.cell.nodes or 1) == 1:
        advice = _INTERFACE.sub("", advice)
    if result.data is not None and result.data.source == "synthetic":
        advice = _SAMPLER.sub("", advice)
    if advice == finding.recommendation:
        return finding
    return finding.model_copy(update={"recommendation": advice})
