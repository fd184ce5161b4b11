"""Rank 0 turns every rank's measurements into one CellResult. Pure: no torch.distributed.

Straggler and communication (docs/methodology.md, "Stragglers, load imbalance and exposed
communication"): under gradient sync every rank's step takes the same time T, so step times
cannot tell which rank is slow. Each rank's compute time can: its median step under DDP
no_sync() (every rank runs free, no gradient all-reduce), or, without that window, the sum of
its phase medians that contain no wait for other ranks. The straggler is the rank with the
highest compute time; T splits into that rank's compute, the wait of every other rank for it
(load imbalance) and the communication exposed beyond it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from torchscale.analysis.stats import median_and_spread, step_stats
from torchscale.cell import Status
from torchscale.data.pipeline import SETTINGS_KEY
from torchscale.results.schema import (
    CellResult,
    Communication,
    Compute,
    DataPipeline,
    InjectedDelay,
    Memory,
    PhaseTimes,
    ProfileRecord,
    RankStats,
    Straggler,
    Telemetry,
    Throughput,
)
from torchscale.telemetry.summary import combine
from torchscale.worker.allocator import AllocatorStats
from torchscale.worker.measure import RankMeasurement
from torchscale.worker.parallel_metrics import parallel_metrics, warmup_record
from torchscale.worker.phases import COMPUTE_PHASES, PHASES, medians
from torchscale.worker.spec import WorkerSpec

WORLD_ONE = "world size 1: no other rank to wait for, no gradient communication to expose"
FSDP_NO_COMPUTE = (
    "FSDP: no compute-only time per rank (no no_sync window, and its forward and backward "
    "phases contain all-gather/reduce-scatter waits); profile the cell to find a straggler"
)
NO_SYNC_OFF = "measurement.comm_overhead is off (no no_sync window): no compute-only step time"
NO_PHASES = "no phase timing with backward split at the last gradient on every rank"
NO_ALLOCATOR = "no CUDA caching allocator on CPU (torch.cuda.memory_stats is CUDA only)"
TELEMETRY_OFF = "measurement.telemetry.enabled is false"
ALLOCATOR_FIELDS = ("alloc_retries", "oom_count", "fragmentation", "inactive_split_peak_bytes")
DATA_KEY = SETTINGS_KEY  # the trainer's settings entry with the input pipeline's facts
NOTHING_READ = "synthetic batches are made on the device: nothing is read"
NO_DATA_PHASE = "no phase timing: the data wait was not measured"


@dataclass(frozen=True)
class CellFacts:
    """What rank 0 knows besides the measurements."""

    parameters: int
    model_kind: str
    tokens_per_sample: int | None
    device_name: str  # "cpu" or the CUDA device name
    peak_tflops: float | None
    peak_note: str | None  # why there is no peak (peak_tflops None)
    environment: dict[str, Any]
    fused_optimizer: bool
    channels_last: bool
    peak_basis: str | None = None  # which peak: GPU, dtype and why (e.g. TF32 convolutions)


def achieved_tflops(
    flops_per_step: float, samples_per_s_per_device: float, samples_per_rank_step: float
) -> float:
    """Achieved TFLOP/s per device over the timed windows: FLOPs per optimizer step times the
    steps per second that the throughput figure implies, so MFU and throughput always agree."""
    return flops_per_step * samples_per_s_per_device / samples_per_rank_step / 1e12


@dataclass(frozen=True)
class ComputeTimes:
    """Each rank's compute time (seconds) and what it was taken from."""

    per_rank: dict[int, float]
    basis: Literal["no_sync", "phases"]


def rank_phase_medians(rank: RankMeasurement) -> dict[str, float | None] | None:
    """Median per phase over the rank's synchronised windows; None without phase timing."""
    windows = [w.phases for w in rank.windows if w.phases is not None]
    return medians(windows) if windows else None


