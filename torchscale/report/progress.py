"""Where a sweep stands: cell i of N, the time elapsed, and when it should end.

The plan's estimate of a cell (`Plan.estimate`) is a lower bound: launch overhead, plus the
timed windows when the measurement is duration-based; step times are unknown until measured.
So the ETA scales the estimate of the cells left by what the finished cells took against their
own estimate (measured / estimated); with no estimate, it is the mean finished cell times the
cells left; before any cell finished there is no ETA ("ETA unknown"). Cells that never launch
(skipped by the plan, reused by --resume) are no evidence of how long a cell takes.

Pure computation, the clock passed in: the CLI prints the text as it pleases.

Layer 4 (presentation) of docs/architecture.md: imports nothing of torchscale.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Finished:
    """A cell that launched and finished: what the plan estimated, what it took."""

    estimate_s: float | None
    measured_s: float


def eta_s(remaining: Sequence[float | None], finished: Sequence[Finished]) -> float | None:
    """Seconds until the cells of `remaining` (their estimates, None: unknown) are done.

    None before any cell finished. When every estimate involved is known and positive, the
    remaining estimates are scaled by measured / estimated over the finished cells; otherwise
    the mean finished cell times the number of cells left."""
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


def duration_text(seconds: float) -> str:
    """'45s', '3m05s', '2h04m': short enough for a progress line."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def eta_text(eta: float | None) -> str:
    return "ETA unknown" if eta is None else f"ETA {duration_text(eta)}"


def position_text(index: int, total: int, elapsed_s: float, eta: float | None) -> str:
    """'cell 2/6, 1m05s elapsed, ETA 3m10s' (`index` counts from 0)."""
    return f"cell {index + 1}/{total}, {duration_text(elapsed_s)} elapsed, {eta_text(eta)}"


@dataclass
class SweepProgress:
    """The running state behind the progress text: when the sweep and the current cell
    started, and the cells finished so far.

    `estimates` has one entry per cell of the plan, in run order: the plan's estimate of the
    cell (0 for a cell the plan skips), or None when unknown; `total` alone (no estimates) is
    enough for the fallback (mean finished cell)."""

    total: int
    estimates: Sequence[float | None] | None = None
    clock: Callable[[], float] = time.monotonic
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
        left = [self._estimate(i) for i in range(index, self.total)]
        if self.estimates is not None:
            left = [e for e in left if e != 0]  # skipped by the plan: no time to wait for
        return position_text(index, self.total, self.clock() - self.started, self.eta(left))

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
        left = [self._estimate(i) for i in range(index + 1, self.total)]
        if self.estimates is not None:
            left = [e for e in left if e != 0]
        return eta_text(self.eta(left))
