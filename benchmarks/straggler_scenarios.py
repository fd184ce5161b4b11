"""Stragglers of every kind, written as a user writes them: torchscale model plug-ins.

Nothing here uses a torchscale knob (no `--inject-delay`, no torchscale module but the
`ModelBundle` a plug-in returns): each factory is what a user hands torchscale as
`--model benchmarks.straggler_scenarios:<factory>` (`torchscale profile`) or as a config's
`models: [{name: "benchmarks.straggler_scenarios:<factory>", options: {...}}]`
(`torchscale benchmark`). `benchmarks/straggler_detection.py` runs them and scores the verdicts.

Every factory trains the same small MLP (`width` features, `depth` linear layers, MSE on
random data). On one target rank (`target_rank`, default -1: the last rank, read from RANK and
WORLD_SIZE in the rank's environment) it adds `extra_ms` of one kind per step; the other ranks
train normally:

- `balanced`: nobody slow (`extra_ms` is ignored).
- `sleep`: an autograd Function on the model's output whose backward sleeps `extra_ms`: the first
  thing backward runs, so every gradient bucket waits for it (today's `--inject-delay
  R:backward:MS`, as a user would write it: no torchscale range around the sleep).
- `compute_forward` / `compute_backward`: real extra math, matmuls of a `burn_size`-square matrix
  repeated N times in forward (under no_grad, beside the model's own layers) or in the backward
  of an autograd Function on the output; no sleep. N is calibrated in the factory on that rank:
  the median of a few timed trials gives the time of one matmul, N = extra_ms / that.
- `slow_input` (kind input): a slow per-step batch: the bundle's `batches(batch_size, device)`
  gives an iterator whose `__next__` sleeps `extra_ms` on the target rank before handing out
  the batch (needs the `ModelBundle.batches` field).
- `host`: a CPU hog beside the rank: the factory pins every thread of its rank to one core and
  starts `python -c` a loop pinned to the same core that takes a duty share of each 10 ms
  period in CPU time (its own, so the rank's turns in between do not count) and sleeps the rest.
  Each hog runnable beside the rank takes half the core while both want it, so n hogs busy a
  share d of the time stretch the rank's time on a CPU (`busy_ms`: its compute part of a
  balanced step; default `step_ms`) by about n x d: n = ceil(extra / busy) (at most 4),
  d = extra / (n x busy). The hog dies with the
  rank: PR_SET_PDEATHSIG (SIGKILL) in the hog, a check that its parent is still the rank, and an
  atexit kill in the rank.
- `communication`: a DDP communication hook (`ModelBundle.ddp_comm_hook`, called once with the
  DDP-wrapped model) that sleeps `extra_ms` before torch's default allreduce hook at the last
  bucket of each step on the target rank, every other rank running the same hook without
  the sleep (no sync, no hook call: the no_sync windows see no delay).

Options (keyword arguments), each falling back to an environment variable so `torchscale profile`
(which takes no model options) can set them: `extra_ms` (STRAGGLER_EXTRA_MS, 0); host only:
`step_ms` (STRAGGLER_STEP_MS, 0) and `busy_ms` (STRAGGLER_BUSY_MS, 0: step_ms); `target_rank`
(STRAGGLER_TARGET_RANK, -1), `width` (STRAGGLER_WIDTH, 512), `depth` (STRAGGLER_DEPTH, 4),
`burn_size` (STRAGGLER_BURN_SIZE, 128), `record` (STRAGGLER_RECORD, ""): a file the target rank
writes what it added (the calibration, the mean extra time it measured itself per call, the
hog's duty), rewritten at most every 0.2 s while it trains (a rank may end without running
atexit).

The side effects (calibration, pinning, the hog, the record) happen only inside a torchrun rank
(LOCAL_RANK set) and not on the meta device, so a host process that builds the model to plan a
cell starts nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from torchscale.rank.models.bundle import ModelBundle

ENV_PREFIX = "STRAGGLER_"
HOG_PERIOD_MS = 10.0
MAX_HOGS = 4  # the most busy processes beside one rank (extra up to 4 x its time on a CPU)
WRITE_EVERY_S = 0.2  # the record's rewrites: ranks end without atexit, so no final write


# ------------------------------------------------------------------------ options


def _option(name: str, given: Any, default: Any) -> Any:
    """`given` when the config passed it, else STRAGGLER_<NAME>, else `default` (same type)."""
    if given is not None:
        return type(default)(given)
    text = os.environ.get(ENV_PREFIX + name.upper())
    return default if text in (None, "") else type(default)(text)


def _in_rank() -> bool:
    """Inside a torchrun rank building a real model (not a host planning on meta)."""
    meta = torch.empty(0).device.type == "meta"
    return "LOCAL_RANK" in os.environ and not meta


def _is_target(target_rank: int) -> bool:
    if not _in_rank():
        return False
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    return rank == (target_rank % world)


class _Record:
    """What the target rank added, written to `path` (JSON) at most once a second."""

    def __init__(self, path: str, scenario: str, extra_ms: float) -> None:
        self.path = Path(path) if path else None
        self.data: dict[str, Any] = {
            "scenario": scenario,
            "extra_ms": extra_ms,
            "rank": int(os.environ.get("RANK", "0")),
            "world": int(os.environ.get("WORLD_SIZE", "1")),
            "pid": os.getpid(),
            "calls": 0,
            "added_ms_total": 0.0,
        }
        self._written = 0.0

    def set(self, **values: Any) -> None:
        self.data.update(values)
        self.write(force=True)

    def added(self, seconds: float) -> None:
        self.data["calls"] += 1
        self.data["added_ms_total"] += seconds * 1e3
        self.data["added_ms_max"] = max(self.data.get("added_ms_max", 0.0), seconds * 1e3)
        self.write()

    def write(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.path is None or (not force and now - self._written < WRITE_EVERY_S):
            return
        self._written = now
        calls = self.data["calls"]
        self.data["added_ms_mean"] = self.data["added_ms_total"] / calls if calls else None
        part = self.path.with_name(self.path.name + f".{os.getpid()}.part")
        with contextlib.suppress(OSError):
            part.write_text(json.dumps(self.data), encoding="utf-8")
            part.replace(self.path)


# ------------------------------------------------------------------------ the user's model


class Net(nn.Module):
    """An MLP; `around_output` (identity by default) is applied to the last layer's output and
    `in_forward` (nothing by default) runs once per forward: where a scenario adds its time."""

    def __init__(self, width: int, depth: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for _ in range(depth - 1):
            layers += [nn.Linear(width, width), nn.ReLU()]
        layers.append(nn.Linear(width, width))
        self.layers = nn.Sequential(*layers)
        self.in_forward: Callable[[], None] | None = None
        self.around_output: Callable[[torch.Tensor], torch.Tensor] | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.in_forward is not None:
            self.in_forward()
        out = self.layers(x)
        return self.around_output(out) if self.around_output is not None else out


def _make_batch_fn(width: int) -> Callable[[int, torch.device], tuple[torch.Tensor, torch.Tensor]]:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        return (
            torch.randn(batch_size, width, device=device),
            torch.randn(batch_size, width, device=device),
        )

    return make_batch


def _bundle(net: Net, width: int, **extra: Any) -> ModelBundle:
    fields = getattr(ModelBundle, "__dataclass_fields__", {})
    missing = [name for name in extra if name not in fields]
    if missing:
        raise RuntimeError(
            f"this torchscale's ModelBundle has no {', '.join(missing)} field: the scenario "
            "needs a torchscale that takes it"
        )
    return ModelBundle(
        model=net,
        make_batch=_make_batch_fn(width),
        loss_fn=F.mse_loss,
        kind="other",
        tokens_per_sample=None,
        input_shape=(width,),
        conv_net=False,
        **extra,
    )


def _options(
    extra_ms: float | None,
    target_rank: int | None,
    width: int | None,
    depth: int | None,
    record: str | None,
) -> tuple[float, int, int, int, str]:
    return (
        _option("extra_ms", extra_ms, 0.0),
        _option("target_rank", target_rank, -1),
        _option("width", width, 512),
        _option("depth", depth, 4),
        _option("record", record, ""),
    )


# ------------------------------------------------------------------------ balanced, sleep


def balanced(
    extra_ms: float | None = None,
    target_rank: int | None = None,
    width: int | None = None,
    depth: int | None = None,
    record: str | None = None,
    **_: Any,
) -> ModelBundle:
    """Nobody slow: the reference every other scenario's size is a share of."""
    chosen = _options(extra_ms, target_rank, width, depth, record)
    return _bundle(Net(chosen[2], chosen[3]), chosen[2])


