"""What tracing cost the profiled steps: their step time against the measured windows'.

A profiled run measures its windows first, with no profiler attached, then runs the traced
steps (torchscale/rank/worker/capture.py). Every rank times both with the same step timer and the
same definition of a step (`measurement.timing`; one optimizer step), so

    overhead = median traced step / median measured step - 1

over all ranks pooled on both sides (the measured median is the result's `step_time.p50`).
It is what the profiler (torch.profiler's instrumentation, or nsys's CUDA/NVTX/OS runtime
hooks) adds to a step, plus run-to-run drift. Its 95 % interval is taken conservatively from
the two medians' own intervals (the traced steps' block bootstrap, the measured windows'
`intervals.step_p50_s`): low = traced low / measured high - 1, high = traced high / measured
low - 1. An interval that includes 0 reads "not measurable", with the interval, never as a
figure. It is recorded as one line in the run's `profile.notes` (result.json) and in the
analysis' notes (analysis.json, printed).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from torchscale.contracts.schema.cell_result import CellResult, Estimate
from torchscale.offline.analysis.uncertainty import percentile_of_steps
from torchscale.orchestration.profiling.phase_records import read_phase_record


@dataclass(frozen=True)
class CaptureOverhead:
    """Traced against measured step time, both medians over every rank's steps."""

    tool: str
    traced_step_s: float
    measured_step_s: float
    traced_steps: int  # over all ranks
    ranks: int
    timing: str  # the step timer both sides used
    low: float | None = None  # the overhead's 95 % interval (None: one step on a side)
    high: float | None = None

    @property
    def overhead(self) -> float:
        """Fraction the traced step is longer than the measured one (negative: shorter)."""
        return self.traced_step_s / self.measured_step_s - 1.0

    @property
    def measurable(self) -> bool:
        """False when the interval includes 0: tracing cost nothing the run could resolve."""
        return self.low is None or self.high is None or not self.low <= 0.0 <= self.high

    def line(self) -> str:
        if self.low is None or self.high is None:
            figure = f"{self.overhead:+.1%}, no interval"
        elif self.measurable:
            figure = f"{self.overhead:+.1%}, 95 % interval {self.low:+.1%} to {self.high:+.1%}"
        else:
            figure = f"not measurable: 95 % interval {self.low:+.1%} to {self.high:+.1%}"
        return (
            f"capture overhead ({self.tool}): traced steps {_ms(self.traced_step_s)} median "
            f"against {_ms(self.measured_step_s)} in the measured windows "
            f"({figure}; {self.traced_steps} traced step(s) over {self.ranks} "
            f"rank(s), same step timer: {self.timing})"
        )


def overhead_interval(
    traced: list[float], measured: Estimate | None
) -> tuple[float | None, float | None]:
    """The overhead's conservative 95 % interval from both medians' intervals."""
    if measured is None or not measured.low or not measured.high or len(traced) < 2:
        return None, None
    median = percentile_of_steps(traced, 50)
    if median.low is None or median.high is None:
        return None, None
    return median.low / measured.high - 1.0, median.high / measured.low - 1.0


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def traced_step_times(directory: Path, world_size: int) -> tuple[dict[int, list[float]], str]:
    """Each rank's traced step times from its `rank<k>.phases.json` (absent or unreadable
    files are left out) and the step timer they name."""
    times: dict[int, list[float]] = {}
    timing = "unknown"
    for rank in range(world_size):
        record = read_phase_record(directory, rank)
        if record is None:
            continue
        steps = record.get("step_s")
        if isinstance(steps, list) and steps:
            times[rank] = [float(s) for s in steps]
            timing = str(record.get("timing", timing))
    return times, timing


def capture_overhead(
    result: CellResult, directory: Path, tool: str
) -> tuple[CaptureOverhead | None, str | None]:
    """The overhead of the traced steps in `directory` against `result`'s measured windows,
    or None with why not."""
    if result.step_time is None or result.step_time.p50 <= 0:
        return None, "no measured step time to compare the traced steps with"
    times, timing = traced_step_times(directory, result.cell.world_size)
    pooled = [t for steps in times.values() for t in steps]
    if not pooled:
        return None, "the ranks recorded no traced step times (rank<k>.phases.json step_s)"
    measured = result.intervals.step_p50_s if result.intervals is not None else None
    low, high = overhead_interval(pooled, measured)
    overhead = CaptureOverhead(
        tool=tool,
        traced_step_s=statistics.median(pooled),
        measured_step_s=result.step_time.p50,
        traced_steps=len(pooled),
        ranks=len(times),
        timing=timing,
        low=low,
        high=high,
    )
    return overhead, None
