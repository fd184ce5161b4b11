"""The GPU's busy share in a user's job, measured as a cell's: the short CUDA-only capture a
cell's rank takes after its windows (rank/worker/busy_trace.py: the same profiler, the same
reduction), here over the job's own next `TRACE_STEPS` optimizer steps after its measured
ones. The job steps; the probe starts the profiler in the post hook of the last measured step
and stops it in that of the last captured one, synchronising the device at both edges so the
wall time holds those steps' work alone, in no measured step. The reading joins the rank's
measurement file (`gpu_busy`), and the host judges it as a cell's (host-bound or not).

Taken only on a GPU, with the measured steps counted (the agreed steps place it) and the torch
tool (under nsys, nsys's injection holds CUPTI), and never beside a profiler of the job's own.
Fail-open: a capture that fails gives the reading its reason; the job runs on.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.rank.worker.busy_trace import (
    TRACE_STEPS,
    BusyReading,
    attempt,
    exported_reading,
    start_profiler,
)

OWN_PROFILER = "unavailable.own_profiler"


def busy_steps(measured_steps: int, tool: str) -> int:
    """How many steps a CUDA rank's busy capture takes in this job: TRACE_STEPS where its
    measured steps are counted, under the torch tool; else none."""
    return TRACE_STEPS if measured_steps > 0 and tool == "torch" else 0


def reading_json(reading: BusyReading) -> dict[str, Any]:
    """The reading as the rank file holds it (`RankMeasurement.gpu_busy`)."""
    data = dataclasses.asdict(reading)
    data["reason"] = reading.reason.model_dump() if reading.reason is not None else None
    return data


class BusyWindow:
    """One rank's capture over the job's next steps: `open` after the last measured step,
    `close` after the last captured one."""

    def __init__(self, rank: int, device: Any, steps: int) -> None:
        self.rank, self.device, self.steps = rank, device, steps
        self.prof: Any = None
        self.start = 0.0

    def open(self) -> BusyReading | None:
        """Start the profiler; None when it runs, else the reading that says why not. Never
        raises: the rank must still stop at the agreed step."""
        from torchscale.rank.own_job.trace_window import own_profiler_running

        if own_profiler_running():  # a second start would take the job's session over
            return BusyReading(rank=self.rank, reason=Finding(code=OWN_PROFILER))
        prof, why = attempt(start_profiler)
        if prof is None:
            return BusyReading(rank=self.rank, reason=why)
        _, why = attempt(prof.step)  # the recording starts: the captured steps follow
        if why is None:
            _, why = attempt(self._synchronize)
        if why is not None:
            attempt(prof.stop)
            return BusyReading(rank=self.rank, reason=why)
        self.prof = prof
        self.start = time.perf_counter()
        return None

    def close(self) -> BusyReading:
        """Stop the profiler after the captured steps and reduce its trace; never raises."""
        _, why = attempt(self._synchronize)
        wall_s = time.perf_counter() - self.start
        prof, self.prof = self.prof, None
        _, stopped = attempt(prof.stop)
        why = why or stopped
        if why is not None:
            return BusyReading(rank=self.rank, steps=self.steps, reason=why)
        reading, why = attempt(lambda: exported_reading(prof, self.rank, wall_s, self.steps))
        return reading or BusyReading(rank=self.rank, steps=self.steps, reason=why)

    def _synchronize(self) -> None:
        import torch

        torch.cuda.synchronize(self.device)

    def abandon(self) -> None:
        """The job ended inside the capture: the profiler stopped, nothing read."""
        prof, self.prof = self.prof, None
        if prof is not None:
            attempt(prof.stop)