class _SleepInBackward(torch.autograd.Function):
    """Identity forward; backward sleeps, then passes the gradient on."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, seconds: float, record: _Record) -> torch.Tensor:
        ctx.seconds, ctx.record = seconds, record
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        started = time.perf_counter()
        time.sleep(ctx.seconds)
        ctx.record.added(time.perf_counter() - started)
        return grad, None, None


def sleep(
    extra_ms: float | None = None,
    target_rank: int | None = None,
    width: int | None = None,
    depth: int | None = None,
    record: str | None = None,
    **_: Any,
) -> ModelBundle:
    """The target rank's backward starts with a sleep of `extra_ms`."""
    extra_ms, target_rank, width, depth, record = _options(
        extra_ms, target_rank, width, depth, record
    )
    net = Net(width, depth)
    if _is_target(target_rank) and extra_ms > 0:
        log = _Record(record, "sleep", extra_ms)
        log.write(force=True)
        seconds = extra_ms / 1e3
        net.around_output = lambda out: _SleepInBackward.apply(out, seconds, log)  # type: ignore[no-untyped-call]
    return _bundle(net, width)


# ------------------------------------------------------------------------ compute


class _Burn:
    """`reps` matmuls of a `size`-square matrix, no sleep: extra_ms of real math, calibrated."""

    def __init__(self, size: int, extra_ms: float, log: _Record) -> None:
        generator = torch.Generator().manual_seed(0)
        self.a = torch.randn(size, size, generator=generator) / size**0.5
        self.b = torch.randn(size, size, generator=generator) / size**0.5
        self.log = log
        self.reps = 1
        per_matmul = self.calibrate()
        self.reps = max(1, round(extra_ms / 1e3 / per_matmul))
        log.set(
            burn_size=size,
            per_matmul_ms=per_matmul * 1e3,
            reps=self.reps,
            calibrated_ms=self.reps * per_matmul * 1e3,
            threads=torch.get_num_threads(),
        )

    def calibrate(self) -> float:
        """Seconds per matmul: the median of 7 trials of 20 (after 20 to warm up)."""
        self._run(20)
        trials = []
        for _ in range(7):
            started = time.perf_counter()
            self._run(20)
            trials.append((time.perf_counter() - started) / 20)
        return statistics.median(trials)

    def _run(self, reps: int) -> None:
        with torch.no_grad():
            x = self.a
            for _ in range(reps):
                x = torch.mm(x, self.b)
            self.sink = float(x[0, 0])  # keep the result: the math is not skipped

    def __call__(self) -> None:
        started = time.perf_counter()
        self._run(self.reps)
        self.log.added(time.perf_counter() - started)


