"""Trace capture inside the worker: extra steps after the measured windows, never inside them.

With a `ProfileSpec` in the worker spec, every rank runs wait + warmup + active more steps once
its windows are done (same model, same batch, same injected delays):

- tool "torch": under `torch.profiler.profile(schedule=schedule(wait, warmup, active))`, CPU
  activity always and CUDA activity on GPUs, with the phases marked by `record_function`
  ranges (torchscale/worker/markers.py) and torch.profiler's own `ProfilerStep#<n>` ranges.
  The trace is written compressed to `<trace_dir>/rank<k>.trace.json.gz` (torch's
  export_chrome_trace gzips a path ending in .gz), atomically: exported under a temporary name in
  the same directory, fsynced, renamed.
- tool "nsys": no torch profiler (Nsight Systems wraps the launch); NVTX ranges only: one mark
  `torchscale:rank=<r>` when the capture starts, then for each active step a `ProfilerStep#<n>`
  start/end range and push/pop phase ranges inside it. The wait and warm-up steps run unmarked,
  so both tools see the same active steps with the same step numbers.

Either way `<trace_dir>/rank<k>.phases.json` holds the worker's own phase timings
(torchscale/worker/phases.py) of the active steps, to cross-check a trace's phase ranges
against. The wall time the capture took is returned (and recorded as `profile.capture_s`).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchscale.atomic import write_text_atomic
from torchscale.worker import markers

if TYPE_CHECKING:
    from torchscale.worker.spec import ProfileSpec
    from torchscale.worker.trainer import Trainer


@dataclass
class CaptureOutcome:
    """What one rank's capture left: files (names inside trace_dir), time, notes."""

    capture_s: float
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def trace_name(rank: int) -> str:
    return f"rank{rank}.trace.json.gz"


def phases_name(rank: int) -> str:
    return f"rank{rank}.phases.json"


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


def capture(trainer: Trainer, profile: ProfileSpec, rank: int) -> CaptureOutcome:
    """Run the profiled steps on this rank and write its files (every rank calls this)."""
    import torch.distributed as dist

    from torchscale.worker.measure import PIPELINE_PHASES_NOTE, phase_recorder
    from torchscale.worker.phases import trainable
    from torchscale.worker.timing import synchronize

    directory = Path(profile.trace_dir)
    directory.mkdir(parents=True, exist_ok=True)
    skipped = profile.wait + profile.warmup
    total = skipped + profile.active
    # pipelines interleave forward and backward inside the schedule: no phase split
    recorder = phase_recorder(trainer, total) if trainer.runner is None else None
    outcome = CaptureOutcome(0.0)
    synchronize(trainer.device)
    dist.barrier()
    started = time.perf_counter()
    hooks = (
        recorder.hooks(trainable(trainer.model))
        if recorder is not None
        else contextlib.nullcontext()
    )
    with hooks:
        if profile.tool == "torch":
            problem = _torch_steps(trainer, profile, recorder, directory / trace_name(rank))
            if problem is None:
                outcome.files.append(trace_name(rank))
            else:
                outcome.notes.append(problem)
        else:
            backend, note = markers.nvtx_backend()
            if note:
                outcome.notes.append(note)
            marks = markers.Markers(nvtx=backend)
            marks.mark(markers.rank_mark(rank))
            for step in range(total):
                if step < skipped:
                    trainer.step(phases=recorder)
                    continue
                with markers.use(marks), marks.step(step):
                    trainer.step(phases=recorder)
            synchronize(trainer.device)
    phases = recorder.seconds() if recorder is not None else {}
    notes = recorder.notes if recorder is not None else {"phases": PIPELINE_PHASES_NOTE}
    record = {
        "rank": rank,
        "tool": profile.tool,
        "unit": "s",
        "steps": list(range(skipped, total)),
        "phases": {name: values[skipped:] for name, values in phases.items()},
        "notes": notes,
        "clock": "cuda_events" if trainer.device.type == "cuda" else "perf_counter",
    }
    try:
        write_text_atomic(directory / phases_name(rank), json.dumps(record, indent=1) + "\n")
        outcome.files.append(phases_name(rank))
    except OSError as exc:
        outcome.notes.append(f"rank {rank}: {phases_name(rank)} not written: {exc}")
    outcome.capture_s = time.perf_counter() - started
    return outcome


def _torch_steps(trainer: Trainer, profile: ProfileSpec, recorder: Any, target: Path) -> str | None:
    """The steps under torch.profiler; the trace written, or why not (a write error must not
    cost the cell its measured windows: the other ranks go on, and the result says so)."""
    import torch
    from torch.profiler import ProfilerActivity, schedule

    from torchscale.worker.timing import synchronize

    activities = [ProfilerActivity.CPU]
    if trainer.device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    total = profile.wait + profile.warmup + profile.active
    exported: list[str | None] = []

    def on_ready(prof: Any) -> None:
        try:
            _export_atomic(prof, target)
            exported.append(None)
        except OSError as exc:
            exported.append(f"{target.name} not written: {exc}")

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
        for _ in range(total):
            trainer.step(phases=recorder)
            prof.step()
        synchronize(trainer.device)
    if not exported:  # the schedule's last active step ends at the last prof.step()
        on_ready(prof)
    return exported[0]
