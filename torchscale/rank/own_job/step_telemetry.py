"""The telemetry of a user's job over its measured steps: the worker's rank sampler and summary
(docs/telemetry.md), started one step before the measured steps (its start waits for a first
sample: in a warm-up step, not a measured one), its window opened where they start and closed
where they end.
"""

from __future__ import annotations

import socket
import time
from typing import Any

from torchscale.rank.own_job.trace_window import WindowPlan


class StepTelemetry:
    """One rank's sampler over the measured steps of `WindowPlan`'s count."""

    def __init__(self) -> None:
        self.sampler: Any = None  # the rank's telemetry sampler, running over the measured steps
        self.window_open: float | None = None  # perf_counter at the measured steps' start
        self.window_close: float | None = None

    def step_ended(self, count: int, plan: WindowPlan, device: Any) -> None:
        """At the end of step `count`: the sampler started, its window opened or closed."""
        opens = plan.warmup if plan.steps else plan.closes_after  # the measured steps start
        if count == max(opens - 1, 1) and self.sampler is None:
            import torch

            from torchscale.contracts.cell_settings import TelemetryConfig
            from torchscale.rank.telemetry.rank import rank_sampler

            self.sampler = rank_sampler(TelemetryConfig(), device or torch.device("cpu"))
            self.sampler.start()
        if self.sampler is None:
            return
        if count == opens:
            self.sampler.mark_open()
            self.window_open = time.perf_counter()
        elif count > opens:
            self.window_close = time.perf_counter()
            if plan.steps and count >= plan.warmup + plan.steps:
                self.stop()

    def stop(self) -> None:
        sampler = self.sampler
        if sampler is None or not sampler.running:
            return
        if self.window_open is not None and self.window_close is not None:
            sampler.mark_window(self.window_open, self.window_close)
        sampler.stop()

    def summary(self, rank: int) -> dict[str, Any]:
        """The measurement's `telemetry`: the rank's summary over the measured steps."""
        if self.sampler is None:
            return {}
        self.stop()
        if self.window_open is None:  # the job ended before its measured steps
            return {}
        from torchscale.rank.telemetry.window_figures import summarise_rank

        summary = summarise_rank(rank, socket.gethostname(), self.sampler.report())
        return {"telemetry": summary.model_dump(mode="json")}