class _BurnInBackward(torch.autograd.Function):
    """Identity forward; backward runs the burn, then passes the gradient on."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, burn: _Burn) -> torch.Tensor:
        ctx.burn = burn
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        ctx.burn()
        return grad, None


def _compute(
    where: str,
    extra_ms: float | None,
    target_rank: int | None,
    width: int | None,
    depth: int | None,
    record: str | None,
    burn_size: int | None,
) -> ModelBundle:
    extra_ms, target_rank, width, depth, record = _options(
        extra_ms, target_rank, width, depth, record
    )
    size = _option("burn_size", burn_size, 128)
    net = Net(width, depth)
    if _is_target(target_rank) and extra_ms > 0:
        burn = _Burn(size, extra_ms, _Record(record, f"compute_{where}", extra_ms))
        if where == "forward":
            net.in_forward = burn
        else:
            net.around_output = lambda out: _BurnInBackward.apply(out, burn)  # type: ignore[no-untyped-call]
    return _bundle(net, width)


def compute_forward(
    extra_ms: float | None = None,
    target_rank: int | None = None,
    width: int | None = None,
    depth: int | None = None,
    record: str | None = None,
    burn_size: int | None = None,
    **_: Any,
) -> ModelBundle:
    """The target rank's forward does `extra_ms` of extra matmuls."""
    return _compute("forward", extra_ms, target_rank, width, depth, record, burn_size)


