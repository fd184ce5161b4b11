"""Trace capture inside the worker: extra steps after the measured windows, never inside them
(docs/profiling.md, "What a profile run does" and "What is captured").

Tool "torch": `record_function` phase ranges (markers.py), the trace written atomically (fsynced
under a temporary name, renamed) to `<trace_dir>/rank<k>.trace.json.gz` (torch gzips a .gz
path). Tool "nsys": NVTX ranges only, each trigger (`CAPTURE_ENV`) between barriers, as nsys
starts and stops every process's collection at the first trigger of any. Either way
`rank<k>.phases.json` holds the active steps' own phase and step times (the capture overhead's
input), and the capture's wall time is returned (`profile.capture_s`).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchscale.contracts.atomic import write_text_atomic
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.profile import note
from torchscale.contracts.worker_spec import (
    NVTX_CAPTURE,
    CaptureRange,
    capture_range,
    phases_name,
    trace_name,
)
from torchscale.rank.worker import markers

if TYPE_CHECKING:
    from torchscale.contracts.worker_spec import ProfileSpec
    from torchscale.rank.worker.timing import StepTimer
    from torchscale.rank.worker.trainer import Trainer


@dataclass
class CaptureOutcome:
    """What one rank's capture left: files (names inside trace_dir), time, notes."""

    capture_s: float
    files: list[str] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)


@dataclass(frozen=True)
class Trigger:
    """What starts and stops nsys's collection on this rank (`capture_range` says which)."""

    mode: CaptureRange
    start: Callable[[], None]
    stop: Callable[[], None]


def nsys_trigger(
    mode: CaptureRange, device_type: str, backend: markers.NvtxBackend | None
) -> tuple[Trigger | None, Finding | None]:
    """The trigger for `mode` on this rank, or None with why (nothing would be captured)."""
    if mode == "cudaProfilerApi":
        if device_type != "cuda":
            return None, note("profile.trigger_cpu")
        import torch.cuda.profiler as cuda_profiler

        return Trigger(mode, cuda_profiler.start, cuda_profiler.stop), None
    if mode == "nvtx":
        if backend is None:
            return None, note("profile.trigger_no_nvtx", range=NVTX_CAPTURE)
        nvtx = backend

        def start() -> None:  # empty: a range around the steps would read as one op
            nvtx.push(NVTX_CAPTURE)
            nvtx.pop()

        return Trigger(mode, start, lambda: None), None
    return None, None


def _fire(action: Callable[[], None], what: str, rank: int) -> Finding | None:
    """Call a trigger; a failure costs the trace, never the cell's measured windows."""
    try:
        action()
    except Exception as exc:  # cudaProfilerStart/Stop raise RuntimeError on a CUDA error
        return note("profile.capture_failed", on_rank=rank, what=what, error=str(exc))
    return None


