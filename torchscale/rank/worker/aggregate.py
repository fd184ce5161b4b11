"""Rank 0 turns every rank's measurements into one CellResult. Pure: no torch.distributed.

The step (docs/methodology.md, "One model of the step"): every synchronised step of every rank
splits into compute, data, waiting for peers, exposed transfer and rest from the phase timers
(torchscale/offline/analysis/diagnosis/step_model.py), each part with its 95 % interval; a
straggler is named only when a paired test over the steps says so. The no_sync windows,
interleaved with the synchronised ones, cross-check the communication figure (`diagnosis.
no_sync`); the straggler and communication columns are read off the diagnosis where they are
shown (torchscale/offline/results/split_figures.py), so each quantity is stored once.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pandas as pd

from torchscale.contracts.cell import Status
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import (
    CellResult,
    Compute,
    DataPipeline,
    HostBound,
    InjectedDelay,
    Intervals,
    Memory,
    PhaseTimes,
    ProfileRecord,
    RankCalibration,
    RankStats,
    StepTimeStats,
    Throughput,
)
from torchscale.contracts.schema.cell_telemetry import Telemetry
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.contracts.schema.diagnosis import Diagnosis, NoSyncWindow, Reason
from torchscale.contracts.shared_gpu import gpus_for
from torchscale.contracts.step_phases import (
    STEP_EXTRAS,
    STEP_PHASES,
    seconds_column,
)
from torchscale.contracts.wording.cell_reasons import coded, one_reason
from torchscale.contracts.wording.profile import distinct
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.offline.analysis.diagnosis import (
    RunEvidence,
    TimerEvidence,
    busy_caveat,
    diagnose,
    with_caveat,
)
from torchscale.offline.analysis.diagnosis.device import calibration_table, work_equal
from torchscale.offline.analysis.diagnosis.step_model import NoSyncSteps
from torchscale.offline.analysis.stats import median_and_spread, step_stats
from torchscale.offline.analysis.uncertainty import (
    median_of_repeats,
    percentile_of_steps,
)
from torchscale.offline.results.split_figures import split_reasons
from torchscale.rank.data.input_pipeline import SETTINGS_KEY
from torchscale.rank.telemetry.window_figures import combine
from torchscale.rank.worker.busy_trace import SHARED_GPU_TRACE, BusyReading, host_bound_record
from torchscale.rank.worker.compile_figures import compile_record
from torchscale.rank.worker.fixed_costs import fixed_costs_record
from torchscale.rank.worker.measure import RankMeasurement, Window, measured_steps
from torchscale.rank.worker.measured_peak import (
    NOT_LOOKED_FOR,
    MeasuredPeak,
    cell_measured_peak,
    guarded_mfu,
)
from torchscale.rank.worker.parallel_metrics import parallel_metrics, warmup_record
from torchscale.rank.worker.phases import medians

T = TypeVar("T")
FSDP_NO_SPLIT = coded("unavailable.fsdp_no_split")
MODEL_PARALLEL = coded("unavailable.model_parallel")
NO_PHASES = coded("unavailable.no_phase_split")
NO_ALLOCATOR = coded("unavailable.no_allocator_stats_on_cpu")
TELEMETRY_OFF = coded("unavailable.telemetry_off")
ALLOCATOR_FIELDS = ("alloc_retries", "oom_count", "fragmentation", "inactive_split_peak_bytes")
DATA_KEY = SETTINGS_KEY  # the trainer's settings entry with the input pipeline's facts
NOTHING_READ = coded("unavailable.synthetic_nothing_read")
NO_DATA_PHASE = coded("unavailable.no_data_phase")
LOADER_FACTS = ("num_workers", "pin_memory", "prefetch_factor", "dir", "dataset_bytes", "samples")
# the gradient sync wait's share of the step-time variance from which a noisy step is said to
# be noisy in its sync ("High variance in gradient sync time"): at least half of it
SYNC_VARIANCE_SHARE = 0.5


@dataclass(frozen=True)
class CellFacts:
    """What rank 0 knows besides the measurements."""

    parameters: int | None  # None: not known (a user's job, whose model torchscale never built)
    model_kind: str
    tokens_per_sample: float | None  # a user's job: the mean its loader's batches held
    device_name: str  # "cpu" or the CUDA device name
    peak_tflops: float | None
    peak_note: Finding | None  # why there is no peak (peak_tflops None)
    environment: dict[str, Any]
    fused_optimizer: bool | None  # None: not known (a user's job)
    channels_last: bool | None
    peak_basis: Finding | None = None  # which peak: GPU, dtype and why (peak.spec)
    warnings: tuple[CellWarning, ...] = ()  # what rank 0 saw set up (fp32 without TF32)


def rank_phase_medians(rank: RankMeasurement) -> dict[str, float | None] | None:
    """Median per phase over the rank's synchronised windows; None without phase timing."""
    windows = [w.phases for w in rank.windows if w.phases is not None]
    return medians(windows) if windows else None