def compute_backward(
    extra_ms: float | None = None,
    target_rank: int | None = None,
    width: int | None = None,
    depth: int | None = None,
    record: str | None = None,
    burn_size: int | None = None,
    **_: Any,
) -> ModelBundle:
    """The target rank's backward starts with `extra_ms` of extra matmuls."""
    return _compute("backward", extra_ms, target_rank, width, depth, record, burn_size)


# ------------------------------------------------------------------------ input


class SlowBatches:
    """An endless batch iterator whose `__next__` sleeps `seconds` first (a slow loader)."""

    def __init__(
        self,
        make_batch: Callable[[int, torch.device], tuple[torch.Tensor, torch.Tensor]],
        batch_size: int,
        device: torch.device,
        seconds: float,
        log: _Record | None,
    ) -> None:
        self.make_batch, self.batch_size, self.device = make_batch, batch_size, device
        self.seconds, self.log = seconds, log

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.seconds > 0:
            started = time.perf_counter()
            time.sleep(self.seconds)
            if self.log is not None:
                self.log.added(time.perf_counter() - started)
        return self.make_batch(self.batch_size, self.device)


def slow_input(
    extra_ms: float | None = None,
    target_rank: int | None = None,
    width: int | None = None,
    depth: int | None = None,
    record: str | None = None,
    **_: Any,
) -> ModelBundle:
    """The target rank's batches take `extra_ms` each to arrive."""
    extra_ms, target_rank, width, depth, record = _options(
        extra_ms, target_rank, width, depth, record
    )
    slow = _is_target(target_rank) and extra_ms > 0
    log = _Record(record, "input", extra_ms) if slow else None
    if log is not None:
        log.write(force=True)
    make_batch = _make_batch_fn(width)

    def batches(batch_size: int, device: torch.device) -> SlowBatches:
        return SlowBatches(make_batch, batch_size, device, extra_ms / 1e3 if slow else 0.0, log)

    return _bundle(Net(width, depth), width, batches=batches)


# ------------------------------------------------------------------------ host

_HOG = r"""
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG: die with the rank
if os.getppid() != int(sys.argv[1]):  # the rank died before prctl took hold
    sys.exit(0)
os.sched_setaffinity(0, {int(sys.argv[2])})
duty, period = float(sys.argv[3]), float(sys.argv[4]) / 1e3
busy = duty * period
while True:  # busy for `busy` of CPU time (not wall: the rank's turns do not count), then sleep
    start, cpu = time.perf_counter(), time.thread_time()
    while time.thread_time() - cpu < busy and time.perf_counter() - start < period:
        pass
    time.sleep(max(0.0, period - (time.perf_counter() - start)))
"""

_hogs: list[subprocess.Popen[bytes]] = []


def _kill_hogs() -> None:
    for hog in _hogs:
        with contextlib.suppress(ProcessLookupError):
            hog.send_signal(signal.SIGKILL)
        with contextlib.suppress(Exception):
            hog.wait(timeout=5)


