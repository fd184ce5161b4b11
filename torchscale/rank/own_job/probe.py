"""The probe in one process of a user's job, activated by the carrier once torch is imported.

It installs torch's GLOBAL optimizer step hooks and wraps `torch.autograd.backward` and the
DataLoader iterator's `__next__`; nothing is measured until the first optimizer post hook
decides what this process is: a DataLoader worker (`get_worker_info()` set) stays inert, any
other process that steps an optimizer is a training rank (its rank from torch.distributed once
initialised, else RANK, else 0). Steps: the first optimizer seen at a post hook is the step's
clock; a step ends when its outermost `step` returns (a subclass calling `super().step()` fires
twice, nested: counted once; other optimizers' steps are optimizer time inside the clock's
step). A closure passed to the outermost `step` (Lightning's: forward and backward run inside
it) is timed and taken out of the optimizer's time, so its forward is forward. A batch fetched
with grad disabled (an evaluation's loader) is neither data wait nor samples: it is in the
rest of the step, with the evaluation. After W warm-up and N measured steps the rank writes
`rank<k>.measurement.json`; then, with TORCHSCALE_OWN_JOB_TRACE_STEPS=K, it traces the window
after them (trace_window.py) and, with TORCHSCALE_OWN_JOB_STOP=1, raises SystemExit(0) from
the post hook of the window's last step (W + N without one): every rank stops at the same
agreed step. N = 0: every step after W (and the window) is measured and written at exit (also
on SIGTERM, where the job left its default).
Every failure is recorded once (`rank<k>.probe.json`) and disables the probe: the job runs on.

torch.distributed's blocking collectives are wrapped too: one the training loop calls with grad
enabled outside backward, data and the optimizer's own work (the HF Trainer's all-gather of
the batch's token count, Lightning's broadcast of its SIGTERM flag, a metric's all-reduce) is a
wait for the other ranks, as the gradient all-reduce's is.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import resource
import signal
import socket
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchscale.contracts.atomic import write_text_atomic
from torchscale.contracts.step_phases import STEP_PHASES
from torchscale.rank.own_job import (
    ENV_DIR,
    ENV_STEPS,
    ENV_STOP,
    ENV_TRACE_STEPS,
    ENV_TRACE_TOOL,
    ENV_WARMUP,
    FAILURE_FILE,
    PROBE_FILE,
)
from torchscale.rank.own_job.loop_facts import framework, loader_settings
from torchscale.rank.own_job.step_telemetry import StepTelemetry
from torchscale.rank.own_job.steps import Backward, Clock, StepMarks, StepSeconds, batch_counts
from torchscale.rank.own_job.trace_window import (
    TRACE_FAILED,
    TraceWindow,
    WindowPlan,
    opened,
    write_note,
)

# torch.distributed's collectives the probe times when called blocking (async_op=False)
COLLECTIVES = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_to_all",
    "all_to_all_single", "barrier", "broadcast", "broadcast_object_list", "gather",
    "gather_object", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter",
    "scatter_object_list",
)  # fmt: skip
FSDP2_HOOKS = {"code": "unavailable.fsdp2_hooks", "figures": {}}
MARKED_STEPS = {"code": "unavailable.marked_steps", "figures": {}}
MARKER_CLOCK = -1  # `clock_id` where torchscale.mark_step() ends the steps (no id() is -1)
HOOKS_MISSED = {"code": "unavailable.hooks_missed", "figures": {}}
# the built-in cell's calibration (rank/worker/calibration.py), timed once after the measured
# steps instead of after each of a cell's windows: twice its repetitions, 4-6 ms on an idle core
CALIBRATION_REPS = 16


@dataclass(frozen=True)
class Settings:
    folder: Path
    warmup: int
    steps: int
    stop: bool
    traced: int = 0  # K steps traced after the measured ones (trace_window.py); 0: none
    tool: str = "torch"

    @classmethod
    def from_env(cls, env: Any = None) -> Settings:
        """The host's settings; a malformed number raises (recorded as a probe failure)."""
        env = os.environ if env is None else env
        warmup, steps = int(env.get(ENV_WARMUP) or 0), int(env.get(ENV_STEPS) or 0)
        traced = int(env.get(ENV_TRACE_STEPS) or 0)
        if warmup < 0 or steps < 0 or traced < 0:
            raise ValueError(
                f"{ENV_WARMUP}={warmup}, {ENV_STEPS}={steps} and {ENV_TRACE_STEPS}={traced} "
                "must be >= 0"
            )
        stop = env.get(ENV_STOP, "0") == "1" and steps > 0
        tool = env.get(ENV_TRACE_TOOL) or "torch"
        return cls(Path(env[ENV_DIR]), warmup, steps, stop, traced, tool)


