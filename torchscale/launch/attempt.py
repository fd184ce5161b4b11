"""One launch of torchrun and what it left: the one way every cell-like launch is run and read.

A launch either wrote its result (rank 0, after every rank's measurement was gathered) or did
not. A result that was written is kept whatever happened afterwards: ranks that hang in their
shutdown and are killed at the timeout, or a torchrun that exits non-zero after the write (a
gloo teardown abort), cost a warning, never the measurement. Only a launch that wrote nothing
is a failure, classified with its root cause (torchscale/launch/failure.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from torchscale.launch.failure import CellFailure, classify_failure
from torchscale.launch.process import ProcessOutcome, run_launch
from torchscale.launch.torchrun import LaunchCommand

T = TypeVar("T")


@dataclass(frozen=True)
class Attempt(Generic[T]):
    """What one launch left: `written` (kept even when the launch then hung or failed) with
    `warnings` about its shutdown, or `failure` when nothing was written."""

    outcome: ProcessOutcome
    written: T | None
    failure: CellFailure | None
    warnings: list[str] = field(default_factory=list)


def shutdown_warnings(
    outcome: ProcessOutcome, command: LaunchCommand, timeout_s: float
) -> list[str]:
    """Why a launch that wrote its result did not end cleanly (none when it did)."""
    if outcome.timed_out:
        return [
            f"the ranks had not exited {timeout_s:g} s after the launch (the cell timeout) "
            f"although the result was written: killed in their shutdown; measurement kept: "
            f"see {command.log_dir}"
        ]
    if outcome.returncode != 0:  # e.g. a rank aborting in gloo teardown after the gather
        return [
            f"torchrun exited with {outcome.returncode} after the result was written "
            f"(shutdown failure; measurement kept): see {command.log_dir}"
        ]
    return []


def run_attempt(
    command: LaunchCommand, timeout_s: float, read_written: Callable[[], T | None]
) -> Attempt[T]:
    """Run `command` (killed after `timeout_s`, its ranks' stacks taken first), then read what
    it wrote with `read_written` (None: nothing; the caller removed any stale copy before)."""
    outcome = run_launch(command, timeout_s)
    written = read_written()
    if written is None:
        return Attempt(outcome, None, classify_failure(outcome, command, timeout_s))
    return Attempt(outcome, written, None, shutdown_warnings(outcome, command, timeout_s))
