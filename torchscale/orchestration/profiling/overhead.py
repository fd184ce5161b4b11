"""What tracing cost the profiled steps: their step time against the measured windows'.

overhead = mean traced step / mean measured step - 1, every rank's steps pooled on both sides,
timed by the same step timer (`measurement.timing`): what the profiler adds, plus run-to-run
drift. Its 95 % interval is Welch's t (`inflation.traced_inflation`; docs/profiling.md, "When
the profiler inflates the traced steps"); one that includes 0 reads "not measurable". One note
(`profile.capture_overhead`) in the run's `profile.notes` and in the analysis' notes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.wording.profile import note
from torchscale.offline.analysis.diagnosis.inflation import (
    TracedInflation,
    overhead_note,
    traced_inflation,
)
from torchscale.offline.results.profile_windows import traced_step_times


@dataclass(frozen=True)
class CaptureOverhead:
    """Traced against measured step time (`inflation`: both means over every rank's steps)."""

    tool: str
    inflation: TracedInflation
    ranks: int
    timing: str  # the step timer both sides used

    def note(self) -> Finding:
        return overhead_note(self.tool, self.inflation, self.ranks, self.timing)


def capture_overhead(
    result: CellResult, directory: Path, tool: str
) -> tuple[CaptureOverhead | None, Finding | None]:
    """The overhead of the traced steps in `directory` against `result`'s measured windows,
    or None with why not."""
    stats = result.step_time
    if stats is None or stats.mean <= 0:
        return None, note("profile.no_measured_step")
    times, timing = traced_step_times(directory, result.cell.world_size)
    pooled = [t for steps in times.values() for t in steps]
    inflation = traced_inflation(pooled, stats.mean, stats.std, stats.count)
    if inflation is None:
        return None, note("profile.no_traced_step_times")
    return CaptureOverhead(tool=tool, inflation=inflation, ranks=len(times), timing=timing), None
