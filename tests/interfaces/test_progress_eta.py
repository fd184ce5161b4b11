"""Where a sweep stands: cell i/N, elapsed, and an ETA from the plan's estimates
corrected by the measured cells (torchscale.interfaces.report.progress), in the running lines that
logs and CI see (no TTY needed)."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from rich.console import Console

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.wording.spell import duration_text
from torchscale.interfaces.console import benchmark, streams
from torchscale.interfaces.console.progress import (
    Finished,
    SweepProgress,
    eta_s,
    position_text,
)
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_no_eta_before_a_cell_finished() -> None:
    assert eta_s([5.0, 5.0], []) is None
    assert position_text(0, 2, 0.0, None) == "cell 1/2, 0s elapsed, ETA unknown"
    assert position_text(2, 10, 65.0, 190.0) == "cell 3/10, 1m05s elapsed, ETA 3m10s"


def test_the_plan_estimate_is_scaled_by_measured_over_estimated() -> None:
    # finished cells took twice their estimate: the cells left should too
    finished = [
        Finished(estimate_s=5.0, measured_s=10.0),
        Finished(estimate_s=10.0, measured_s=20.0),
    ]
    assert eta_s([5.0, 20.0], finished) == pytest.approx(2 * 25.0)


def test_without_estimates_the_mean_finished_cell_times_the_cells_left() -> None:
    finished = [Finished(None, 10.0), Finished(None, 30.0)]
    assert eta_s([None, None, None], finished) == pytest.approx(3 * 20.0)
    # one unknown estimate is enough to fall back: a partial scale would mislead
    assert eta_s([5.0, None], [Finished(5.0, 10.0)]) == pytest.approx(2 * 10.0)


def test_nothing_left_is_zero() -> None:
    assert eta_s([], [Finished(1.0, 2.0)]) == 0.0


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.4, "0s"), (45, "45s"), (185, "3m05s"), (7440, "2h04m")],
)
def test_durations_are_short(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


def test_sweep_progress_counts_only_launched_cells() -> None:
    clock = FakeClock()
    # cell 1 is skipped by the plan (estimate 0), cell 2 reused by --resume (no launch)
    progress = SweepProgress(4, [4.0, 0.0, 4.0, 8.0], clock=clock)
    assert progress.start(0, will_launch=True) == "cell 1/4, 0s elapsed, ETA unknown"
    clock.now += 12.0  # three times its estimate
    progress.done()
    progress.start(1, will_launch=False)
    progress.done()  # skipped: no evidence of how long a cell takes
    clock.now += 1.0
    text = progress.start(2, will_launch=False)
    assert text == "cell 3/4, 13s elapsed, ETA 36s"  # (4 + 8) x 12 / 4
    progress.done()
    assert len(progress.finished) == 1
    assert progress.eta_after(2) == "ETA 24s"  # the last cell: 8 x 3


def ok_result(planned: Any) -> CellResult:
    return CellResult.model_validate({"cell": planned.cell.model_dump(), "status": "ok"})


def test_running_lines_say_where_the_sweep_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a log or CI shows with -v (no TTY): position, elapsed and ETA on every running
    line."""
    config = BenchConfig.model_validate(
        {
            "experiment_name": "e",
            "models": ["tiny-mlp"],
            "batch_sizes": [8],
            "gpu_counts": [1, 2],
            "device": "cpu",
        }
    )
    plan = build_plan(config, Machine(0, 2))
    out = io.StringIO()
    # a console of its own: patching the shared one's `file` would leave it writing to this
    # test's capture for the tests after it
    console = Console(file=out, highlight=False, soft_wrap=True)
    monkeypatch.setattr(benchmark, "stderr", console)
    monkeypatch.setattr(streams.Verbosity, "level", 1)
    printer = benchmark.BenchmarkPrinter(len(plan.cells), plan)
    try:
        printer.cell_start(plan.cells[0], 0, 2, True)
        printer.cell_done(ok_result(plan.cells[0]), False)
        printer.cell_start(plan.cells[1], 1, 2, True)
    finally:
        printer.progress.stop()
    # lines wrap at the console's width: read each line unwrapped (a line starts with '>')
    text = re.sub(r" ?\n(?!>)", " ", out.getvalue())
    assert "> Running tiny-mlp on 1 CPU rank (Batch 8, fp32, ddp)... cell 1/2," in text
    assert "ETA unknown" in text.split("2 CPU ranks")[0]
    second = text.split("> Running tiny-mlp on 2 CPU ranks (Batch 8, fp32, ddp)... ")[1]
    assert second.startswith("cell 2/2, ")
    assert "ETA unknown" not in second.splitlines()[0]
    assert "ETA " in second.splitlines()[0]


def test_a_log_gets_the_position_under_the_live_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default output to a log: the table's rows, and where the sweep stands once the
    interval since the last position line has passed (here 0 s, so at every later cell)."""
    config = BenchConfig.model_validate(
        {
            "experiment_name": "e",
            "models": ["tiny-mlp"],
            "batch_sizes": [8],
            "gpu_counts": [1, 2],
            "device": "cpu",
        }
    )
    plan = build_plan(config, Machine(0, 2))
    out = io.StringIO()
    console = Console(file=out, highlight=False, soft_wrap=True)
    monkeypatch.setattr(benchmark, "stdout", console)
    monkeypatch.setattr(benchmark, "POSITION_EVERY_S", 0.0)
    monkeypatch.setattr(streams.Verbosity, "level", 0)
    printer = benchmark.BenchmarkPrinter(len(plan.cells), plan)
    try:
        printer.cell_start(plan.cells[0], 0, 2, True)
        printer.cell_done(ok_result(plan.cells[0]), False)
        printer.cell_start(plan.cells[1], 1, 2, True)
    finally:
        printer.progress.stop()
    text = out.getvalue()
    assert "Running" not in text
    assert re.search(r"\(cell 2/2, \d+s elapsed, ETA \S+\)", text), text


def test_the_bar_is_made_at_first_use_with_its_cells_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dry run's printer makes no bar (nor imports one); a followed submission's first event
    starts the bar with its cells counted, before any cell has started or finished (a Slurm
    sweep's cells start in its jobs, never through the printer)."""
    from pathlib import Path

    from torchscale.orchestration.schedulers.api import LauncherEvent, LauncherSubmission

    config = BenchConfig.model_validate(
        {
            "experiment_name": "e",
            "models": ["tiny-mlp"],
            "batch_sizes": [8],
            "gpu_counts": [1],
            "device": "cpu",
        }
    )
    plan = build_plan(config, Machine(0, 2))
    monkeypatch.setattr(benchmark, "stdout", Console(file=io.StringIO()))
    dry = benchmark.BenchmarkPrinter(len(plan.cells), plan, live=False)
    dry.stop()
    assert "progress" not in vars(dry)
    printer = benchmark.BenchmarkPrinter(len(plan.cells), plan, live=False)
    submission = LauncherSubmission("slurm", Path("."), (), ("submitted 1 job",), followed=True)
    printer.launcher_event(LauncherEvent("slurm", "submitted", "", submission=submission))
    try:
        task = printer.progress.tasks[0]
        assert (printer.task, task.description, task.total) == (task.id, "cells", len(plan.cells))
    finally:
        printer.stop()