def compute_times(
    spec: WorkerSpec,
    ranks: Sequence[RankMeasurement],
    phases: dict[int, dict[str, float | None] | None],
) -> tuple[ComputeTimes | None, str | None]:
    """Per-rank compute times, or why there are none. The no_sync window when every rank ran
    one; else the sum of each rank's data, forward, backward-compute and optimizer medians,
    when backward could be split at the last gradient (else backward holds sync waits)."""
    if len(ranks) == 1:
        return None, WORLD_ONE
    if all(r.no_sync is not None and r.no_sync.step_s for r in ranks):
        return ComputeTimes(
            {r.rank: statistics.median(r.no_sync.step_s) for r in ranks if r.no_sync},
            "no_sync",
        ), None
    if spec.cell.strategy == "fsdp":
        return None, FSDP_NO_COMPUTE
    sums: dict[int, float] = {}
    for r in ranks:
        medians_r = phases.get(r.rank)
        if medians_r is None or medians_r.get("grad_sync_wait") is None:
            return None, f"{NO_SYNC_OFF}, and {NO_PHASES}"
        values = [medians_r.get(phase) for phase in COMPUTE_PHASES]
        sums[r.rank] = sum(v for v in values if v is not None)
    return ComputeTimes(sums, "phases"), None


def find_straggler(
    compute: ComputeTimes,
    phases: dict[int, dict[str, float | None] | None],
    injected: Sequence[int] = (),
) -> Straggler:
    """The rank with the highest compute time (ties: the lowest rank), and its slow phase: the
    phase whose median exceeds the median of the other ranks' medians the most. grad_sync_wait
    never counts: it is where the other ranks show the straggler (their wait for it)."""
    slow = max(sorted(compute.per_rank), key=lambda rank: compute.per_rank[rank])
    others = [t for rank, t in compute.per_rank.items() if rank != slow]
    others_median = statistics.median(others)
    gaps: dict[str, float] = {}
    mine = phases.get(slow)
    if mine is not None:
        split = mine.get("grad_sync_wait") is not None
        for name in COMPUTE_PHASES:
            if name == "backward" and not split:
                continue  # the whole backward holds the waits: not the straggler's own work
            value = mine.get(name)
            peers = [
                v
                for rank, m in phases.items()
                if rank != slow and m is not None and (v := m.get(name)) is not None
            ]
            if value is not None and peers:
                gaps[name] = value - statistics.median(peers)
    positive = {name: gap for name, gap in gaps.items() if gap > 0}
    phase = max(positive, key=lambda name: positive[name]) if positive else None
    return Straggler(
        rank=slow,
        basis=compute.basis,
        compute_s=compute.per_rank[slow],
        others_compute_s=others_median,
        compute_gap_s=compute.per_rank[slow] - others_median,
        phase=phase,
        gap_s=positive[phase] if phase is not None else None,
        phase_gaps_s=gaps,
        injected=slow in injected,
    )


def split_step(
    step_s: float, compute: ComputeTimes, no_sync_pooled_s: float | None
) -> Communication:
    """T = slowest compute + exposed communication; imbalance = the others' wait within it."""
    slowest_rank = max(sorted(compute.per_rank), key=lambda rank: compute.per_rank[rank])
    slowest = compute.per_rank[slowest_rank]
    imbalance = statistics.fmean(slowest - t for t in compute.per_rank.values())
    exposed = step_s - slowest
    positive = step_s > 0
    return Communication(
        step_time_no_sync_s=no_sync_pooled_s,
        comm_overhead=exposed / step_s if positive else None,
        sync_overhead=1 - no_sync_pooled_s / step_s
        if positive and no_sync_pooled_s is not None
        else None,
        step_time_s=step_s,
        slowest_compute_s=slowest,
        slowest_compute_rank=slowest_rank,
        load_imbalance_s=imbalance,
        load_imbalance=imbalance / step_s if positive else None,
        exposed_comm_s=exposed,
    )


def _profile_record(spec: WorkerSpec, ranks: Sequence[RankMeasurement]) -> ProfileRecord | None:
    profile = spec.profile
    if profile is None:
        return None
    times = [r.profile_capture_s for r in ranks if r.profile_capture_s is not None]
    notes: list[str] = []
    for r in ranks:
        notes += [n for n in r.profile_notes if n not in notes]
    return ProfileRecord(
        tool=profile.tool,
        trace_dir=profile.trace_dir,
        wait=profile.wait,
        warmup=profile.warmup,
        active=profile.active,
        files=sorted({name for r in ranks for name in r.profile_files}),
        capture_s=max(times) if times else None,
        notes=notes,
    )