def _export_atomic(prof: Any, target: Path) -> None:
    """export_chrome_trace to a temporary .gz beside `target`, fsync, rename over it."""
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial.gz")
    try:
        prof.export_chrome_trace(str(partial))
        with partial.open("rb") as handle:
            os.fsync(handle.fileno())
        partial.replace(target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        raise


def _timed_step(trainer: Trainer, timer: StepTimer, step: int, recorder: Any) -> None:
    """One step under the measured windows' step timer (the capture overhead compares them)."""
    timer.start(step)
    trainer.step(phases=recorder)
    timer.stop(step)


def capture(trainer: Trainer, profile: ProfileSpec, rank: int) -> CaptureOutcome:
    """Run the profiled steps on this rank and write its files (every rank calls this)."""

    from torchscale.rank.worker.measure import PIPELINE_PHASES_NOTE, phase_recorder
    from torchscale.rank.worker.phases import trainable
    from torchscale.rank.worker.timing import make_timer, resolve_timing, settle

    directory = Path(profile.trace_dir)
    directory.mkdir(parents=True, exist_ok=True)
    skipped = profile.wait + profile.warmup
    total = skipped + profile.active
    timing = resolve_timing(trainer.spec.measurement.timing, trainer.device)
    timer = make_timer(timing, total, trainer.device)
    # pipelines interleave forward and backward inside the schedule: no phase split
    recorder = phase_recorder(trainer, total) if trainer.runner is None else None
    outcome = CaptureOutcome(0.0)
    settle(trainer.device)
    started = time.perf_counter()
    hooks = recorder.hooks(trainable(trainer.model)) if recorder else contextlib.nullcontext()
    with hooks:
        if profile.tool == "torch":
            problem = _torch_steps(trainer, profile, recorder, timer, directory / trace_name(rank))
            if problem is None:
                outcome.files.append(trace_name(rank))
            else:
                outcome.notes.append(problem)
        else:
            outcome.notes += _nsys_steps(trainer, profile, recorder, timer, rank)
    phases = recorder.seconds() if recorder is not None else {}
    notes = recorder.notes if recorder is not None else {"phases": PIPELINE_PHASES_NOTE}
    cpu_wait = recorder.cpu_wait() if recorder is not None else None
    cpu_time = recorder.cpu_time() if recorder is not None else None
    if recorder is not None and recorder.cpu_wait_note is not None:
        notes = {**notes, "cpu_wait": recorder.cpu_wait_note}
    record = phase_record(
        rank,
        profile.tool,
        list(range(skipped, total)),
        timer.seconds()[skipped:],
        timing,
        {name: values[skipped:] for name, values in phases.items()},
        cpu_wait[skipped:] if cpu_wait is not None else None,
        cpu_time[skipped:] if cpu_time is not None else None,
        {k: v.model_dump() if isinstance(v, Finding) else v for k, v in notes.items()},
        "cuda_events" if trainer.device.type == "cuda" else "perf_counter",
    )
    try:
        write_phase_record(directory, rank, record)
        outcome.files.append(phases_name(rank))
    except OSError as exc:
        failed = {"file": phases_name(rank), "error": str(exc)}
        outcome.notes.append(note("profile.not_written", on_rank=rank, **failed))
    outcome.capture_s = time.perf_counter() - started
    return outcome


def phase_record(
    rank: int,
    tool: str,
    steps: list[int],
    step_s: list[float],
    timing: str,
    phases: dict[str, list[Any]],
    cpu_wait: list[Any] | None,
    cpu_time: list[Any] | None,
    notes: dict[str, Any],
    clock: str,
) -> dict[str, Any]:
    """`rank<k>.phases.json`: the traced steps' own step and phase times, as the built-in
    capture and a user's job's traced window (rank/own_job/trace_window.py) both write it."""
    return {
        "rank": rank,
        "tool": tool,
        "unit": "s",
        "steps": steps,
        "step_s": step_s,
        "timing": timing,
        "phases": phases,
        # per step, seconds the training thread waited for a CPU (telemetry/cpu_wait.py)
        "cpu_wait_s": cpu_wait,
        # per step, seconds it ran on a CPU (read with the wait; intra-op threads not counted)
        "cpu_time_s": cpu_time,
        # why a phase is null: a code and its figures (contracts/wording/cell_reasons.py)
        "notes": notes,
        "clock": clock,
    }


def write_phase_record(directory: Path, rank: int, record: dict[str, Any]) -> None:
    """The record, atomically, where the analysis reads it (profile_windows.read_phase_record)."""
    write_text_atomic(directory / phases_name(rank), json.dumps(record, indent=1) + "\n")


def _nsys_steps(
    trainer: Trainer, profile: ProfileSpec, recorder: Any, timer: StepTimer, rank: int
) -> list[Finding]:
    """The steps under Nsight Systems: wait and warm-up unmarked and outside the capture, the
    active steps marked and inside it (see the module docstring for the trigger and barriers)."""
    import torch.distributed as dist

    from torchscale.rank.worker.timing import settle

    backend, nvtx_note = markers.nvtx_backend()
    notes = [nvtx_note] if nvtx_note else []
    trigger, why_not = nsys_trigger(capture_range(), trainer.device.type, backend)
    if why_not:
        notes.append(note("profile.nothing_captured", on_rank=rank, why=why_not.model_dump()))
    skipped = profile.wait + profile.warmup
    for step in range(skipped):
        _timed_step(trainer, timer, step, recorder)
    settle(trainer.device)  # every rank is done with its untraced steps before anyone starts
    if trigger is not None:
        notes += filter(None, [_fire(trigger.start, "start", rank)])
    dist.barrier()  # the collection is on before any rank's first traced step
    marks = markers.Markers(nvtx=backend)
    marks.mark(markers.rank_mark(rank))
    for step in range(skipped, skipped + profile.active):
        with markers.use(marks), marks.step(step):
            _timed_step(trainer, timer, step, recorder)
    settle(trainer.device)  # every rank's last traced step is over before anyone stops
    if trigger is not None:
        notes += filter(None, [_fire(trigger.stop, "stop", rank)])
    return notes


def _torch_steps(
    trainer: Trainer, profile: ProfileSpec, recorder: Any, timer: StepTimer, target: Path
) -> Finding | None:
    """The steps under torch.profiler; the trace written, or why not (a write error must not
    cost the cell its measured windows: the other ranks go on, and the result says so)."""
    import torch
    from torch.profiler import ProfilerActivity, schedule

    from torchscale.rank.worker.timing import synchronize

    activities = [ProfilerActivity.CPU]
    if trainer.device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    total = profile.wait + profile.warmup + profile.active
    exported: list[Finding | None] = []

    def on_ready(prof: Any) -> None:
        try:
            _export_atomic(prof, target)
            exported.append(None)
        except OSError as exc:
            exported.append(note("profile.not_written", file=target.name, error=str(exc)))

    with (
        markers.use(markers.Markers(torch_profiler=True)),
        torch.profiler.profile(
            activities=activities,
            schedule=schedule(
                wait=profile.wait, warmup=profile.warmup, active=profile.active, repeat=1
            ),
            on_trace_ready=on_ready,
            record_shapes=profile.record_shapes,
            with_stack=profile.with_stack,
        ) as prof,
    ):
        for step in range(total):
            _timed_step(trainer, timer, step, recorder)  # prof.step() (and the export) outside
            prof.step()
        synchronize(trainer.device)
    if not exported:  # the schedule's last active step ends at the last prof.step()
        on_ready(prof)
    return exported[0]
