"""The measurement protocol inside one rank: warm-up, FLOP count, timed windows, memory.

Only window edges synchronise, so the steps inside run exactly as in training; the edge work
(GC, telemetry, one untimed step), the timeout and the busy trace, each with its why:
docs/methodology.md, "Inside every rank".
"""

from __future__ import annotations

import contextlib
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist

from torchscale.contracts.finding import Finding
from torchscale.contracts.gc_pause import cyclic_gc_paused
from torchscale.contracts.schema.cell_telemetry import RankTelemetry
from torchscale.contracts.schema.diagnosis import Reason
from torchscale.contracts.step_phases import STEP_EXTRAS, seconds_column
from torchscale.contracts.wording.cell_reasons import coded
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.rank.telemetry.rank import rank_sampler
from torchscale.rank.telemetry.sampler import Sampler
from torchscale.rank.telemetry.window_figures import summarise_rank
from torchscale.rank.tensor_bytes import static_bytes
from torchscale.rank.worker.allocator import AllocatorStats, allocator_stats, merge_windows
from torchscale.rank.worker.busy_trace import BusyReading, trace_rank
from torchscale.rank.worker.calibration import Calibration
from torchscale.rank.worker.compile_watch import CompileCounts, WindowCompiles
from torchscale.rank.worker.fixed_costs import RankFixedCosts
from torchscale.rank.worker.harness import collective_timeout
from torchscale.rank.worker.measured_peak import MeasuredPeak
from torchscale.rank.worker.model_parallel import replica_flops
from torchscale.rank.worker.phases import PhaseRecorder, PhaseSeconds, backward_split, trainable
from torchscale.rank.worker.steady_state import agreed_steps, collective_timeout_s, warm_up
from torchscale.rank.worker.timing import make_timer, resolve_timing, synchronize
from torchscale.rank.worker.trainer import Trainer

PIPELINE_PHASES_NOTE = coded("unavailable.pipeline_phases")
# untimed steps after each window's opening edge, before its clocks start (CellResult's
# window_edge_steps)
WINDOW_EDGE_STEPS = 1


@dataclass
class Window:
    wall_s: float
    step_s: list[float]
    # per phase (step_phases.STEP_PHASES), one value per step; None: phase timing was off
    phases: PhaseSeconds | None = None
    phase_notes: dict[str, Reason] = field(default_factory=dict)
    # pipelines: seconds this rank computed in each step (torchscale/rank/parallel/busy.py)
    busy_s: list[float] | None = None
    # per step, seconds the training thread waited for a CPU (telemetry/cpu_wait.py); None:
    # not measured (no phase timing, or the clock is unavailable: `phase_notes["cpu_wait"]`)
    cpu_wait_s: list[float | None] | None = None
    # per step, seconds the training thread ran on a CPU (read with the wait by the same
    # clock; its intra-op threads not counted); None exactly when `cpu_wait_s` is
    cpu_time_s: list[float | None] | None = None
    # per step, seconds a plug-in's DDP comm hook held its launches, and the part of that
    # before the last gradient (comm_hold.py); None: no hook was timed
    comm_hold_s: list[float | None] | None = None
    comm_hold_backward_s: list[float | None] | None = None
    # per step, a user's job's seconds inside its model's forward (step_phases.MODEL_FORWARD);
    # None: not marked (a cell; a job whose model the probe could not hook)
    model_forward_s: list[float | None] | None = None
    # the fixed calibration timed after the closing edge (calibration.py): device and wall
    # seconds per rep, and the wall seconds the whole calibration took (its cost to the run)
    calibration_s: list[float] | None = None
    calibration_wall_s: list[float] | None = None
    calibration_cost_s: float | None = None
    calibration_timer: str | None = None  # Calibration.timer

    def step_extras(self, step: int) -> dict[str, float | None]:
        """The step's CPU wait and time, comm holds and model forward, by their step_phases
        names: those the window measured (the steps table and the step records both read them
        here), each kept in its `seconds_column` field."""
        lists = {name: getattr(self, seconds_column(name)) for name in STEP_EXTRAS}
        return {name: v[step] for name, v in lists.items() if v is not None}