def allocator_totals(ranks: Sequence[RankMeasurement]) -> tuple[dict[str, Any], dict[str, str]]:
    """Memory's allocator fields for the cell, each the worst of any rank (most retries and
    OOMs, highest fragmentation, largest stranded bytes), or null with the reason on CPU."""
    stats = [r.allocator for r in ranks if r.allocator is not None]
    if not stats or len(stats) != len(ranks):
        return {}, {f"memory.{name}": NO_ALLOCATOR for name in ALLOCATOR_FIELDS}
    fragmentation = [s.fragmentation for s in stats if s.fragmentation is not None]
    fields: dict[str, Any] = {
        "alloc_retries": max(s.alloc_retries for s in stats),
        "oom_count": max(s.oom_count for s in stats),
        "fragmentation": max(fragmentation) if fragmentation else None,
        "inactive_split_peak_bytes": max(s.inactive_split_peak_bytes for s in stats),
    }
    unavailable = {}
    if not fragmentation:
        unavailable["memory.fragmentation"] = "the allocator reserved nothing in the windows"
    return fields, unavailable


def _retries(allocator: AllocatorStats | None) -> int | None:
    return allocator.alloc_retries if allocator is not None else None


def cell_telemetry(
    spec: WorkerSpec, ranks: Sequence[RankMeasurement], facts: CellFacts, samples: int
) -> tuple[Telemetry | None, dict[str, str], list[str]]:
    """(telemetry, unavailable, warnings) of the cell from every rank's summary."""
    per_rank = [r.telemetry for r in ranks if r.telemetry is not None]
    if not per_rank:
        return None, {"telemetry": TELEMETRY_OFF}, []
    return combine(
        per_rank,
        interval_ms=spec.measurement.telemetry.interval_ms,
        windows=len(ranks[0].windows),
        samples_processed=samples,
        tokens_per_sample=facts.tokens_per_sample,
    )


def _epochs_note(
    info: dict[str, Any], spec: WorkerSpec, world: int, steps_per_rank: int
) -> str | None:
    """The page-cache caveat when the dataset fits in this host's memory."""
    dataset, memory, samples = (
        info.get("dataset_bytes"),
        info.get("physical_memory_bytes"),
        info.get("samples"),
    )
    if not dataset or not memory or not samples or dataset >= memory:
        return None
    per_rank = samples // world
    read = steps_per_rank * spec.cell.batch_size * spec.training.grad_accum_steps
    epochs = read / per_rank if per_rank else 0.0
    return (
        f"the dataset ({dataset / 1e6:,.0f} MB) is smaller than this host's memory "
        f"({memory / 1e9:,.1f} GB): after the first epoch samples may come from the page cache, "
        f"not the storage (each rank read {epochs:.2f} epochs of its share in this cell)"
    )


def data_pipeline(
    spec: WorkerSpec,
    phases: dict[int, dict[str, float | None] | None],
    step_p50_s: float,
    window_s: float,
    steps: int,
    read_steps: int,
    facts: CellFacts,
) -> tuple[DataPipeline, dict[str, str]]:
    """`data` of the cell: the slowest rank's median data wait, its share of the median step,
    the loader's settings and the bytes of samples consumed per second of measured windows."""
    unavailable: dict[str, str] = {}
    per_rank = [(m or {}).get("data") for _, m in sorted(phases.items())]
    known = [w for w in per_rank if w is not None]
    wait = max(known) if known else None
    share = wait / step_p50_s if wait is not None and step_p50_s > 0 else None
    if wait is None:
        unavailable["data.wait_s"] = NO_DATA_PHASE
    info = facts.environment.get(DATA_KEY)
    if spec.data.source == "synthetic" or not isinstance(info, dict):
        unavailable["data.read_bytes_per_s"] = NOTHING_READ
        return DataPipeline(
            source=spec.data.source, wait_s=wait, share=share, wait_s_per_rank=per_rank
        ), unavailable
    world = len(phases)
    repeats = spec.measurement.repeats
    samples_per_step = spec.cell.batch_size * spec.training.grad_accum_steps * world
    record = info.get("record_bytes")
    rate = None
    if record and window_s > 0 and steps:
        rate = record * samples_per_step * steps * repeats / window_s
    else:
        unavailable["data.read_bytes_per_s"] = "no measured window time"
    notes = list(info.get("notes") or [])
    caveat = _epochs_note(info, spec, world, read_steps)
    if caveat is not None:
        notes.append(caveat)
    return DataPipeline(
        source=spec.data.source,
        wait_s=wait,
        share=share,
        wait_s_per_rank=per_rank,
        num_workers=info.get("num_workers"),
        pin_memory=info.get("pin_memory"),
        prefetch_factor=info.get("prefetch_factor"),
        dir=info.get("dir"),
        dataset_bytes=info.get("dataset_bytes"),
        samples=info.get("samples"),
        read_bytes_per_s=rate,
        notes=notes,
    ), unavailable


