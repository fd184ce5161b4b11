"""Test-only plug-in models with one slow rank of each kind, written as a user meets them (no
torchscale knob): more real work, a periodic stall, a slow input pipeline, other work pinned to
its core, a DDP communication hook that launches late.

Loaded by the worker as 'tests.straggler_plugins:<factory>' (the tests put the repo root on
PYTHONPATH through `launcher.env`). The slow rank is the last one (RANK == WORLD_SIZE - 1).
Side effects (the hogs) start only inside a torchrun rank, never in a process that builds the
model to plan a cell.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

from torchscale.rank.models.bundle import ModelBundle

WIDTH = 256
# a hog that dies with its rank: PR_SET_PDEATHSIG (SIGKILL) through ctypes, then a busy loop
# (a rank gone before prctl took effect leaves it orphaned: it checks its parent after, and
# exits)
HOG = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None).prctl(1, signal.SIGKILL)\n"
    "if os.getppid() != {parent}: sys.exit(0)\n"
    "os.sched_setaffinity(0, {core})\n"
    "while True: pass\n"
)


def _slow_rank() -> bool:
    rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    return rank is not None and world is not None and int(rank) == int(world) - 1


class _Net(nn.Module):
    """Four linear layers; `repeat` more forward passes of the same layers on the slow rank
    (real work, nothing sleeps)."""

    def __init__(self, repeat: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(*[nn.Linear(WIDTH, WIDTH) for _ in range(4)])
        self.repeat = repeat

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            for _ in range(self.repeat):
                self.layers(x)
        return self.layers(x)


def _make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    shape = (batch_size, WIDTH)
    return torch.randn(shape, device=device), torch.randn(shape, device=device)


def _bundle(model: nn.Module, **extra: Any) -> ModelBundle:
    return ModelBundle(
        model=model,
        make_batch=_make_batch,
        loss_fn=F.mse_loss,
        kind="other",
        tokens_per_sample=None,
        input_shape=(WIDTH,),
        conv_net=False,
        **extra,
    )


def compute(repeat: int = 48) -> ModelBundle:
    """The slow rank runs its forward `repeat` more times: a compute straggler."""
    return _bundle(_Net(repeat if _slow_rank() else 0))


class _Stalling(_Net):
    """No extra work but, on the slow rank, `stall_s` of real CPU work before every
    `every`-th training forward: a periodic stall (a GC pause, a checkpoint write)."""

    def __init__(self, every: int, stall_s: float) -> None:
        super().__init__(0)
        self.every, self.stall_s, self.calls = every, stall_s, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.stall_s and self.training and self.calls % self.every == 0:
            scratch, end = torch.randn(128, 128), time.perf_counter() + self.stall_s
            with torch.no_grad():
                while time.perf_counter() < end:
                    scratch = scratch @ scratch / 128.0
        return super().forward(x)


def periodic(every: int = 4, stall_ms: float = 40.0) -> ModelBundle:
    """The slow rank stalls on `stall_ms` of CPU work every `every`-th step: compute, and
    the pattern 'every 4th step'."""
    return _bundle(_Stalling(every, stall_ms / 1e3 if _slow_rank() else 0.0))


def slow_input(sleep_ms: float = 30.0) -> ModelBundle:
    """The slow rank's batches take `sleep_ms` each to arrive: an input straggler."""
    delay = sleep_ms / 1e3 if _slow_rank() else 0.0

    def batches(batch_size: int, device: torch.device) -> Iterator[tuple[Any, Any]]:
        while True:
            if delay:
                time.sleep(delay)
            yield _make_batch(batch_size, device)

    return _bundle(_Net(0), batches=batches)


# the rank's hogs: one set per process, however many copies of the model run a forward (a
# FLOP count may run one on a copy)
_HOGS: list[subprocess.Popen[bytes]] = []


class _Crowded(_Net):
    """No extra work but, on the slow rank, `hogs` busy processes pinned to its core from its
    first forward on: set-up (DDP's wrapper, torch's compiler imports) runs at full speed,
    every step, window and calibration after it shares the core."""

    def __init__(self, hogs: int, core: int | None) -> None:
        super().__init__(0)
        self.hogs, self.core = hogs, core

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.core is not None and not _HOGS:
            hog = HOG.format(core="{" + str(self.core) + "}", parent=os.getpid())
            _HOGS.extend(subprocess.Popen([sys.executable, "-c", hog]) for _ in range(self.hogs))
            atexit.register(lambda: [p.kill() for p in _HOGS])
        return super().forward(x)


def host(hogs: int = 7) -> ModelBundle:
    """The slow rank pins itself to one core and `hogs` busy processes share that core with
    it: the host holds it off the CPU while its work is the others'. Seven, so it keeps an
    eighth of its core: with three (a quarter) the other ranks, unpinned on a 2-core CI runner
    whose other test worker crowded the free core, were once held off it longer still."""
    core = None
    if _slow_rank() and os.environ.get("LOCAL_RANK") is not None:
        core = max(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {core})
    return _bundle(_Crowded(hogs, core))


def late_launch(sleep_ms: float = 30.0) -> ModelBundle:
    """The slow rank's DDP communication hook sleeps `sleep_ms` before torch's own all-reduce
    hook at each step's last bucket (the bucket holding the first layer's gradients): its
    collectives start late while its work is the others'."""
    delay = sleep_ms / 1e3 if _slow_rank() else 0.0
    net = _Net(0)
    first = net.layers[0].weight

    def hook(state: object, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        if delay and any(p is first for p in bucket.parameters()):
            time.sleep(delay)
        return allreduce_hook(state, bucket)  # type: ignore[arg-type]

    # DDP checks a hook's annotations against the real classes: not strings
    hook.__annotations__ = {
        "state": object,
        "bucket": dist.GradBucket,
        "return": torch.futures.Future[torch.Tensor],
    }

    def register(ddp: nn.Module) -> None:
        ddp.register_comm_hook(None, hook)  # type: ignore[operator]

    return _bundle(net, ddp_comm_hook=register)