@dataclass
class RankMeasurement:
    """Everything one rank measured; gathered to rank 0."""

    rank: int
    host: str
    timing: str
    steps: int
    warmup_s: list[float]
    windows: list[Window] = field(default_factory=list)
    # every no_sync window's steps pooled (None: no no_sync window); each window interleaved
    # with a synchronised one, in `no_sync_windows`
    no_sync: Window | None = None
    no_sync_windows: list[Window] = field(default_factory=list)
    measured_peak: MeasuredPeak | None = None  # this rank's node's, for mfu_measured
    flops_per_step: float | None = None
    flops_note: Reason | None = None
    peak_allocated: int | None = None
    peak_reserved: int | None = None
    peak_rss: int | None = None
    static: dict[str, int] = field(default_factory=dict)
    # phase -> why it is not measured as named (e.g. grad_sync_wait under FSDP)
    phase_notes: dict[str, Reason] = field(default_factory=dict)
    profile_capture_s: float | None = None  # wall time of the profiled steps (capture.py)
    profile_files: list[str] = field(default_factory=list)
    profile_notes: list[Finding] = field(default_factory=list)
    telemetry: RankTelemetry | None = None  # None: measurement.telemetry.enabled is false
    allocator: AllocatorStats | None = None  # CUDA only
    compile_s: float | None = None  # training.compile: dynamo's compile time in the warm-up
    # per warm-up step: torch.compile compiled in it (all False when compile is off)
    warmup_compiled: list[bool] = field(default_factory=list)
    extra_warmup_steps: int = 0  # warm-up steps run beyond measurement.warmup_steps
    # training.compile: what dynamo compiled inside the measured windows (sync and no_sync),
    # summed; None with the reason in compile_note when its tallies could not be read
    window_compiles: CompileCounts | None = None
    graph_breaks: int | None = None  # training.compile: graph breaks up to the windows' end
    compile_note: Reason | None = None
    # tp > 1: this rank's reduced profiled steps (analysis.trace.reduce.RankReduction) or why none
    comm_probe: Any = None
    window_edge_steps: int = WINDOW_EDGE_STEPS  # untimed steps before each window's clocks
    # GPU cells: the CUDA trace of the busy share after the windows (busy_trace.py); None on CPU
    gpu_busy: BusyReading | None = None
    fixed: RankFixedCosts = field(default_factory=RankFixedCosts)


def phase_recorder(trainer: Trainer, steps: int) -> PhaseRecorder:
    """A recorder for `steps` steps of `trainer`: CUDA events on GPUs whatever the step timer
    (phases.py says why), perf_counter on CPU."""
    params = trainable(trainer.model)
    strategy = trainer.spec.cell.strategy
    parallel = trainer.spec.cell.parallel
    if parallel is not None and parallel.hybrid == "fsdp_tp":
        strategy = "fsdp"  # FSDP2's hooks fire after its reduce-scatter, as under fsdp
    return PhaseRecorder(
        steps,
        trainer.spec.training.grad_accum_steps,
        trainer.device,
        cuda_events=trainer.device.type == "cuda",
        split_reason=backward_split(strategy, params),
        hold=trainer.comm_hold,
    )