def aggregate(spec: WorkerSpec, ranks: Sequence[RankMeasurement], facts: CellFacts) -> CellResult:
    ranks = sorted(ranks, key=lambda r: r.rank)
    world = len(ranks)
    steps = ranks[0].steps
    repeats = len(ranks[0].windows)
    samples_per_rank_step = spec.cell.batch_size * spec.training.grad_accum_steps
    shape = spec.cell.parallel
    # ranks of one TP group or pipeline train one replica on one batch
    replicas = shape.dp if shape is not None else world
    group = world // replicas
    global_batch = samples_per_rank_step * replicas
    unavailable: dict[str, str] = {}
    warnings: list[str] = []

    # throughput: each repeat's window is barrier-bounded; the slowest rank's wall time counts
    per_repeat = []
    for i in range(repeats):
        wall = max(r.windows[i].wall_s for r in ranks)
        per_repeat.append(global_batch * steps / wall)
    samples_per_s, spread = median_and_spread(per_repeat)
    tokens = samples_per_s * facts.tokens_per_sample if facts.tokens_per_sample else None
    if tokens is None:
        unavailable["tokens_per_s"] = "not a language model"
    throughput = Throughput(
        samples_per_s=samples_per_s,
        samples_per_s_per_device=samples_per_s / world,
        tokens_per_s=tokens,
        repeats=per_repeat,
        spread=spread,
    )

    phases = {r.rank: rank_phase_medians(r) for r in ranks}
    rank_stats = [
        RankStats(
            rank=r.rank,
            host=r.host,
            step_time=step_stats([t for w in r.windows for t in w.step_s]),
            peak_rss_bytes=r.peak_rss,
            peak_allocated_bytes=r.peak_allocated,
            alloc_retries=_retries(r.allocator),
            compute_time=step_stats(r.no_sync.step_s) if r.no_sync and r.no_sync.step_s else None,
            phases=PhaseTimes(**phase_medians) if (phase_medians := phases[r.rank]) else None,
        )
        for r in ranks
    ]
    if all(p is None for p in phases.values()):
        unavailable["phases"] = ranks[0].phase_notes.get("phases", "phase timing was off")
    else:
        for phase in PHASES:
            notes = {r.phase_notes[phase] for r in ranks if phase in r.phase_notes}
            if notes:
                unavailable[f"phases.{phase}"] = "; ".join(sorted(notes))
    pooled = step_stats([t for r in ranks for w in r.windows for t in w.step_s])
    if pooled.cv > spec.measurement.cv_warn_threshold:
        warnings.append(
            f"High variance in step time: CV {pooled.cv:.2f} > "
            f"{spec.measurement.cv_warn_threshold:.2f}"
        )

    # straggler: the rank with the highest compute time, and its slow phase
    delays = [InjectedDelay(rank=d.rank, phase=d.phase, ms=d.ms) for d in spec.inject_delay]
    for delay in spec.inject_delay:
        warnings.append(
            f"Injected delay (--inject-delay {delay.text()}): rank {delay.rank} sleeps "
            f"{delay.ms:g} ms in its {delay.phase} phase every step: the straggler and load "
            "imbalance it causes are artificial"
        )
    compute, why_not = compute_times(spec, ranks, phases)
    straggler = None
    if compute is not None:
        straggler = find_straggler(compute, phases, [d.rank for d in delays])
        if straggler.phase is None:
            unavailable["straggler.phase"] = (
                "no phase of the straggler is slower than the other ranks' (its extra compute "
                "time is below the noise of the phase medians)"
            )
    else:
        unavailable["straggler"] = why_not or "no compute time per rank"

    # the synchronised step split: slowest compute, load imbalance, exposed communication
    no_sync_ranks = [r.no_sync for r in ranks if r.no_sync is not None]
    if world > 1 and len(no_sync_ranks) == world and compute is not None:
        no_sync_p50 = statistics.median(t for w in no_sync_ranks for t in w.step_s)
        communication = split_step(pooled.p50, compute, no_sync_p50)
    else:
        communication = Communication(step_time_no_sync_s=None, comm_overhead=None)
        if world == 1:
            reason = "world size 1: no gradient communication to expose"
        elif shape is not None:
            reason = (
                "the no_sync method needs DDP; tp, pp and hybrid communicate inside forward and "
                "backward (tensor parallelism: see parallel.profiled_comm)"
            )
        elif spec.cell.strategy != "ddp":
            reason = "measured for DDP only (FSDP has no no_sync equivalent that removes all comm)"
        else:
            reason = "measurement.comm_overhead is off"
        for key in ("comm_overhead", "sync_overhead", "load_imbalance"):
            unavailable[key] = reason

    flops = ranks[0].flops_per_step
    # a device's share of a replica's samples (a whole replica under ddp and fsdp)
    achieved = (
        achieved_tflops(flops, throughput.samples_per_s_per_device, samples_per_rank_step / group)
        if flops
        else None
    )
    mfu = achieved / facts.peak_tflops if achieved is not None and facts.peak_tflops else None
    if flops is None:
        unavailable["flops"] = ranks[0].flops_note or "not counted"
    if mfu is None:
        unavailable["mfu"] = facts.peak_note or "no FLOP count"

    static = ranks[0].static
    peak_alloc = max(
        (r.peak_allocated for r in ranks if r.peak_allocated is not None), default=None
    )
    peak_reserved = max(
        (r.peak_reserved for r in ranks if r.peak_reserved is not None), default=None
    )
    static_total = sum(static.values())
    non_static = peak_alloc - static_total if peak_alloc is not None else None
    peak_rss = max((r.peak_rss for r in ranks if r.peak_rss is not None), default=None)
    if peak_alloc is None:
        unavailable["peak_allocated"] = "no CUDA caching allocator on CPU (see peak_rss_bytes)"
    allocator, why_not_allocator = allocator_totals(ranks)
    unavailable.update(why_not_allocator)

    # telemetry: energy per sample counts what all ranks processed in the sampled windows
    telemetry, why_not_telemetry, telemetry_warnings = cell_telemetry(
        spec, ranks, facts, global_batch * steps * repeats
    )
    unavailable.update(why_not_telemetry)
    warnings += telemetry_warnings

    # the input pipeline: data wait per step and its share, bytes read per second of windows
    window_s = sum(max(r.windows[i].wall_s for r in ranks) for i in range(repeats))
    first = ranks[0]  # every step of the cell reads: warm-up, FLOP step, windows, no_sync
    read_steps = (
        len(first.warmup_s)
        + int(spec.measurement.flops)
        + sum(len(w.step_s) for w in first.windows)
        + (len(first.no_sync.step_s) if first.no_sync else 0)
    )
    data, why_not_data = data_pipeline(spec, phases, pooled.p50, window_s, steps, read_steps, facts)
    unavailable.update(why_not_data)
    environment = {k: v for k, v in facts.environment.items() if k != DATA_KEY}
    parallel, why_not_parallel = parallel_metrics(spec, ranks)
    unavailable.update(why_not_parallel)
    warmup = warmup_record(ranks)
    if spec.training.compile and warmup.compile_s is None:
        unavailable["warmup.compile_s"] = "torch._dynamo's compile time could not be read"

    return CellResult(
        cell=spec.cell,
        status=Status.OK,
        model_kind=facts.model_kind,
        parameters=facts.parameters,
        measured_steps=steps,
        warmup_steps=spec.measurement.warmup_steps,
        repeats=repeats,
        global_batch=global_batch,
        throughput=throughput,
        step_time=pooled,
        ranks=rank_stats,
        straggler_rank=straggler.rank if straggler is not None else None,
        straggler=straggler,
        injected_delays=delays,
        profile=_profile_record(spec, ranks),
        telemetry=telemetry,
        data=data,
        memory=Memory(
            parameter_bytes=static.get("parameter_bytes", 0),
            gradient_bytes=static.get("gradient_bytes", 0),
            optimizer_state_bytes=static.get("optimizer_state_bytes", 0),
            peak_allocated_bytes=peak_alloc,
            peak_reserved_bytes=peak_reserved,
            non_static_peak_bytes=non_static,
            peak_rss_bytes=peak_rss,
            **allocator,
        ),
        compute=Compute(
            flops_per_step=flops,
            achieved_tflops_per_device=achieved,
            peak_tflops_per_device=facts.peak_tflops,
            peak_basis=facts.peak_basis,
            mfu=mfu,
        ),
        communication=communication,
        parallel=parallel,
        warmup=warmup,
        warnings=warnings,
        unavailable=unavailable,
        environment=environment
        | {
            "timing": ranks[0].timing,
            "fused_optimizer": facts.fused_optimizer,
            "channels_last": facts.channels_last,
            "device_name": facts.device_name,
        },
    )
