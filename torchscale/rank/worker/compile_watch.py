"""What torch.compile did in this rank, read from dynamo's own tallies.

A compiling step is timed as a slow step, so the warm-up tells compiling steps from steady
ones and every measured window is bracketed by two readings (docs/methodology.md, "Inside every
rank", steps 3 and 5). The tallies (torch/_dynamo/utils.py and convert_frame.py, torch 2.13) are
private: where they cannot be read the reading is None with the reason, never a guess.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass

from torchscale.contracts.finding import Finding


@dataclass(frozen=True)
class CompileCounts:
    """A reading of dynamo's tallies, or the difference of two readings."""

    frames: int  # frames dynamo compiled (first compiles and recompiles)
    graph_breaks: int
    compile_s: float

    def since(self, before: CompileCounts) -> CompileCounts:
        """What happened between `before` and this reading."""
        return CompileCounts(*(a - b for a, b in zip(astuple(self), astuple(before), strict=True)))

    def plus(self, other: CompileCounts) -> CompileCounts:
        return CompileCounts(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    @property
    def compiled(self) -> bool:
        """For a difference: dynamo compiled (or tried to) something in between."""
        return self.frames > 0 or self.compile_s > 0


NOTHING = CompileCounts(0, 0, 0.0)


def read_compile_counts() -> tuple[CompileCounts | None, Finding | None]:
    """Dynamo's tallies now, or why they cannot be read (a private API that may move)."""
    try:
        from torch._dynamo.utils import calculate_time_spent, counters

        frames = int(counters["frames"]["total"])
        graph_breaks = int(sum(counters["graph_break"].values()))
        compile_s = float(calculate_time_spent().get("total_wall_time", 0.0))
    except Exception as exc:  # private API: absent or changed in this torch
        error = f"{type(exc).__name__}: {exc}"
        return None, Finding(code="unavailable.compile_counters_failed", figures={"error": error})
    return CompileCounts(frames, graph_breaks, compile_s), None


class WindowCompiles:
    """Compile activity summed over the measured windows: read just before each window's
    opening edge and just after its closing one (outside the timed steps)."""

    def __init__(self) -> None:
        self.total: CompileCounts | None = NOTHING
        self.last: CompileCounts | None = None  # the latest reading (process totals)
        self.note: Finding | None = None  # why `total` is None

    def start(self) -> CompileCounts | None:
        reading, why = read_compile_counts()
        if reading is None:
            self.total, self.note = None, why
        return reading

    def stop(self, before: CompileCounts | None) -> None:
        reading, why = read_compile_counts()
        if reading is None or before is None or self.total is None:
            self.total, self.note = None, self.note or why
            return
        self.total = self.total.plus(reading.since(before))
        self.last = reading
