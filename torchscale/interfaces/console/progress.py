"""Where long work stands: cell, profile or chart i of N, the time elapsed, and when it should
end (what the user reads: docs/cli.md, `benchmark`; docs/profiling.md; docs/reporting.md).

The plan's estimate of a cell (`Plan.estimate`) is a lower bound (launch overhead plus the timed
windows; step times are unknown until measured), so the ETA scales the estimate of the cells left
by what the finished cells took against their own estimate; with no estimate, it is the mean
finished item times the items left. Cells that never launch (skipped by the plan, reused by
--resume) are no evidence of how long a cell takes. Pure computation, the clock passed in."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from torchscale.contracts.wording.spell import duration_text
from torchscale.interfaces.report.progress import Step


@dataclass(frozen=True)
class Finished:
    """A cell that launched and finished: what the plan estimated, what it took."""

    estimate_s: float | None
    measured_s: float


def eta_s(remaining: Sequence[float | None], finished: Sequence[Finished]) -> float | None:
    """Seconds until the cells of `remaining` (their estimates, None: unknown) are done, by
    the rule of the module's docstring (None before any cell finished)."""
    if not finished:
        return None
    if not remaining:
        return 0.0
    measured = sum(f.measured_s for f in finished)
    done_estimates = [f.estimate_s for f in finished]
    if all(e is not None and e > 0 for e in (*remaining, *done_estimates)):
        estimated = sum(e for e in done_estimates if e is not None)
        return sum(e for e in remaining if e is not None) * measured / estimated
    return measured / len(finished) * len(remaining)


def eta_text(eta: float | None) -> str:
    return "ETA unknown" if eta is None else f"ETA {duration_text(eta)}"


def position_text(
    index: int, total: int, elapsed_s: float, eta: float | None, what: str = "cell"
) -> str:
    """'cell 2/6, 1m05s elapsed, ETA 3m10s' (`index` counts from 0)."""
    return f"{what} {index + 1}/{total}, {duration_text(elapsed_s)} elapsed, {eta_text(eta)}"


@dataclass
class SweepProgress:
    """The running state behind the progress text. `estimates` has one entry per cell of the
    plan, in run order: the plan's estimate of the cell (0 for a cell the plan skips), or None
    when unknown; `total` alone (no estimates) is enough for the fallback (mean finished cell)."""

    total: int
    estimates: Sequence[float | None] | None = None
    clock: Callable[[], float] = time.monotonic
    what: str = "cell"  # what is counted: 'cell 2/6', 'profile 2/6'
    started: float = field(init=False)
    finished: list[Finished] = field(default_factory=list, init=False)
    _current: tuple[int, float] | None = field(default=None, init=False)  # (index, start)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def _estimate(self, index: int) -> float | None:
        if self.estimates is None or index >= len(self.estimates):
            return None
        return self.estimates[index]

    def start(self, index: int, will_launch: bool) -> str:
        """A cell starts: its position text (from its own start: this cell is still to run)."""
        self._current = (index, self.clock()) if will_launch else None
        elapsed = self.clock() - self.started
        return position_text(index, self.total, elapsed, self.eta(self._left(index)), self.what)

    def done(self) -> None:
        """The current cell finished (a cell that never launched records nothing)."""
        if self._current is not None:
            index, start = self._current
            self.finished.append(Finished(self._estimate(index), self.clock() - start))
            self._current = None

    def eta(self, remaining: Sequence[float | None]) -> float | None:
        return eta_s(remaining, self.finished)

    def eta_after(self, index: int) -> str:
        """The ETA text once the cell at `index` is done (for a progress bar's field)."""
        return eta_text(self.eta(self._left(index + 1)))

    def _left(self, first: int) -> list[float | None]:
        """The estimates of the cells from `first` on, less those the plan skips (0: no time
        to wait for)."""
        left = [self._estimate(i) for i in range(first, self.total)]
        return left if self.estimates is None else [e for e in left if e != 0]


STAGE_WORDS = {
    "build": "building the report",
    "charts": "drawing charts",
    "layout": "laying out the pages",
    "pages": "writing the pages",
}


@dataclass
class StepProgress:
    """The running state behind a report's progress text: when the work and the current step
    began, and how far the step is. `update` takes each `Step` as it arrives."""

    clock: Callable[[], float] = time.monotonic
    step: Step | None = field(default=None, init=False)
    began: float | None = field(default=None, init=False)  # the first step's start
    started: float = field(default=0.0, init=False)  # the current step's

    def update(self, step: Step) -> bool:
        """Take `step`; True when it begins a new step (the caller may print a line)."""
        new = self.step is None or self.step.stage != step.stage
        if new:
            self.started = self.clock()
            if self.began is None:
                self.began = self.started
        self.step = step
        return new

    def eta(self) -> float | None:
        """Seconds left in the current step: the mean item so far times the items left; None
        before the first item is done."""
        step = self.step
        if step is None or step.done <= 0:
            return None
        left = max(0, step.total - step.done)
        return (self.clock() - self.started) / step.done * left

    def text(self) -> str:
        """'drawing charts 12/27 (ETA 10s for this step), 1m05s elapsed' (elapsed since the
        first step); a step of one item has no position and no ETA: 'laying out the pages,
        1m20s elapsed'."""
        step = self.step
        if step is None:
            return ""
        words = STAGE_WORDS.get(step.stage, step.stage)
        elapsed = duration_text(self.clock() - (self.began or 0.0))
        if step.total <= 1:
            return f"{words}, {elapsed} elapsed"
        eta = eta_text(self.eta())
        return f"{words} {step.done}/{step.total} ({eta} for this step), {elapsed} elapsed"
