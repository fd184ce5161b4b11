"""One launch of torchrun and what it left: the one way every torchrun this project starts is
run (docs/architecture.md, "One launch path"; tests/orchestration/test_launch_path.py).

Each caller reads the one `Attempt` its own way: a cell or a profiled run keeps a result that
was written whatever happened afterwards (ranks killed in a hung shutdown, or a torchrun that
exits non-zero after the write, a gloo teardown abort, cost a warning, never the measurement;
only a launch that wrote nothing is a `failure`); the collective sweep keeps the rows written
before a failure and marks the run with `launch_failure`; the smoke test judges the verdict,
the exit and the root cause strictly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.orchestration.launch.failure import CellFailure, classify_failure
from torchscale.orchestration.launch.process import ProcessOutcome, run_launch
from torchscale.orchestration.launch.torchrun import LaunchCommand

T = TypeVar("T")


@dataclass(frozen=True)
class Attempt(Generic[T]):
    """What one launch left: how it ended (`outcome`), what the ranks wrote (`written`, kept
    however the launch ended), how it failed with its root cause (`launch_failure`: it timed
    out, exited non-zero or wrote nothing) and `warnings` about the shutdown of a launch that
    wrote but did not end cleanly."""

    outcome: ProcessOutcome
    written: T | None
    launch_failure: CellFailure | None
    warnings: list[CellWarning] = field(default_factory=list)

    @property
    def failure(self) -> CellFailure | None:
        """Why nothing was written (None when something was): what a caller that keeps a
        written result however the launch ended reports."""
        return self.launch_failure if self.written is None else None


def shutdown_warnings(
    outcome: ProcessOutcome, command: LaunchCommand, timeout_s: float
) -> list[CellWarning]:
    """Why a launch that wrote its result did not end cleanly (none when it did)."""
    where = {"log_dir": str(command.log_dir)}
    if outcome.killed_after_finish:
        code, figures = "warning.killed_after_result", {"grace_s": outcome.shutdown_grace_s}
    elif outcome.timed_out:
        code, figures = "warning.timed_out_after_result", {"timeout_s": timeout_s}
    elif outcome.returncode != 0:  # e.g. a rank aborting in gloo teardown after the gather
        code, figures = "warning.exit_after_result", {"returncode": outcome.returncode}
    else:
        return []
    return [CellWarning.of("other", code, figures | where)]


def run_attempt(
    command: LaunchCommand,
    timeout_s: float,
    read_written: Callable[[], T | None],
    finished: Callable[[], bool] | None = None,
) -> Attempt[T]:
    """Run `command` (killed after `timeout_s`, its ranks' stacks taken first; or the shutdown
    grace after `finished()` first holds, when given), then read what it wrote with
    `read_written` (None: nothing; the caller removed any stale copy before)."""
    outcome = run_launch(command, timeout_s, finished)
    written = read_written()
    failure = None
    if written is None or not outcome.ended_cleanly:
        failure = classify_failure(outcome, command, timeout_s)
    warnings = [] if written is None else shutdown_warnings(outcome, command, timeout_s)
    return Attempt(outcome, written, failure, warnings)
