"""The warm-up, and what its steady-state steps size: the duration windows and the timeout.

Warm-up steps absorb first-call costs and are discarded; their times calibrate the step count
of `measurement.duration_s` windows and the measured windows' collective timeout. A step that
compiled (read against dynamo's tallies: torchscale/rank/worker/compile_watch.py) can take
minutes where a steady step takes well under a second, so only steady steps size anything;
under compile the warm-up runs on, all ranks agreeing on each extra step, until
MIN_STEADY_STEPS are steady or MAX_EXTRA_STEPS more ran (docs/methodology.md, step 3, with the
figures that made it so).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist

from torchscale.contracts.finding import Finding
from torchscale.rank.worker.compile_watch import read_compile_counts
from torchscale.rank.worker.timing import synchronize

if TYPE_CHECKING:  # the busy capture of a user's job loads this module, never the trainer
    from torchscale.rank.worker.trainer import Trainer

# the measured windows' collective timeout: max(FLOOR, STEPS x the slowest steady warm-up
# step), a generous bound (that step still carries the first-call costs compile does not
# explain: allocator growth, cuDNN autotune); the result's environment.collective_timeout_s
COLLECTIVE_TIMEOUT_FLOOR_S = 60.0
COLLECTIVE_TIMEOUT_STEPS = 20
# steady warm-up steps wanted under compile; extra warm-up steps run at most to get them.
# Dynamo gives up recompiling a frame after its recompile_limit (8) and runs it eagerly: a
# model recompiling every step stops compiling within 8 more steps
MIN_STEADY_STEPS = 2
MAX_EXTRA_STEPS = 8


@dataclass
class WarmUp:
    """The warm-up as run: each step's wall time and whether torch.compile compiled in it."""

    step_s: list[float] = field(default_factory=list)
    compiled: list[bool] = field(default_factory=list)
    extra_steps: int = 0  # run beyond measurement.warmup_steps to reach MIN_STEADY_STEPS
    note: Finding | None = None  # why compiling steps could not be told by dynamo's tallies

    @property
    def steady_s(self) -> list[float]:
        """The steps in which nothing compiled."""
        return [t for t, compiled in zip(self.step_s, self.compiled, strict=True) if not compiled]


def needs_more_warmup(warm: WarmUp) -> bool:
    """Whether the warm-up holds too few steady steps to size the windows from."""
    return len(warm.steady_s) < MIN_STEADY_STEPS


def timeout_bound_s(steady_s: list[float]) -> float | None:
    """max(60 s, 20x the slowest steady step); None without a steady step."""
    if not steady_s:
        return None
    return max(COLLECTIVE_TIMEOUT_FLOOR_S, COLLECTIVE_TIMEOUT_STEPS * max(steady_s))


def steps_to_fill(duration_s: float, warm: WarmUp) -> int:
    """Steps that fill `duration_s` at the (upper) median steady step after the first steady
    one, where first-call costs land (an eager CUDA run's first step took 0.2 s against a 3 ms
    step and sized an H200's 1.5 s windows at 0.1 s); with one steady step, at it; without,
    at the fastest warm-up step (the one least inflated by compiling); 1 without warm-up."""
    steady = warm.steady_s
    basis = steady[1:] or steady or ([min(warm.step_s)] if warm.step_s else [])
    per_step = sorted(basis)[len(basis) // 2] if basis else 0.0
    return max(1, math.ceil(duration_s / per_step)) if per_step > 0 else 1


def agreed_max(value: float, device: torch.device) -> float:
    """`value`'s maximum over every rank (a collective: every rank calls it)."""
    tensor = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return float(tensor.item())


def agree_any(flag: bool, device: torch.device) -> bool:
    """True on every rank when it is True on any (a collective: every rank calls it)."""
    return agreed_max(float(flag), device) > 0


def agreed_steps(duration_s: float, warm: WarmUp, device: torch.device) -> int:
    """`steps_to_fill`, agreed by all ranks (MAX): ranks must run the same number of
    collectives, and no check happens inside the window."""
    return int(agreed_max(steps_to_fill(duration_s, warm), device))


def collective_timeout_s(warm: WarmUp, device: torch.device) -> float | None:
    """`timeout_bound_s` of the steady steps over every rank (MAX: one timeout for the cell,
    and the slowest rank's steps are what its peers wait for). None without warm-up steps, or
    when any rank has no steady step: nothing justifies a bound, init's timeout stays. Every
    rank calls it (a collective) when it ran warm-up steps, and they all do or none does
    (same spec)."""
    if not warm.step_s:
        return None
    local = timeout_bound_s(warm.steady_s)
    agreed = agreed_max(math.inf if local is None else local, device)
    return None if math.isinf(agreed) else agreed


def _warm_step(trainer: Trainer, warm: WarmUp, watch_compile: bool) -> None:
    """One discarded step, timed, and whether torch.compile compiled in it."""
    before, why = read_compile_counts() if watch_compile else (None, None)
    start = time.perf_counter()
    trainer.step()
    synchronize(trainer.device)
    warm.step_s.append(time.perf_counter() - start)
    if not watch_compile:
        warm.compiled.append(False)
        return
    after, why_after = read_compile_counts()
    if before is None or after is None:
        # unreadable tallies: torch.compile compiles on the first call, so the first step is
        # the compiling one
        warm.note = why or why_after
        warm.compiled.append(len(warm.compiled) == 0)
    else:
        warm.compiled.append(after.since(before).compiled)


def warm_up(trainer: Trainer, steps: int, watch_compile: bool = False) -> WarmUp:
    """Discarded steps (allocator, cuDNN autotune, DDP buckets, compile); their wall times only
    calibrate duration-based windows and the windows' timeout. `watch_compile`: tell compiling
    steps from steady ones, and run extra steps while fewer than MIN_STEADY_STEPS are steady
    (none when `steps` is 0)."""
    warm = WarmUp()
    for _ in range(steps):
        _warm_step(trainer, warm, watch_compile)
    if watch_compile and steps > 0:
        while warm.extra_steps < MAX_EXTRA_STEPS and agree_any(
            needs_more_warmup(warm), trainer.device
        ):
            _warm_step(trainer, warm, watch_compile)
            warm.extra_steps += 1
    if trainer.runner is not None:
        trainer.runner.clear_busy()
    return warm