def steps_table(ranks: Sequence[RankMeasurement]) -> pd.DataFrame:
    """Every synchronised step of every rank with its phase seconds: (window, step, rank,
    step_s, data, forward, backward, grad_sync_wait, optimizer, then STEP_EXTRAS: cpu_wait,
    cpu_time, comm_hold, comm_hold_backward, model_forward); phases None without timing, the
    others None where they were not measured."""
    rows = []
    for r in ranks:
        for window, w in enumerate(r.windows):
            for step, seconds in enumerate(w.step_s):
                row: dict[str, Any] = {"window": window, "step": step, "rank": r.rank}
                row |= {p: w.phases[p][step] if w.phases is not None else None for p in STEP_PHASES}
                rows.append(
                    row | {"step_s": seconds} | dict.fromkeys(STEP_EXTRAS) | w.step_extras(step)
                )
    columns = ["window", "step", "rank", "step_s", *STEP_PHASES, *STEP_EXTRAS]
    return pd.DataFrame(rows, columns=columns)


def sync_variance_warning(table: pd.DataFrame, threshold: float) -> list[CellWarning]:
    """The published "High variance in gradient sync time" warning, only where it says
    something: the step time is noisy (its CV above `threshold`) and at least half of its
    variance is in the gradient sync wait (cov(wait, step) / var(step), the wait's part of the
    step-time variance when the phases add up to the step): the noise is the network or
    waiting for peers, not this rank's compute. Empty without phase timing."""
    both = table[["step_s", "grad_sync_wait"]].dropna().astype(float)
    if len(both) < 3:
        return []
    step, wait = both["step_s"], both["grad_sync_wait"]
    step_cv = float(step.std() / step.mean()) if step.mean() > 0 else 0.0
    if step_cv <= threshold or wait.mean() <= 0:
        return []
    share = float(both.cov().loc["grad_sync_wait", "step_s"] / step.var())
    if share < SYNC_VARIANCE_SHARE:
        return []
    figures = {
        "wait_cv": float(wait.std() / wait.mean()),
        "share": share,
        "step_cv": step_cv,
        "threshold": threshold,
    }
    return [CellWarning.of("high variance", "warning.sync_variance", figures)]


def no_sync_steps(ranks: Sequence[RankMeasurement]) -> NoSyncSteps | None:
    """Each rank's free-running steps of the interleaved no_sync windows (None without)."""
    if not all(r.no_sync is not None and r.no_sync.step_s for r in ranks):
        return None
    return NoSyncSteps({r.rank: list(r.no_sync.step_s) for r in ranks if r.no_sync})


def headline_intervals(per_repeat: Sequence[float], step_times: Sequence[float]) -> Intervals:
    """Throughput (median of repeats) and latency percentiles (steps) with intervals. MFU is
    throughput times a constant (FLOPs per sample / peak): its interval is the throughput's,
    scaled where it is read (`uncertainty.mfu_estimate`), never stored a second time."""
    return Intervals(
        samples_per_s=median_of_repeats(per_repeat),
        step_p50_s=percentile_of_steps(step_times, 50),
        step_p95_s=percentile_of_steps(step_times, 95),
        step_p99_s=percentile_of_steps(step_times, 99),
    )


def _profile_record(spec: WorkerSpec, ranks: Sequence[RankMeasurement]) -> ProfileRecord | None:
    profile = spec.profile
    if profile is None:
        return None
    times = [r.profile_capture_s for r in ranks if r.profile_capture_s is not None]
    return ProfileRecord(
        tool=profile.tool,
        trace_dir=profile.trace_dir,
        wait=profile.wait,
        warmup=profile.warmup,
        active=profile.active,
        files=sorted({name for r in ranks for name in r.profile_files}),
        capture_s=max(times) if times else None,
        notes=list(distinct(n for r in ranks for n in r.profile_notes)),
    )