def _pin_process(core: int) -> int:
    """Pin every thread of this process to `core`; how many threads were pinned."""
    pinned = 0
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            os.sched_setaffinity(int(task.name), {core})
            pinned += 1
    os.sched_setaffinity(0, {core})  # and threads started later inherit it
    return pinned


def host(
    extra_ms: float | None = None,
    step_ms: float | None = None,
    busy_ms: float | None = None,
    target_rank: int | None = None,
    width: int | None = None,
    depth: int | None = None,
    record: str | None = None,
    **_: Any,
) -> ModelBundle:
    """A CPU hog takes extra / (busy + extra) of the target rank's core in each period."""
    extra_ms, target_rank, width, depth, record = _options(
        extra_ms, target_rank, width, depth, record
    )
    step = _option("step_ms", step_ms, 0.0)
    busy = _option("busy_ms", busy_ms, 0.0) or step
    if _is_target(target_rank) and extra_ms > 0 and not _hogs:
        if busy <= 0:
            raise ValueError("host: step_ms (the balanced step) is needed to size the hog")
        # every hog runnable beside the rank takes half the core while both want it, so n hogs
        # busy a share d of the time stretch the rank's time on a CPU by about n x d
        count = min(MAX_HOGS, max(1, math.ceil(extra_ms / busy)))
        duty = min(1.0, extra_ms / (count * busy))
        cores = sorted(os.sched_getaffinity(0))
        rank = int(os.environ.get("RANK", "0"))
        core = cores[rank % len(cores)]
        threads = _pin_process(core)
        atexit.register(_kill_hogs)
        for _ in range(count):
            _hogs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        _HOG,
                        str(os.getpid()),
                        str(core),
                        f"{duty:.4f}",
                        f"{HOG_PERIOD_MS:g}",
                        record or "-",  # whose hog: what a search for leftovers looks for
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        _Record(record, "host", extra_ms).set(
            core=core, duty=duty, hogs=count, period_ms=HOG_PERIOD_MS, hog_pid=_hogs[0].pid,
            rank_threads_pinned=threads, step_ms=step, busy_ms=busy,
        )  # fmt: skip
    return _bundle(Net(width, depth), width)


# ------------------------------------------------------------------------ communication


def communication(
    extra_ms: float | None = None,
    target_rank: int | None = None,
    width: int | None = None,
    depth: int | None = None,
    record: str | None = None,
    **_: Any,
) -> ModelBundle:
    """The target rank's gradient all-reduce starts `extra_ms` late (a DDP comm hook)."""
    extra_ms, target_rank, width, depth, record = _options(
        extra_ms, target_rank, width, depth, record
    )
    slow = _is_target(target_rank) and extra_ms > 0
    log = _Record(record, "communication", extra_ms) if slow else None
    if log is not None:
        log.write(force=True)
    seconds = extra_ms / 1e3 if slow else 0.0

    def register(ddp: Any) -> None:
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

        def late_allreduce(state: Any, bucket: Any) -> Any:
            if seconds and bucket.is_last():
                started = time.perf_counter()
                time.sleep(seconds)
                if log is not None:
                    log.added(time.perf_counter() - started)
            return allreduce_hook(state, bucket)

        # DDP compares the hook's annotations with dist.GradBucket and Future; under
        # `from __future__ import annotations` they are strings, which it refuses: none at all
        late_allreduce.__annotations__.clear()
        ddp.register_comm_hook(None, late_allreduce)
        if log is not None:
            log.set(hook_registered_on=threading.current_thread().name)

    return _bundle(Net(width, depth), width, ddp_comm_hook=register)


SCENARIOS: dict[str, Callable[..., ModelBundle]] = {
    "balanced": balanced,
    "sleep": sleep,
    "compute-forward": compute_forward,
    "compute-backward": compute_backward,
    "input": slow_input,
    "host": host,
    "communication": communication,
}