def run_window(
    trainer: Trainer,
    steps: int,
    timing: str,
    skip_sync: bool = False,
    phases: bool = True,
    telemetry: Sampler | None = None,
    on_open: Callable[[], None] | None = None,
    calibration: Calibration | None = None,
) -> Window:
    """`steps` training steps between two barriers; per-step times from the timer, and per-step
    phase times unless `phases` is False (the overhead benchmark's control). `telemetry`
    samples from just before the opening edge to just after the closing one.

    After the opening edge, `WINDOW_EDGE_STEPS` untimed steps (no timer, no phase recorder,
    the same `skip_sync`), then a device synchronize: the wall clock and the step timers start
    on a steady step, whatever the path (DDP, FSDP, a pipeline runner, no_sync, a comm hook).
    `on_open` is called there, just before the clocks start. `calibration` is timed right
    after the closing edge, every rank at once, outside every timer."""
    device = trainer.device
    timer = make_timer(timing, steps, device)
    # under pipelining forward and backward interleave inside the schedule: no phases
    recorder = phase_recorder(trainer, steps) if phases and trainer.runner is None else None
    hooks = recorder.hooks(trainable(trainer.model)) if recorder else contextlib.nullcontext()
    # the cyclic GC collects at the opening edge, never inside the window, where it would stall
    # a rank at a random point: a straggler made by the runtime (docs/methodology.md, step 5)
    calibrated: tuple[list[float], list[float], float] | None = None
    with hooks, cyclic_gc_paused(collect_first=True):
        if telemetry is not None:
            telemetry.start()
        try:
            synchronize(device)
            dist.barrier()
            for _ in range(WINDOW_EDGE_STEPS):
                trainer.step(skip_gradient_sync=skip_sync)
            if trainer.runner is not None:
                trainer.runner.clear_busy()  # the edge step's stage time: not in the window
            synchronize(device)
            if on_open is not None:  # the caller's reading of the timed steps starts here
                on_open()
            if telemetry is not None:  # the window's energy from here, not the edge work
                telemetry.mark_open()
            start = time.perf_counter()
            for i in range(steps):
                timer.start(i)
                trainer.step(skip_gradient_sync=skip_sync, phases=recorder)
                timer.stop(i)
            synchronize(device)
            dist.barrier()
            wall = time.perf_counter() - start
            if telemetry is not None:  # only samples between these edges count
                telemetry.mark_window(start, start + wall)
            if calibration is not None:
                began = time.perf_counter()
                calibrated = (*calibration.run(), time.perf_counter() - began)
        finally:
            if telemetry is not None:
                telemetry.stop()
    window = Window(wall, timer.seconds())
    if calibrated is not None:
        window.calibration_s, window.calibration_wall_s, window.calibration_cost_s = calibrated
        window.calibration_timer = calibration.timer if calibration is not None else None
    if trainer.runner is not None:
        window.busy_s = trainer.runner.stage_busy_s
        trainer.runner.clear_busy()
        window.phase_notes = {"phases": PIPELINE_PHASES_NOTE}
    if recorder is not None:
        window.phases = recorder.seconds()
        window.phase_notes = dict(recorder.notes)
        window.cpu_wait_s = recorder.cpu_wait()
        window.cpu_time_s = recorder.cpu_time()
        held = recorder.comm_hold()
        if held is not None:
            window.comm_hold_s, window.comm_hold_backward_s = held
        if recorder.cpu_wait_note is not None:
            window.phase_notes["cpu_wait"] = recorder.cpu_wait_note
    return window


def watched_window(
    watch: WindowCompiles | None, trainer: Trainer, steps: int, timing: str, **options: Any
) -> Window:
    """`run_window`, with dynamo's tallies read just outside its timed steps when `watch`: from
    after the untimed edge step (a compile there times no step) to after the closing edge."""
    if watch is None:
        return run_window(trainer, steps, timing, **options)
    before: list[CompileCounts | None] = []
    window = run_window(
        trainer, steps, timing, on_open=lambda: before.append(watch.start()), **options
    )
    watch.stop(before[0] if before else None)
    return window


def pooled_window(windows: list[Window]) -> Window:
    """The steps of several windows as one (wall times summed, per-step lists joined)."""
    phases: PhaseSeconds | None = None
    if all(w.phases is not None for w in windows):
        phases = {}
        for w in windows:
            for name, values in (w.phases or {}).items():
                phases.setdefault(name, []).extend(values)
    return Window(
        wall_s=sum(w.wall_s for w in windows),
        step_s=[t for w in windows for t in w.step_s],
        phases=phases,
        phase_notes={k: v for w in windows for k, v in w.phase_notes.items()},
    )


def count_flops(spec: WorkerSpec) -> tuple[float | None, Reason | None]:
    """FLOPs of one training step on this rank, counted on the meta device (docs/methodology.md,
    step 4), or None with the reason. tp, pp and hybrid cells: the replica's FLOPs shared
    equally by its ranks, so that MFU counts each replica once."""
    parallel = spec.cell.parallel
    share = parallel.tp * parallel.pp if parallel is not None else 1
    try:
        total = replica_flops(spec) / share
    except Exception as exc:  # a plug-in's code, on meta tensors: any error it raises
        failed = {"error": f"{type(exc).__name__}: {exc}"}
        return None, Finding(code="unavailable.flop_count_failed", figures=failed)
    if total <= 0:
        return None, coded("unavailable.no_flops_counted")
    return total, None


