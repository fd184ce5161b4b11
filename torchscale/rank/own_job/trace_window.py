"""The traced window of a user's job: K optimizer steps traced after the measured ones, never
inside them (the profiler slows the steps it traces), written as the built-in profile writes
its traces (rank/worker/capture.py: `rank<k>.trace.json.gz` and `rank<k>.phases.json` beside
it), so the host analyses them with the built-in profile's own reader and combine step.

Where the window lies, in optimizer steps counted from 1 (`WindowPlan`): after the W warm-up
and N measured steps (and, on a GPU, the B steps of the busy capture: busy_window.py), one
profiler warm-up step (torch.profiler's schedule warm-up: its
start-up costs land there, untraced), then the K traced steps; with N = 0 (the job measured to
its own end) the window follows the warm-up and the measured steps follow the window. With a
stop the rank stops at the window's last step, so every rank still stops at one agreed step.

Tool "torch": torch.profiler (CPU, and CUDA where the job's parameters are on a GPU) started
in the optimizer post hook that opens the window, `step()` at each later one, stopped at the
last; `ProfilerStep#<n>` ranges and `torchscale:<phase>` ranges around data, backward and the
optimizer (forward is the rest, as in the probe's phases). Tool "nsys": the same phase ranges
and a `ProfilerStep#<n>` range per step as NVTX, between `torch.cuda.profiler.start()` and
`stop()` (the `--capture-range=cudaProfilerApi` the host's `nsys profile` waits for), each
fired after a device synchronize and, where torch.distributed is initialised, a barrier: nsys
starts and stops every process's collection at the first trigger of any.

One profiler at a time (shared/reference/own-job.md, section 4): a job already running
torch.profiler or the autograd profiler is left alone and its rank's trace skipped
(`unavailable.own_profiler`); any other failure is `own_job.trace_failed`. Either is written as
`rank<k>.trace_note.json` and the job runs on, its measurement kept.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchscale.contracts.atomic import write_text_atomic
from torchscale.contracts.step_phases import STEP_PHASES
from torchscale.rank.own_job import PROFILER_WARMUP, TRACE_NOTE_FILE
from torchscale.rank.own_job.steps import StepSeconds

TOOLS = ("torch", "nsys")
OWN_PROFILER = "unavailable.own_profiler"
TRACE_FAILED = "own_job.trace_failed"


@dataclass(frozen=True)
class WindowPlan:
    """Which optimizer steps (counted from 1) are warm-up, measured, traced, and the last."""

    warmup: int
    steps: int  # measured steps; 0: every step after the warm-up and the window
    traced: int  # K; 0: no window
    busy: int = 0  # B steps of the busy capture after the measured ones (with N > 0 only)

    @property
    def span(self) -> int:
        """Steps the window takes: the profiler's warm-up and the K traced steps."""
        return PROFILER_WARMUP + self.traced if self.traced else 0

    @property
    def busy_after(self) -> int:
        """The step whose end starts the busy capture: the last measured one."""
        return self.warmup + self.steps

    @property
    def opens_after(self) -> int:
        """The step whose end opens the window (the profiler starts in its post hook)."""
        return self.warmup + self.steps + self.busy

    @property
    def closes_after(self) -> int:
        """The step whose end closes it: the last traced step."""
        return self.opens_after + self.span

    @property
    def traced_steps(self) -> range:
        return range(self.opens_after + PROFILER_WARMUP + 1, self.closes_after + 1)

    def measured(self, step: int) -> bool:
        if self.steps:
            return self.warmup < step <= self.warmup + self.steps
        return step > self.closes_after

    def last(self) -> int | None:
        """The step after which the rank stops (None: it never stops the job)."""
        return self.closes_after if self.steps else None


def own_profiler_running() -> bool:
    """torch.profiler or the autograd profiler already on in this process: a second start
    would silently take its session over (own-job.md section 4), so the job's wins."""
    import torch

    return bool(torch.autograd.profiler._is_profiler_enabled)