def allocator_totals(ranks: Sequence[RankMeasurement]) -> tuple[dict[str, Any], dict[str, Reason]]:
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
    unavailable: dict[str, Reason] = {}
    if not fragmentation:
        unavailable["memory.fragmentation"] = coded("unavailable.nothing_reserved")
    return fields, unavailable


def cell_telemetry(
    spec: WorkerSpec, ranks: Sequence[RankMeasurement], facts: CellFacts, samples: int
) -> tuple[Telemetry | None, dict[str, Reason], list[CellWarning]]:
    """(telemetry, unavailable, warnings) of the cell from every rank's summary."""
    per_rank = [r.telemetry for r in ranks if r.telemetry is not None]
    if not per_rank:
        return None, {"telemetry": TELEMETRY_OFF}, []
    telemetry, why_not, warnings = combine(
        per_rank,
        interval_ms=spec.measurement.telemetry.interval_ms,
        windows=len(ranks[0].windows),
        samples_processed=samples,
        tokens_per_sample=facts.tokens_per_sample,
    )
    return telemetry, dict(why_not), warnings


def _epochs_note(
    info: dict[str, Any], spec: WorkerSpec, world: int, steps_per_rank: int
) -> Finding | None:
    """The page-cache caveat when the dataset fits in this host's memory."""
    keys = ("dataset_bytes", "physical_memory_bytes", "samples")
    dataset, memory, samples = (info.get(key) for key in keys)
    if not dataset or not memory or not samples or dataset >= memory:
        return None
    per_rank = samples // world
    read = steps_per_rank * spec.cell.batch_size * spec.training.grad_accum_steps
    epochs = read / per_rank if per_rank else 0.0
    figures = {"dataset_bytes": dataset, "memory_bytes": memory, "epochs": epochs}
    return Finding(code="data.page_cache", figures=figures)


def data_pipeline(
    spec: WorkerSpec,
    phases: dict[int, dict[str, float | None] | None],
    step_p50_s: float,
    window_s: float,
    steps: int,
    read_steps: int,
    facts: CellFacts,
) -> tuple[DataPipeline, dict[str, Reason]]:
    """`data` of the cell: the slowest rank's median data wait, its share of the median step,
    the loader's settings and the bytes of samples consumed per second of measured windows."""
    unavailable: dict[str, Reason] = {}
    per_rank = [(m or {}).get("data") for _, m in sorted(phases.items())]
    known = [w for w in per_rank if w is not None]
    wait = max(known) if known else None
    share = wait / step_p50_s if wait is not None and step_p50_s > 0 else None
    if wait is None:
        unavailable["data.wait_s"] = NO_DATA_PHASE
    waited: dict[str, Any] = {"wait_s": wait, "share": share, "wait_s_per_rank": per_rank}
    info = facts.environment.get(DATA_KEY)
    if spec.data.source == "synthetic" or not isinstance(info, dict):
        # a plug-in's own batches (torchscale/rank/data/plugin_batches.py) are `synthetic` to
        # the schema: their info says where they came from in notes, and why nothing is counted
        told = info if isinstance(info, dict) else {}
        said = told.get("not_read")  # why a plug-in's batches count nothing read
        unavailable["data.read_bytes_per_s"] = said or NOTHING_READ
        notes = list(told.get("notes") or [])
        return DataPipeline(source=spec.data.source, notes=notes, **waited), unavailable
    world = len(phases)
    samples_per_step = spec.cell.batch_size * spec.training.grad_accum_steps * world
    record = info.get("record_bytes")
    rate = None
    if record and window_s > 0 and steps:
        rate = record * samples_per_step * steps * spec.measurement.repeats / window_s
    else:
        unavailable["data.read_bytes_per_s"] = coded("unavailable.no_window_time")
    notes = list(info.get("notes") or [])
    caveat = _epochs_note(info, spec, world, read_steps)
    if caveat is not None:
        notes.append(caveat)
    loader: dict[str, Any] = {name: info.get(name) for name in LOADER_FACTS}
    return DataPipeline(
        source=spec.data.source, read_bytes_per_s=rate, notes=notes, **waited, **loader
    ), unavailable