def _env_rank() -> int:
    try:
        return int(os.environ.get("RANK") or 0)
    except ValueError:
        return 0


_FAILED = False


def record_failure(exc: BaseException, rank: int | None = None) -> None:
    """Write `rank<k>.probe.json` once per process (own_job.probe_failed); never raises."""
    global _FAILED
    if _FAILED:
        return
    _FAILED = True
    with contextlib.suppress(Exception):  # nowhere to write: the job runs on regardless
        folder = Path(os.environ[ENV_DIR])
        rank = _env_rank() if rank is None else rank
        figures = {"rank": rank, "pid": os.getpid(), "error": f"{type(exc).__name__}: {exc}"}
        failure = {"code": "own_job.probe_failed", "figures": figures}
        _write_json(folder / FAILURE_FILE.format(rank=rank), failure)


def _write_json(path: Path, data: Any) -> None:
    """Atomically: a reader sees the whole file or none."""
    write_text_atomic(path, json.dumps(data))


class Probe:
    """The hooks' state in one process (see the module docstring)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.role: str | None = None  # None: undecided; "rank" or "inert"
        self.off = False  # failed, inert or written: every hook returns at once
        self.rank = 0
        self.clock: Clock = Clock()
        self.clock_id: int | None = None  # id() of the optimizer that is the step's clock
        self.opt_depth = 0
        self.opt_start: Any = None
        self.closure_depth = 0  # inside the closure an optimizer step called
        self.data_depth = 0
        self.bwd_depth = 0
        self.coll_depth = 0
        self.forward_depth = 0  # inside the hooked model's forward (a nested call counts once)
        self.forward_start: Any = None
        self.model_hooks: list[Any] = []  # the handles of the hooks on the model's forward
        self.count = 0  # optimizer steps done
        self.batches = 0
        self.backward_calls = 0
        self.step: StepMarks | None = None  # the step being marked
        self.pending: list[tuple[int, StepMarks]] = []  # steps ended, marks not yet read
        self.done: dict[int, StepSeconds] = {}  # step number -> its seconds
        self.phase_note: dict[str, Any] | None = None
        self.grad_count = 0
        self.grad_expected = 0
        self.written = False
        self.stopped = False
        self.thread = threading.get_ident()
        self.sched: Any = None  # the training thread's cpu_wait clock
        self.untimed_first = False  # the first step's marks are on another clock
        self.optimizers: dict[int, Any] = {}  # id -> weakref of every optimizer the job stepped
        self.flops: Any = None  # step_facts.FlopCount from the first step's end (torch's)
        self.telemetry = StepTelemetry()
        self.window: TraceWindow | None = None  # the traced window, while it is open
        self.busy_steps = 0  # the GPU busy capture's steps after the measured ones (0: none)
        self.busy: Any = None  # busy_window.BusyWindow, while it captures
        self.data: dict[str, Any] | None = None  # the measurement as written
        self.opt_range: Any = None  # the optimizer's range in the window (entered at pre)
        # wall clock (the host's start-up figures): torch imported, and the first sight of
        # training (the job's own set-up done)
        self.torch_imported_unix = time.time()
        self.training_started_unix: float | None = None
        # how the job is written (loop_facts.py): the framework on the first step's stack, the
        # settings of the first DataLoader the training loop drew from
        self.framework: str | None = None
        self.loader: dict[str, Any] | None = None

    @property
    def plan(self) -> WindowPlan:
        s = self.settings
        return WindowPlan(s.warmup, s.steps, s.traced, self.busy_steps)

    # ------------------------------------------------------------------ install

    def install(self) -> None:
        import torch
        import torch.utils.data.dataloader as dataloader
        from torch.optim.optimizer import (
            register_optimizer_step_post_hook,
            register_optimizer_step_pre_hook,
        )

        register_optimizer_step_pre_hook(self._pre)
        register_optimizer_step_post_hook(self._post)
        torch.autograd.backward = self._wrap_backward(torch.autograd.backward)
        iterator = dataloader._BaseDataLoaderIter
        iterator.__next__ = self._wrap_next(iterator.__next__)  # type: ignore[method-assign]
        dist = torch.distributed
        for name in COLLECTIVES if dist.is_available() else ():
            if callable(original := getattr(dist, name, None)):
                setattr(dist, name, self._wrap_collective(original))
        atexit.register(self.at_exit)

    def fail(self, exc: BaseException) -> None:
        self.off = True
        record_failure(exc, self.rank if self.role == "rank" else None)

    def _begin(self) -> StepMarks:
        """The current step's marks, opened at the first sight of training."""
        if self.step is None:
            self.step = StepMarks(self.clock.mark())
            if self.training_started_unix is None:
                self.training_started_unix = time.time()
        return self.step

    # ------------------------------------------------------------------ wrappers

    def _wrap_next(self, original: Any) -> Any:
        import torch

        probe = self

        @functools.wraps(original)
        def __next__(it: Any) -> Any:
            if probe.off or probe.data_depth or threading.get_ident() != probe.thread:
                return original(it)
            if not torch.is_grad_enabled():  # an evaluation's loader: rest, not data
                return original(it)
            try:
                step = probe._begin()
                start = probe.clock.mark()
            except Exception as exc:
                probe.fail(exc)
                return original(it)
            probe.data_depth += 1
            try:
                batch = probe._in_window("data", original, it)
            finally:
                probe.data_depth -= 1
                probe._interval(step.data, start)
            try:
                probe.batches += 1
                if probe.loader is None:
                    probe.loader = loader_settings(it)
                samples, tokens = batch_counts(batch)
                if samples is not None:
                    step.samples = (step.samples or 0) + samples
                if tokens is not None:
                    step.tokens = (step.tokens or 0) + tokens
            except Exception as exc:
                probe.fail(exc)
            return batch

        return __next__

    def _wrap_backward(self, original: Any) -> Any:
        probe = self

        @functools.wraps(original)
        def backward(*args: Any, **kwargs: Any) -> Any:
            if probe.off or probe.bwd_depth or threading.get_ident() != probe.thread:
                return original(*args, **kwargs)
            try:
                step = probe._begin()
                record = Backward(probe.clock.mark())
                step.backward.append(record)
                probe.grad_count = 0
            except Exception as exc:
                probe.fail(exc)
                return original(*args, **kwargs)
            probe.bwd_depth += 1
            try:
                return probe._in_window("backward", original, *args, **kwargs)
            finally:
                probe.bwd_depth -= 1
                probe._backward_end(step, record)

        return backward

    def _wrap_collective(self, original: Any) -> Any:
        """The collective as it was; called blocking from the training loop (not inside
        backward, a batch's fetch or the optimizer's own work), its time is a wait."""
        import torch

        probe = self

        @functools.wraps(original)
        def collective(*args: Any, **kwargs: Any) -> Any:
            busy = probe.data_depth or probe.bwd_depth or probe.coll_depth
            if probe.off or busy or (probe.opt_depth and not probe.closure_depth):
                return original(*args, **kwargs)
            if torch.compiler.is_compiling():  # traced by Dynamo: as if not wrapped
                return original(*args, **kwargs)
            if not torch.is_grad_enabled():  # an evaluation's gather: rest, as its batches
                return original(*args, **kwargs)
            if threading.get_ident() != probe.thread:
                return original(*args, **kwargs)
            try:
                step, start = probe._begin(), probe.clock.mark()
            except Exception as exc:
                probe.fail(exc)
                return original(*args, **kwargs)
            probe.coll_depth += 1
            try:
                out = original(*args, **kwargs)
            finally:
                probe.coll_depth -= 1
            if out is None:  # blocking; async_op=True returns a Work: its wait is not here
                probe._interval(step.collectives, start)
            return out

        return collective

    def _in_window(self, phase: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        """`call` as it was; inside the traced window, within its phase's range."""
        window = self.window
        if window is None:
            return call(*args, **kwargs)
        return window.ranged(phase, call, *args, **kwargs)

    def _interval(self, into: list[tuple[Any, Any]], start: Any) -> None:
        try:
            end = self.clock.mark()
            into.append((start, end))
            if self.opt_depth and not self.closure_depth and self.step is not None:
                self.step.nested.append((start, end))
        except Exception as exc:
            self.fail(exc)

    def _backward_end(self, step: StepMarks, record: Backward) -> None:
        try:
            self.backward_calls += 1
            record.end = self.clock.mark()
            if self.opt_depth and not self.closure_depth:
                step.nested.append((record.start, record.end))
            if self.clock.device is not None and self.grad_count != self.grad_expected:
                record.grad = None  # not the last gradient: split not made this step
                if self.grad_count > 0:
                    self.grad_expected = self.grad_count  # learnt for the next steps
        except Exception as exc:
            self.fail(exc)

    def _grad(self, _param: Any) -> None:
        """Every hooked parameter's gradient accumulated: the last one ends backward."""
        try:
            step = self.step
            if self.off or step is None or not step.backward or self.bwd_depth == 0:
                return
            record = step.backward[-1]
            self.grad_count += 1
            if self.clock.device is None:
                record.grad = self.clock.mark()
            elif self.grad_count == self.grad_expected:
                import torch

                record.grad = self.clock.mark(torch.cuda.current_stream(self.clock.device))
        except Exception as exc:
            self.fail(exc)

    # ------------------------------------------------------------------ optimizer hooks

    def _pre(self, optimizer: Any, args: Any, kwargs: Any) -> tuple[Any, Any] | None:
        if self.off:
            return None
        timed = None
        try:
            if self.opt_depth == 0:
                self._begin()
                self.opt_start = self.clock.mark()
                timed = self._timed_closure(args, kwargs)
                if self.window is not None:
                    self.opt_range = self.window.enter("optimizer")
            self.opt_depth += 1
        except Exception as exc:
            self.fail(exc)
            return None
        return timed

    def _timed_closure(self, args: Any, kwargs: Any) -> tuple[Any, Any] | None:
        """`step`'s (args, kwargs) with its closure timed (None: it was given none). `args`
        starts with the optimizer itself, as torch's hook wrapper passes them."""
        closure = kwargs.get("closure")
        if callable(closure):
            return args, {**kwargs, "closure": self._wrap_closure(closure)}
        if len(args) > 1 and callable(args[1]):
            return (args[0], self._wrap_closure(args[1]), *args[2:]), kwargs
        return None

    def _wrap_closure(self, closure: Any) -> Any:
        """The closure as it was, its time marked as not the optimizer's (`nested`): the data,
        backward and forward inside it are counted as those phases."""
        probe = self

        @functools.wraps(closure)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if probe.off or threading.get_ident() != probe.thread:
                return closure(*args, **kwargs)
            try:
                step, start = probe._begin(), probe.clock.mark()
            except Exception as exc:
                probe.fail(exc)
                return closure(*args, **kwargs)
            probe.closure_depth += 1
            try:
                return closure(*args, **kwargs)
            finally:
                probe._interval(step.nested, start)  # still inside: added to nested once
                probe.closure_depth -= 1

        return timed

    def _post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.off:
            return
        stop = False
        try:
            self.opt_depth = max(0, self.opt_depth - 1)
            if self.opt_depth == 0 and self.opt_range is not None:
                opt_range, self.opt_range = self.opt_range, None
                TraceWindow.leave(opt_range)
            if self.opt_depth == 0 and self.step is not None and self.opt_start is not None:
                self.step.optimizer.append((self.opt_start, self.clock.mark()))
                self.opt_start = None
            if self.role is None:
                self._decide(optimizer)
            if self.role == "rank" and id(optimizer) not in self.optimizers:
                self.optimizers[id(optimizer)] = weakref.ref(optimizer)
            if self.role == "rank" and id(optimizer) == self.clock_id and self.opt_depth == 0:
                stop = self._step_end()
        except Exception as exc:
            self.fail(exc)
        if stop:
            self.stopped = True
            raise SystemExit(0)  # every rank, at the same agreed step (own-job.md section 5)

    def mark(self) -> None:
        """`torchscale.mark_step()`: a step ends here, in a loop that steps no torch.optim
        optimizer. The first of the two seen is the clock: after an optimizer step, marks are
        ignored; after a mark, optimizer steps are optimizer time inside the step."""
        if self.off or (self.role is not None and threading.get_ident() != self.thread):
            return
        stop = False
        try:
            if self.role is None:
                self._decide(None)
            if self.role == "rank" and self.clock_id == MARKER_CLOCK:
                stop = self._step_end()
        except Exception as exc:
            self.fail(exc)
        if stop:
            self.stopped = True
            raise SystemExit(0)  # as at an optimizer step: every rank at the agreed step

    def _decide(self, optimizer: Any) -> None:
        """At the first optimizer step (or step marker, `optimizer` None): rank or inert, the
        step's clock, the device's clock, the gradient hooks that split backward."""
        import torch
        from torch.utils.data import get_worker_info

        if get_worker_info() is not None:
            self.role, self.off = "inert", True
            return
        self.role = "rank"
        self.rank = self._rank()
        self.framework = framework()  # the job's loop is on the stack of its first step
        self.clock_id = id(optimizer) if optimizer is not None else MARKER_CLOCK
        self.thread = threading.get_ident()
        groups = optimizer.param_groups if optimizer is not None else []
        params = [p for g in groups for p in g["params"] if p.requires_grad]
        cuda = [p.device for p in params if p.device.type == "cuda"]
        if optimizer is None and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
            cuda = [torch.device("cuda", torch.cuda.current_device())]
        if cuda and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
            # created now that the user chose the device; the first step, marked on the
            # host's clock, cannot be read against the device's: it is counted, not timed
            self.clock = Clock(cuda[0])
            self.untimed_first = True
            from torchscale.rank.own_job.busy_window import busy_steps

            self.busy_steps = busy_steps(self.settings.steps, self.settings.tool)
        if optimizer is None:  # a marker names no parameters: no gradient to split at
            self.phase_note = MARKED_STEPS
        elif any(hasattr(p, "to_local") for p in params):  # FSDP2's DTensors: hooks fire late
            self.phase_note = FSDP2_HOOKS
        else:
            for p in params:
                p.register_post_accumulate_grad_hook(self._grad)
            self.grad_expected = len(params)
        if params:
            try:
                self._hook_model(params)
            except Exception:  # no split of forward, the rest of the probe as it was
                self._unhook_model()
        from torchscale.rank.telemetry.cpu_wait import thread_clock

        self.sched = thread_clock()
        self._keep_on_sigterm()

    def _hook_model(self, params: list[Any]) -> None:
        """Hook the forward of the job's model, the outermost modules holding the clock's
        parameters, found once among the process's objects (at the first step's end, a warm-up
        step), so the loop's own work outside it (a checkpoint, an evaluation, logging) is
        told apart from its forward. A module compiled in place (`Module.compile`) is left
        unhooked: a hook there would be traced into its graph."""
        import gc

        from torch.nn import Module

        owned = {id(p) for p in params}
        holders = [
            o
            for o in gc.get_objects()
            if issubclass(type(o), Module) and any(id(p) in owned for p in o.parameters())
        ]
        inner = {id(m) for h in holders for m in h.modules() if m is not h}
        for module in holders:
            if id(module) in inner or getattr(module, "_compiled_call_impl", None) is not None:
                continue
            self.model_hooks.append(module.register_forward_pre_hook(self._forward_pre))
            post = module.register_forward_hook(self._forward_post, always_call=True)
            self.model_hooks.append(post)

    def _unhook_model(self) -> None:
        for handle in self.model_hooks:
            handle.remove()
        self.model_hooks = []

    def _forward_pre(self, module: Any, args: Any) -> None:
        import torch

        if torch.compiler.is_compiling() or threading.get_ident() != self.thread:
            return  # traced by Dynamo, or another thread's call: as if not hooked
        self.forward_depth += 1
        if self.forward_depth > 1 or self.off or self.bwd_depth or not torch.is_grad_enabled():
            return  # nested, or not a training forward (an evaluation's is the loop's work)
        try:
            self.forward_start = self.clock.mark()
        except Exception as exc:
            self.fail(exc)

    def _forward_post(self, module: Any, args: Any, output: Any) -> None:
        import torch

        if torch.compiler.is_compiling() or threading.get_ident() != self.thread:
            return
        self.forward_depth = max(0, self.forward_depth - 1)
        if self.forward_depth or self.forward_start is None:
            return
        start, self.forward_start = self.forward_start, None
        if self.off:
            return
        try:
            self._begin().model_forward.append((start, self.clock.mark()))
        except Exception as exc:
            self.fail(exc)

    def _keep_on_sigterm(self) -> None:
        """SIGTERM's default ends Python without atexit: where the job left it at the
        default, write what was measured first, then die by the same signal (the job's exit
        status unchanged). A handler of the job's own is left alone."""
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return

        def on_sigterm(signum: int, frame: Any) -> None:
            self.at_exit()
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

        signal.signal(signal.SIGTERM, on_sigterm)

    def _rank(self) -> int:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
        return _env_rank()

    def _step_end(self) -> bool:
        """Close the step; True when the rank must stop here."""
        step = self._begin()
        step.end = self.clock.mark()
        step.split = self.phase_note is None
        step.sched_end = self.sched.read_both() if self.sched is not None else None
        self.count += 1
        if self.untimed_first:
            self.untimed_first = False
            step.end = self.clock.mark()
        else:
            self.pending.append((self.count, step))
        self.step = StepMarks(step.end, sched_start=step.sched_end)
        self._count_flops()
        self.telemetry.step_ended(self.count, self.plan, self.clock.device)
        if self.clock.device is not None:  # CUDA events are read (and let go) as they complete;
            self._read_completed()  # perf_counter marks wait for write(), outside the steps
        s, n = self.settings, self.count
        plan = self.plan
        if self.window is not None and n > plan.opens_after:
            self._window_step(n)
            if self.window is None and not s.steps:  # the export is no measured step's time
                sched = self.sched.read_both() if self.sched is not None else None
                self.step = StepMarks(self.clock.mark(), sched_start=sched)
        if s.steps and n >= s.warmup + s.steps and not self.written:
            self.write(window_follows=bool(plan.traced or plan.busy))
        if plan.busy and n == plan.busy_after:
            self._busy_open()
        elif self.busy is not None and n == plan.opens_after:
            busy, self.busy = self.busy, None
            self._keep_busy(busy.close())
        if plan.traced and n == plan.opens_after:
            self.window = opened(s.folder, self.rank, s.tool, plan, self.clock.device, n)
        last = plan.last()
        if last is not None and n >= last:
            self.off = True  # nothing after the measurement and the window is marked
            return s.stop
        return False

    def _count_flops(self) -> None:
        """At a step's end: the count of step COUNTED_STEP's FLOPs started or ended
        (step_facts.py, imported with torch's dispatch modes from the first step's end)."""
        from torchscale.rank.own_job.step_facts import FlopCount

        if self.flops is None:
            self.flops = FlopCount()
        self.flops.step_ended(self.count, self.settings.warmup)

    # ------------------------------------------------------------------ traced window

    def _window_step(self, step: int) -> None:
        """A step of the window ended; at its last, the trace and the traced steps' own phase
        record written (rank<k>.phases.json, as the built-in capture writes it)."""
        window = self.window
        assert window is not None
        s = self.settings
        try:
            window.step_ended(step)
            if step < self.plan.closes_after:
                return
            self.window = None
            window.close()
            self._read_completed(wait=True)  # the traced steps' CUDA marks, after the window
            window.write_phases(self.done, self.clock.timing, self.phase_note)
        except Exception as exc:
            self.window = None
            window.abandon()
            write_note(s.folder, self.rank, TRACE_FAILED, error=f"{type(exc).__name__}: {exc}")

    def _read_completed(self, wait: bool = False) -> None:
        """Resolve the ended steps whose marks have completed (all of them with `wait`)."""
        from torchscale.rank.own_job.steps import resolve

        if wait and self.clock.device is not None:
            import torch

            torch.cuda.synchronize(self.clock.device)  # once, after the measured steps
        left = []
        for number, step in self.pending:
            if all(self.clock.done(m) for m in step.marks()):
                self.done[number] = resolve(step, self.clock)
            else:
                left.append((number, step))
        self.pending = left

    # ------------------------------------------------------------------ busy capture

    def _busy_open(self) -> None:
        """After the last measured step: the GPU busy capture over the next steps
        (busy_window.py); one that cannot start joins the rank's file with its reason."""
        from torchscale.rank.own_job.busy_window import BusyWindow

        window = BusyWindow(self.rank, self.clock.device, self.plan.busy)
        why = window.open()
        if why is None:
            self.busy = window
        else:
            self._keep_busy(why)

    def _keep_busy(self, reading: Any) -> None:
        """The rank's file written again with the busy reading (`gpu_busy`) beside the
        measurement it already held."""
        from torchscale.rank.own_job.busy_window import reading_json

        if self.data is None:
            return
        self.data["gpu_busy"] = reading_json(reading)
        _write_json(self.settings.folder / PROBE_FILE.format(rank=self.rank), self.data)

    # ------------------------------------------------------------------ writing

    def at_exit(self) -> None:
        if self.busy is not None:  # the job ended inside the capture: no reading
            busy, self.busy = self.busy, None
            busy.abandon()
        if self.window is not None:  # the job ended inside the window: no trace
            window, self.window = self.window, None
            window.abandon()
            figures = {"error": f"the job ended before step {self.plan.closes_after}"}
            write_note(self.settings.folder, self.rank, TRACE_FAILED, **figures)
        if self.written or self.role == "inert" or _FAILED:
            return
        try:
            from torch.utils.data import get_worker_info

            if get_worker_info() is not None:
                return
            if self.count == 0 and not (self.batches or self.backward_calls):
                return  # never trained here (a launch agent, a helper process)
            self.write()
        except Exception as exc:
            self.fail(exc)

    def write(self, window_follows: bool = False) -> None:
        if self.flops is not None:
            self.flops.unfinished()
        self._read_completed(wait=True)
        self.written = True
        self.off = not window_follows  # nothing after the measurement (and window) is marked
        if self.role is None:
            self.rank = self._rank()
        data = self.measurement()  # its peaks read before the calibration's tensors exist
        if data["windows"]:
            data["windows"][0].update(self._calibrated())
        _write_json(self.settings.folder / PROBE_FILE.format(rank=self.rank), data)
        self.data = data

    def measurement(self) -> dict[str, Any]:
        """This rank's measurement as the JSON of reading.OwnJobMeasurement (the worker's
        RankMeasurement and the user's job's own fields), built without importing the worker."""
        from torchscale.rank.own_job.step_facts import cuda_peaks

        s = self.settings
        warm = [self.done[n].step_s for n in sorted(self.done) if n <= s.warmup]
        measured = [self.done[n] for n in sorted(self.done) if self.plan.measured(n)]
        findings: list[dict[str, Any]] = []
        if self.count == 0:
            figures = {
                "rank": self.rank,
                "batches": self.batches,
                "backward_calls": self.backward_calls,
            }
            findings.append({"code": "own_job.no_optimizer_step", "figures": figures})
        elif s.steps and len(measured) < s.steps:
            figures = {"rank": self.rank, "steps": self.count, "asked": s.warmup + s.steps}
            findings.append({"code": "own_job.ended_early", "figures": figures})
        notes = {"grad_sync_wait": self.phase_note} if self.phase_note else {}
        if not notes and any(st.phases["grad_sync_wait"] is None for st in measured):
            notes = {"grad_sync_wait": HOOKS_MISSED}
        windows = []
        if measured:
            windows.append(
                {
                    "wall_s": sum(st.step_s for st in measured),
                    "step_s": [st.step_s for st in measured],
                    "phases": {n: [st.phases[n] for st in measured] for n in STEP_PHASES},
                    "phase_notes": notes,
                    "cpu_wait_s": [st.cpu_wait_s for st in measured],
                    "cpu_time_s": [st.cpu_time_s for st in measured],
                    "model_forward_s": (
                        [st.model_forward_s for st in measured] if self.model_hooks else None
                    ),
                }
            )
        return {
            "rank": self.rank,
            "host": socket.gethostname(),
            "timing": self.clock.timing,
            "steps": len(measured),
            "warmup_s": warm,
            "windows": windows,
            "phase_notes": notes,
            "peak_rss": int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024,
            **cuda_peaks(self.clock.device),
            "window_edge_steps": 0,
            "samples_per_step": [st.samples for st in measured],
            "tokens_per_step": [st.tokens for st in measured],
            "warmup_steps": s.warmup,
            "optimizer_steps": self.count,
            "stopped": s.stop and bool(s.steps) and len(measured) == s.steps,
            "torch_imported_unix": self.torch_imported_unix,
            "training_started_unix": self.training_started_unix,
            "findings": findings,
            "framework": self.framework,
            "loader": self.loader,
            **self._step_facts(),
        }

    def _calibrated(self) -> dict[str, Any]:
        """The fixed work a built-in cell's rank times (calibration.py), timed here by every
        rank after the same step, its last measured one, so a compute straggler reads as a
        slower device or more work; nothing where it fails (the reading then says none was
        timed). A CPU rank times it on one thread, as a cell's rank runs, the job's thread
        count restored after."""
        import torch

        from torchscale.rank.worker.calibration import Calibration

        device = self.clock.device or torch.device("cpu")
        threads = torch.get_num_threads()
        try:
            if device.type == "cpu":
                torch.set_num_threads(1)  # all of it on the thread whose CPU clock times it
            began = time.perf_counter()
            calibration = Calibration(device, CALIBRATION_REPS)
            device_s, wall_s = calibration.run()
            cost_s = time.perf_counter() - began
        except Exception:  # fail open: the job's measurement stands without it
            return {}
        finally:
            torch.set_num_threads(threads)
        return {
            "calibration_s": device_s,
            "calibration_wall_s": wall_s,
            "calibration_cost_s": cost_s,
            "calibration_timer": calibration.timer,
        }

    def _step_facts(self) -> dict[str, Any]:
        """The counted step's FLOPs, the optimizers' bytes and parameters, the telemetry, and
        on CUDA what the host needs to choose the peak MFU divides by (step_facts.py)."""
        from torchscale.rank.own_job.step_facts import device_facts, optimizer_facts

        optimizers = [o for ref in self.optimizers.values() if (o := ref()) is not None]
        return {
            **(self.flops.facts if self.flops is not None else {}),
            **optimizer_facts(optimizers),
            **self.telemetry.summary(self.rank),
            **device_facts(self.clock.device),
        }


_PROBE: Probe | None = None


def activate() -> None:
    """Install the probe in this process, once (the carrier calls it when torch is whole)."""
    global _PROBE
    if _PROBE is not None or os.environ.get(ENV_DIR) is None:
        return
    try:
        _PROBE = Probe(Settings.from_env())
        _PROBE.install()
    except Exception as exc:  # fail open
        if _PROBE is not None:
            _PROBE.off = True
        record_failure(exc)


def current() -> Probe | None:
    """This process's probe (tests and diagnostics)."""
    return _PROBE


def mark_step() -> None:
    """`torchscale.mark_step()` reaches the probe here; nothing where none is installed."""
    if _PROBE is not None:
        _PROBE.mark()