def note_file(folder: Path, rank: int) -> Path:
    return folder / TRACE_NOTE_FILE.format(rank=rank)


def write_note(folder: Path, rank: int, code: str, **figures: Any) -> None:
    """Why this rank has no trace, as a code and its figures (never raises: fail open)."""
    with contextlib.suppress(Exception):
        finding = {"code": code, "figures": {"rank": rank, **figures}}
        write_text_atomic(note_file(folder, rank), json.dumps(finding))


def opened(
    folder: Path, rank: int, tool: str, plan: WindowPlan, device: Any, step: int
) -> TraceWindow | None:
    """At the end of `step`, the step before the window: the window with its profiler started,
    or None and why not (a note file; the job and its measurement go on)."""
    if own_profiler_running():
        write_note(folder, rank, OWN_PROFILER)
        return None
    window = None
    try:
        window = TraceWindow(folder, rank, tool, plan, device)
        window.open(step)
    except Exception as exc:
        if window is not None:
            window.abandon()
        write_note(folder, rank, TRACE_FAILED, error=f"{type(exc).__name__}: {exc}")
        return None
    return window


class TraceWindow:
    """One rank's profiler over the window (see the module docstring). Every method may
    raise: the probe writes the note and drops the window, the job runs on."""

    def __init__(self, folder: Path, rank: int, tool: str, plan: WindowPlan, device: Any) -> None:
        if tool not in TOOLS:
            raise ValueError(f"trace tool {tool!r}: not one of {', '.join(TOOLS)}")
        self.folder, self.rank, self.tool, self.plan = folder, rank, tool, plan
        self.device = device  # the CUDA device of the job's parameters, or None (CPU)
        self.prof: Any = None
        self.trigger: Any = None
        self.markers: Any = None
        self.step_handle: Any = None
        self.capturing = False
        self.rank_mark = ""
        self.exported: list[BaseException | None] = []

    # ------------------------------------------------------------------ the window's edges

    def open(self, step: int) -> None:
        """At the end of `plan.opens_after`: start the profiler (torch) or get the trigger
        ready (nsys: the capture starts with the first traced step)."""
        from torchscale.rank.worker import markers

        self.folder.mkdir(parents=True, exist_ok=True)  # as the built-in capture makes its own
        if self.tool == "torch":
            import torch
            from torch.profiler import ProfilerActivity, schedule

            activities = [ProfilerActivity.CPU]
            if self.device is not None:
                activities.append(ProfilerActivity.CUDA)
            self.prof = torch.profiler.profile(
                activities=activities,
                schedule=schedule(
                    wait=0, warmup=PROFILER_WARMUP, active=self.plan.traced, repeat=1
                ),
                on_trace_ready=self._export,
            )
            self.prof.start()
            self.markers = markers.Markers(torch_profiler=True)
            return
        from torchscale.rank.worker.capture import nsys_trigger

        backend, _ = markers.nvtx_backend()
        device_type = "cuda" if self.device is not None else "cpu"
        trigger, why = nsys_trigger("cudaProfilerApi", device_type, backend)
        if trigger is None:
            from torchscale.contracts import wording

            raise RuntimeError(wording.say(why) if why is not None else "no nsys trigger")
        self.trigger = trigger
        self.markers = markers.Markers(nvtx=backend)
        self.rank_mark = markers.rank_mark(self.rank)  # nsys's reader finds the rank by it

    def step_ended(self, step: int) -> None:
        """The end of optimizer step `step` inside the window (after `opens_after`)."""
        if self.tool == "torch":
            self.prof.step()  # the last one exports (`on_trace_ready`)
            return
        if self.step_handle is not None:
            self.markers.nvtx.end(self.step_handle)
            self.step_handle = None
        if step == self.plan.opens_after + PROFILER_WARMUP:  # the first traced step begins
            self._settled()
            self.trigger.start()
            self.capturing = True
            self.markers.mark(self.rank_mark)
        if step < self.plan.closes_after:  # numbered as torch.profiler numbers them
            self.step_handle = self.markers.nvtx.start(f"ProfilerStep#{self.number(step + 1)}")

    def close(self) -> None:
        """At the end of the last traced step (after `step_ended`): the trace written."""
        if self.tool == "torch":
            prof, self.prof = self.prof, None
            prof.stop()
            if not self.exported:  # the schedule's last active step ends at its last step()
                self._export(prof)
            if self.exported[0] is not None:
                raise self.exported[0]
            return
        if self.capturing:
            self._settled()
            self.capturing = False
            self.trigger.stop()

    def abandon(self) -> None:
        """Stop whatever is running, write nothing (the job ended inside the window)."""
        with contextlib.suppress(Exception):
            if self.prof is not None:
                prof, self.prof = self.prof, None
                prof.stop()
        with contextlib.suppress(Exception):
            if self.capturing:
                self.capturing = False
                self.trigger.stop()

    def write_phases(
        self, done: Mapping[int, StepSeconds], timing: str, note: dict[str, Any] | None
    ) -> None:
        """After `close`: the traced steps' own phase record (rank<k>.phases.json, as the
        built-in capture writes it) from `done`, the resolved steps by number; `note`: why
        grad_sync_wait was not split, where it was not."""
        from torchscale.rank.worker.capture import phase_record, write_phase_record

        numbers = [n for n in self.plan.traced_steps if n in done]
        traced = [done[n] for n in numbers]
        record = phase_record(
            self.rank,
            self.tool,
            [self.number(n) for n in numbers],
            [st.step_s for st in traced],
            timing,
            {n: [st.phases[n] for st in traced] for n in STEP_PHASES},
            [st.cpu_wait_s for st in traced],
            [st.cpu_time_s for st in traced],
            {"grad_sync_wait": note} if note else {},
            timing,
        )
        write_phase_record(self.folder, self.rank, record)

    def number(self, step: int) -> int:
        """The `ProfilerStep#<n>` of optimizer step `step`: torch.profiler's count from its
        start (the profiler's warm-up step is 0, the traced ones 1..K)."""
        return step - self.plan.opens_after - 1

    # ------------------------------------------------------------------ inside the steps

    def range(self, phase: Any) -> contextlib.AbstractContextManager[None]:
        """A `torchscale:<phase>` range for whichever profiler runs (none before nsys's
        capture starts: the profiler's warm-up step is not traced)."""
        if self.markers is None or (self.tool == "nsys" and not self.capturing):
            return contextlib.nullcontext()
        return self.markers.phase(phase)  # type: ignore[no-any-return]

    def enter(self, phase: str) -> Any:
        """The phase's range, entered; None where it could not be (fail open)."""
        try:
            scope = self.range(phase)
            scope.__enter__()
        except Exception:
            return None
        return scope

    @staticmethod
    def leave(scope: Any) -> None:
        if scope is not None:
            with contextlib.suppress(Exception):
                scope.__exit__(None, None, None)

    def ranged(self, phase: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`call(*args, **kwargs)` inside the phase's range; a range that fails costs the
        range, never the call."""
        scope = self.enter(phase)
        try:
            return call(*args, **kwargs)
        finally:
            self.leave(scope)

    # ------------------------------------------------------------------ helpers

    def _export(self, prof: Any) -> None:
        from torchscale.contracts.worker_spec import trace_name
        from torchscale.rank.worker.capture import _export_atomic

        try:
            _export_atomic(prof, self.folder / trace_name(self.rank))
            self.exported.append(None)
        except Exception as exc:  # raised again at close(): the trace is lost, not the job
            self.exported.append(exc)

    def _settled(self) -> None:
        """Every rank done with the steps before (for nsys's one collection of all)."""
        import torch

        if self.device is not None:
            torch.cuda.synchronize(self.device)
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            dist.barrier()