@dataclass(frozen=True)
class SampleCounts:
    """How many samples the cell's steps process: the denominators of throughput and MFU."""

    world: int  # ranks
    devices: int  # the GPUs they ran on (ranks sharing one count it once), or the ranks on CPU
    steps: int  # measured steps per window
    repeats: int  # measured windows
    per_rank_step: int  # samples per rank per optimizer step (batch x gradient accumulation)
    group: int  # ranks that train one replica on one batch (a TP group or a pipeline)
    global_batch: int  # samples per optimizer step of every replica together


def sample_counts(spec: WorkerSpec, ranks: Sequence[RankMeasurement]) -> SampleCounts:
    """The cell's sample counts: ranks of one TP group or pipeline train one replica on one
    batch, so only replicas add to the global batch."""
    world = len(ranks)
    per_rank_step = spec.cell.batch_size * spec.training.grad_accum_steps
    shape = spec.cell.parallel
    replicas = shape.dp if shape is not None else world
    return SampleCounts(
        world=world,
        devices=gpus_for(world, spec.cell.ranks_per_gpu),
        steps=ranks[0].steps,
        repeats=len(ranks[0].windows),
        per_rank_step=per_rank_step,
        group=world // replicas,
        global_batch=per_rank_step * replicas,
    )


def window_walls(ranks: Sequence[RankMeasurement], repeats: int) -> list[float]:
    """Each repeat's wall time: its window is barrier-bounded, so the slowest rank's counts."""
    return [max(r.windows[i].wall_s for r in ranks) for i in range(repeats)]


def throughput_record(
    ranks: Sequence[RankMeasurement], counts: SampleCounts, facts: CellFacts
) -> tuple[Throughput, dict[str, Reason]]:
    """Global samples (and tokens) per second: the median over repeats, with its spread."""
    per_repeat = [
        counts.global_batch * counts.steps / wall for wall in window_walls(ranks, counts.repeats)
    ]
    samples_per_s, spread = median_and_spread(per_repeat)
    tokens = samples_per_s * facts.tokens_per_sample if facts.tokens_per_sample else None
    unavailable: dict[str, Reason] = {}
    if tokens is None:
        unavailable["tokens_per_s"] = coded("unavailable.not_language_model")
    return Throughput(
        samples_per_s=samples_per_s,
        samples_per_s_per_device=samples_per_s / counts.devices,
        tokens_per_s=tokens,
        repeats=per_repeat,
        spread=spread,
    ), unavailable


def rank_calibration(rank: RankMeasurement) -> RankCalibration | None:
    """The calibration the rank timed after each synchronised window (a cell's), or once
    after its measured steps (a user's job's: its last block's); None where none was timed."""
    windows = [w for w in rank.windows if w.calibration_s is not None]
    if not windows:
        return None
    return RankCalibration(
        timer="cuda_events" if windows[0].calibration_timer == "cuda_events" else "thread_time",
        device_s=[w.calibration_s or [] for w in windows],
        wall_s=[w.calibration_wall_s or [] for w in windows],
        cost_s=[w.calibration_cost_s or 0.0 for w in windows],
    )


def rank_records(
    ranks: Sequence[RankMeasurement], phases: dict[int, dict[str, float | None] | None]
) -> tuple[list[RankStats], dict[str, Reason]]:
    """Each rank's own figures, and why a phase has no timing (on every rank, or on some)."""
    stats = [
        RankStats(
            rank=r.rank,
            host=r.host,
            step_time=step_stats(measured_steps(r)),
            peak_rss_bytes=r.peak_rss,
            peak_allocated_bytes=r.peak_allocated,
            alloc_retries=r.allocator.alloc_retries if r.allocator else None,
            compute_time=step_stats(r.no_sync.step_s) if r.no_sync and r.no_sync.step_s else None,
            phases=PhaseTimes(**phase_medians) if (phase_medians := phases[r.rank]) else None,
            calibration=rank_calibration(r),
        )
        for r in ranks
    ]
    unavailable: dict[str, Reason] = {}
    if all(p is None for p in phases.values()):
        unavailable["phases"] = ranks[0].phase_notes.get(
            "phases", coded("unavailable.phase_timing_off")
        )
    else:
        for phase in STEP_PHASES:
            notes = [r.phase_notes[phase] for r in ranks if phase in r.phase_notes]
            if notes:
                unavailable[f"phases.{phase}"] = one_reason(notes)
    return stats, unavailable