def compile_seconds() -> float | None:
    """Seconds torch.compile spent compiling in this process (dynamo's `total_wall_time`:
    docs/methodology.md, "Compile time"), or None where its private API cannot be read."""
    try:
        from torch._dynamo.utils import calculate_time_spent

        spent = calculate_time_spent().get("total_wall_time")
    except Exception:  # private API: absent or changed in this torch
        return None
    return float(spent) if isinstance(spent, (int, float)) else None


def static_memory(trainer: Trainer) -> dict[str, int]:
    """Exact bytes of parameters, gradients and optimizer state held by this rank (shards
    under FSDP)."""
    return static_bytes(list(trainer.model.parameters()), [trainer.optimizer])


def peak_rss_bytes() -> int:
    """Peak resident set of this process (Linux reports KiB)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def measured_steps(result: RankMeasurement) -> list[float]:
    """Every synchronised step time this rank measured."""
    return [t for w in result.windows for t in w.step_s]


def measure(trainer: Trainer, host: str) -> RankMeasurement:
    spec = trainer.spec
    settings = spec.measurement
    device = trainer.device
    timing = resolve_timing(settings.timing, device)
    compiled = bool(spec.training.compile)
    started = time.perf_counter()
    warm = warm_up(trainer, settings.warmup_steps, watch_compile=compiled)
    warmup_s = time.perf_counter() - started
    off = coded("unavailable.flops_off")
    flops, flops_note = count_flops(spec) if settings.flops else (None, off)
    steps = settings.steps or agreed_steps(settings.duration_s or 0.0, warm, device)
    result = RankMeasurement(
        dist.get_rank(),
        host,
        timing,
        steps,
        warm.step_s,
        flops_per_step=flops,
        flops_note=flops_note,
        warmup_compiled=warm.compiled,
        extra_warmup_steps=warm.extra_steps,
    )
    result.fixed.warmup_s = warmup_s
    watch = WindowCompiles() if compiled else None
    if compiled:
        result.compile_s = compile_seconds()
    sampler = rank_sampler(settings.telemetry, device)
    calibration = Calibration(device)
    per_window_allocator: list[AllocatorStats] = []
    interleave = (
        settings.comm_overhead and spec.cell.strategy == "ddp" and dist.get_world_size() > 1
    )
    peak_allocated = peak_reserved = 0
    timeout_s = collective_timeout_s(warm, device)
    trainer.settings["collective_timeout_s"] = timeout_s
    with collective_timeout(timeout_s):
        for _ in range(settings.repeats):
            # peaks of the training windows only: under no_sync() DDP accumulates into fresh
            # .grad tensors beside its buckets, a second copy of the gradients training never
            # holds
            if device.type == "cuda":
                before = torch.cuda.memory_stats(device)
                torch.cuda.reset_peak_memory_stats(device)
            result.windows.append(
                watched_window(
                    watch, trainer, steps, timing, telemetry=sampler, calibration=calibration
                )
            )
            if device.type == "cuda":
                peak_allocated = max(peak_allocated, int(torch.cuda.max_memory_allocated(device)))
                peak_reserved = max(peak_reserved, int(torch.cuda.max_memory_reserved(device)))
                after = torch.cuda.memory_stats(device)
                per_window_allocator.append(allocator_stats(before, after))
            if interleave:
                # right after its synchronised window, so both see the same machine state
                result.no_sync_windows.append(
                    watched_window(watch, trainer, steps, timing, skip_sync=True)
                )
        # outside every window and timer: how much of a step the GPU is busy (every rank)
        result.gpu_busy = trace_rank(trainer)
    if watch is not None:
        result.window_compiles, result.compile_note = watch.total, watch.note or warm.note
        result.graph_breaks = watch.last.graph_breaks if watch.last is not None else None
    result.static = static_memory(trainer)  # optimizer state exists after the first step
    if device.type == "cuda":
        result.peak_allocated = peak_allocated
        result.peak_reserved = peak_reserved
        result.allocator = merge_windows(per_window_allocator)
    if sampler is not None:
        result.telemetry = summarise_rank(result.rank, host, sampler.report())
    result.peak_rss = peak_rss_bytes()
    if result.no_sync_windows:
        result.no_sync = pooled_window(result.no_sync_windows)
    for window in [*result.windows, *([result.no_sync] if result.no_sync else [])]:
        for phase, note in window.phase_notes.items():
            result.phase_notes.setdefault(phase, note)
    return result