def step_time_warning(pooled: StepTimeStats, threshold: float) -> list[CellWarning]:
    """The published "High variance in step time" warning, when the pooled CV is above it."""
    if pooled.cv <= threshold:
        return []
    figures = {"cv": pooled.cv, "threshold": threshold}
    return [CellWarning.of("high variance", "warning.step_time_cv", figures)]


def injected_delays(spec: WorkerSpec) -> tuple[list[InjectedDelay], list[CellWarning]]:
    """The delays --inject-delay added, each with the warning that what it causes is
    artificial (a result never passes an injected straggler off as a measured one)."""
    delays = [InjectedDelay(rank=d.rank, phase=d.phase, ms=d.ms) for d in spec.inject_delay]
    return delays, [
        CellWarning.of("injected delay", "warning.injected_delay", d.model_dump()) for d in delays
    ]


def diagnosis_record(
    spec: WorkerSpec, ranks: Sequence[RankMeasurement], table: pd.DataFrame, injected: Sequence[int]
) -> tuple[Diagnosis | None, dict[str, Reason]]:
    """(diagnosis, unavailable): the one model of the step from the phase timers (a straggler
    on a rank of `injected` marked artificial) with the no_sync window beside it; with one
    rank or no model, why its straggler and communication figures are empty."""
    diagnosis, why_not = None, NO_PHASES
    no_sync = no_sync_steps(ranks)
    if spec.cell.parallel is not None:
        why_not = MODEL_PARALLEL
    elif spec.cell.strategy == "fsdp":
        why_not = FSDP_NO_SPLIT
    else:
        diagnosis = diagnose(
            RunEvidence(
                timers=TimerEvidence(
                    steps=table,
                    no_sync=no_sync,
                    calibration=calibration_table(
                        {r.rank: rank_calibration(r) for r in ranks},
                        work_equal(spec.cell),
                        spec.cell.ranks_per_gpu,
                    ),
                ),
                device_type=spec.cell.device,
                backend=spec.cell.backend,
                strategy=spec.cell.strategy,
                nodes=spec.cell.nodes,
                injected_ranks=frozenset(injected),
            )
        )
    world = len(ranks)
    unavailable = split_reasons(diagnosis, world, why_not)
    if diagnosis is not None and world > 1:
        # the median free-running step over every rank's no_sync windows
        pooled = [t for steps in no_sync.per_rank.values() for t in steps] if no_sync else []
        window = NoSyncWindow(step_s=statistics.median(pooled) if pooled else None)
        diagnosis = diagnosis.model_copy(update={"no_sync": window})
    return diagnosis, unavailable


def compute_record(
    ranks: Sequence[RankMeasurement], facts: CellFacts, throughput: Throughput, counts: SampleCounts
) -> tuple[Compute, dict[str, Reason]]:
    """FLOPs, achieved TFLOP/s and MFU against the spec-sheet and the measured peak, each
    null with its reason."""
    flops = ranks[0].flops_per_step
    # per device: FLOPs per optimizer step times the steps per second the throughput implies
    # (so MFU and throughput always agree), a rank's share of a replica's samples being
    # per_rank_step / group (a whole replica under ddp and fsdp); ranks sharing a GPU add up
    # on it (samples_per_s_per_device is the GPU's)
    per_step = counts.per_rank_step / counts.group
    achieved = flops * throughput.samples_per_s_per_device / per_step / 1e12 if flops else None
    unavailable: dict[str, Reason] = {}
    mfu, mfu_bug = guarded_mfu(achieved, facts.peak_tflops, "spec-sheet")
    if flops is None:
        unavailable["flops"] = ranks[0].flops_note or coded("unavailable.flops_not_counted")
    if mfu is None:
        unavailable["mfu"] = mfu_bug or facts.peak_note or coded("unavailable.no_flop_count")
    measured_peak = cell_measured_peak(
        [r.measured_peak or MeasuredPeak(None, None, NOT_LOOKED_FOR) for r in ranks]
    )
    mfu_measured, measured_bug = guarded_mfu(achieved, measured_peak.tflops, "measured")
    if mfu_measured is None:
        unavailable["mfu_measured"] = (
            measured_bug
            or (measured_peak.why if measured_peak.tflops is None else None)
            or unavailable.get("flops", coded("unavailable.no_flop_count"))
        )
    return Compute(
        flops_per_step=flops,
        achieved_tflops_per_device=achieved,
        peak_tflops_per_device=facts.peak_tflops,
        peak_basis=facts.peak_basis,
        mfu=mfu,
        measured_peak_tflops_per_device=measured_peak.tflops,
        measured_peak_basis=measured_peak.basis if measured_peak.tflops else None,
        mfu_measured=mfu_measured,
    ), unavailable


def memory_record(ranks: Sequence[RankMeasurement]) -> tuple[Memory, dict[str, Reason]]:
    """Static memory (parameters, gradients, optimizer state), the peaks of the worst rank,
    what the static part leaves (activations and workspace) and the allocator's figures."""
    static = ranks[0].static

    def worst(name: str) -> int | None:
        return max((v for r in ranks if (v := getattr(r, name)) is not None), default=None)

    peak_alloc = worst("peak_allocated")
    non_static = peak_alloc - sum(static.values()) if peak_alloc is not None else None
    unavailable: dict[str, Reason] = {}
    if peak_alloc is None:
        unavailable["peak_allocated"] = coded("unavailable.no_allocator_on_cpu")
    allocator, why_not_allocator = allocator_totals(ranks)
    unavailable.update(why_not_allocator)
    return Memory(
        parameter_bytes=static.get("parameter_bytes", 0),
        gradient_bytes=static.get("gradient_bytes", 0),
        optimizer_state_bytes=static.get("optimizer_state_bytes", 0),
        peak_allocated_bytes=peak_alloc,
        peak_reserved_bytes=worst("peak_reserved"),
        non_static_peak_bytes=non_static,
        peak_rss_bytes=worst("peak_rss"),
        **allocator,
    ), unavailable


def read_steps(rank: RankMeasurement) -> int:
    """The steps a rank read a batch for: warm-up, measured windows and no_sync windows (each
    with its untimed edge steps), and the busy trace's."""
    return (
        len(rank.warmup_s)
        + sum(len(w.step_s) for w in rank.windows)
        + (len(rank.no_sync.step_s) if rank.no_sync else 0)
        + (len(rank.windows) + len(rank.no_sync_windows)) * rank.window_edge_steps
        + (rank.gpu_busy.steps if rank.gpu_busy is not None else 0)
    )


def host_bound_block(
    ranks: Sequence[RankMeasurement], ranks_per_gpu: int = 1, device: str = "cpu"
) -> tuple[HostBound | None, dict[str, Reason]]:
    """The busy trace's verdict for a GPU cell (every rank traced); null with the reason on
    CPU, where every step is host time, in a user's job on a GPU that took no busy capture
    (busy_window.py says when), and where ranks share a GPU: a rank's trace sees its own
    kernels only, never the GPU's whole busy time."""
    traced = [r.gpu_busy for r in ranks if r.gpu_busy is not None]
    if len(traced) < len(ranks):
        # a cell's every CUDA rank traces (busy_trace.py): untraced on a GPU is a user's job
        why = "unavailable.host_bound_cpu" if device != "cuda" else "unavailable.host_bound_own_job"
        return None, {"host_bound": coded(why)}
    if ranks_per_gpu > 1:
        shared = Finding(code=SHARED_GPU_TRACE, figures={"ranks_per_gpu": ranks_per_gpu})
        traced = [BusyReading(r.rank, r.steps, reason=shared) for r in traced]
    return host_bound_record(traced), {}


def result_environment(ranks: Sequence[RankMeasurement], facts: CellFacts) -> dict[str, Any]:
    """The environment recorded with the result: the run's, less the input pipeline's facts
    (they are the `data` block), plus how this cell timed and trained."""
    environment = {k: v for k, v in facts.environment.items() if k != DATA_KEY}
    return environment | {
        "timing": ranks[0].timing,
        "fused_optimizer": facts.fused_optimizer,
        "channels_last": facts.channels_last,
        "device_name": facts.device_name,
    }


def aggregate(spec: WorkerSpec, ranks: Sequence[RankMeasurement], facts: CellFacts) -> CellResult:
    """Rank 0's one CellResult from every rank's measurements: each block by its own helper,
    in the order the result's `warnings` and `unavailable` list them."""
    ranks = sorted(ranks, key=lambda r: r.rank)
    counts = sample_counts(spec, ranks)
    threshold = spec.measurement.cv_warn_threshold
    unavailable: dict[str, Reason] = {}
    warnings: list[CellWarning] = []

    def known(block: tuple[T, Mapping[str, Reason]]) -> T:
        """The block, with why its null fields are null kept in `unavailable`."""
        unavailable.update(block[1])
        return block[0]

    throughput = known(throughput_record(ranks, counts, facts))
    phases = {r.rank: rank_phase_medians(r) for r in ranks}
    rank_stats = known(rank_records(ranks, phases))
    step_times = [t for r in ranks for t in measured_steps(r)]  # the cell's distribution
    pooled = step_stats(step_times)
    warnings += step_time_warning(pooled, threshold)

    # the one model of the step: parts with intervals, the straggler only when significant
    delays, delay_warnings = injected_delays(spec)
    warnings += delay_warnings
    table = steps_table(ranks)
    warnings += sync_variance_warning(table, threshold)
    diagnosis = known(diagnosis_record(spec, ranks, table, [d.rank for d in delays]))

    compute = known(compute_record(ranks, facts, throughput, counts))
    memory = known(memory_record(ranks))

    # telemetry: energy per sample counts what all ranks processed in the sampled windows
    telemetry, why_not, telemetry_warnings = cell_telemetry(
        spec, ranks, facts, counts.global_batch * counts.steps * counts.repeats
    )
    unavailable.update(why_not)
    warnings += telemetry_warnings
    if diagnosis is not None:
        diagnosis = with_caveat(diagnosis, busy_caveat(telemetry))

    # the input pipeline: data wait per step and its share, bytes read per second of windows;
    # every step of the cell reads a batch: warm-up, windows, no_sync
    window_s, read = sum(window_walls(ranks, counts.repeats)), read_steps(ranks[0])
    data = known(data_pipeline(spec, phases, pooled.p50, window_s, counts.steps, read, facts))
    parallel = known(parallel_metrics(spec, ranks))
    warmup = known(warmup_record(spec, ranks))
    compile_activity, compile_warnings, why_not = compile_record(spec, ranks)
    warnings += compile_warnings
    warnings += facts.warnings
    unavailable.update(why_not)
    host_bound = known(host_bound_block(ranks, spec.cell.ranks_per_gpu, spec.cell.device))
    fixed_costs = known(fixed_costs_record([r.fixed for r in ranks]))

    return CellResult(
        cell=spec.cell,
        status=Status.OK,
        model_kind=facts.model_kind,
        parameters=facts.parameters,
        measured_steps=counts.steps,
        warmup_steps=spec.measurement.warmup_steps,
        repeats=counts.repeats,
        global_batch=counts.global_batch,
        throughput=throughput,
        step_time=pooled,
        ranks=rank_stats,
        diagnosis=diagnosis,
        intervals=headline_intervals(throughput.repeats, step_times),
        injected_delays=delays,
        profile=_profile_record(spec, ranks),
        telemetry=telemetry,
        data=data,
        memory=memory,
        compute=compute,
        parallel=parallel,
        warmup=warmup,
        compile=compile_activity,
        window_edge_steps=ranks[0].window_edge_steps,
        host_bound=host_bound,
        fixed_costs=fixed_costs,
        warnings=warnings,
        unavailable=unavailable,
        environment=result_environment(ranks, facts),
    )


def phase_columns(window: Window, step: int) -> dict[str, float | None]:
    """`<phase>_s` of one step, and `cpu_wait_s`, `cpu_time_s` and the comm holds where
    measured (none when the window has no phase timing)."""
    if window.phases is None:
        return {}
    columns = {seconds_column(phase): window.phases[phase][step] for phase in STEP_PHASES}
    return columns | {seconds_column(k): v for k, v in window.step_extras(step).items()}


def step_records(measurements: list[RankMeasurement]) -> str:
    """One JSON line per measured step per rank: its time and its phase times (steps.jsonl:
    rank 0 of a cell writes it, and the host for a user's traced job)."""
    lines = [
        {
            "rank": m.rank,
            "window": kind,
            "repeat": repeat,
            "step": step,
            "time_s": seconds,
            **phase_columns(window, step),
        }
        for m in sorted(measurements, key=lambda r: r.rank)
        for kind, windows in (("sync", m.windows), ("no_sync", m.no_sync_windows))
        for repeat, window in enumerate(windows)
        for step, seconds in enumerate(window.step_s)
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)
