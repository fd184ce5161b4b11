"""Run one command in its own process group, with a timeout that kills the whole group.

torchrun starts one worker per rank; killing only torchrun can leave ranks holding ports and
GPUs. Starting a new session makes the command killable with one signal, whatever it started in
its group; the parent-death signal (Linux) kills it even when we are SIGKILLed and can clean up
nothing. (torchrun puts each rank in a session of its own: ranks set their own parent-death
signal, in torchscale/rank/worker/diagnostics.py.) A timed-out torchrun launch is asked where its
ranks are stuck before it is killed.

A launch that says when its work is done (`finished`: a cell's result written) gets
SHUTDOWN_GRACE_S from then to exit, not the rest of its timeout: ranks stuck in a backend's
teardown after the result was written would otherwise hold the sweep (and the GPUs) for the
whole cell timeout, hours on a long cell.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from torchscale.contracts.signals import die_with_parent, parent_death_signal_supported
from torchscale.orchestration.launch.diagnose import read_text, request_stacks

if TYPE_CHECKING:
    from torchscale.orchestration.launch.torchrun import LaunchCommand

TERM_GRACE_S = 5.0
# after the result is written: a healthy teardown (destroy_process_group, NCCL's communicators
# on 8 GPUs, torchrun's agent) takes seconds; a slow one still gets half a minute
SHUTDOWN_GRACE_S = 30.0
FINISHED_POLL_S = 1.0  # how often `finished` is asked while the launch runs


@dataclass(frozen=True)
class ProcessOutcome:
    returncode: int | None  # None when it was killed for timing out
    timed_out: bool
    wall_s: float
    log_path: Path
    # rank -> file with the Python stacks it dumped when the timeout hit (run_launch only)
    stacks: Mapping[int, Path] = field(default_factory=dict)
    # set when it was killed this long after its work was done (`finished`), not at the timeout
    shutdown_grace_s: float | None = None

    @property
    def killed_after_finish(self) -> bool:
        return self.shutdown_grace_s is not None

    @property
    def ended_cleanly(self) -> bool:
        """Exited 0 before the timeout."""
        return not self.timed_out and self.returncode == 0

    def log_tail(self, lines: int = 20) -> str:
        """The last `lines` lines of the combined stdout/stderr log."""
        return file_tail(self.log_path, lines)


def file_tail(path: Path, lines: int = 20) -> str:
    """The last `lines` lines of a text file ("" when it cannot be read)."""
    return "\n".join(read_text(path).splitlines()[-lines:])


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member exists but is not ours to signal
        return True
    return True


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the whole process group, give it TERM_GRACE_S, then SIGKILL what is left.

    The group, not just the launched process: a rank that ignores SIGTERM must not outlive
    the cell holding a port or a GPU.
    """
    pgid = proc.pid  # start_new_session=True: the child leads its own group
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None and not _group_alive(pgid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=TERM_GRACE_S)


def _die_with(parent: int) -> Callable[[], object] | None:
    """A preexec_fn that gives the child SIGKILL as its parent-death signal (Linux only)."""
    return partial(die_with_parent, parent) if parent_death_signal_supported() else None


def run_logged(
    argv: Sequence[str],
    env: Mapping[str, str],
    log_path: Path,
    timeout_s: float,
    cwd: Path | None = None,
    *,
    on_timeout: Callable[[], object] | None = None,
    finished: Callable[[], bool] | None = None,
    shutdown_grace_s: float | None = None,
) -> ProcessOutcome:
    """Run `argv` with stdout+stderr to `log_path`; kill its process group after `timeout_s`
    (calling `on_timeout` first, while it is still alive to be examined), or `shutdown_grace_s`
    (default SHUTDOWN_GRACE_S) after `finished()` first says its work is done, if sooner.

    Ctrl-C (KeyboardInterrupt), SIGTERM (torchscale.contracts.signals.Terminated) and any other
    exception also take the whole group down before propagating. The child dies with this thread:
    the wait below keeps the thread alive as long as the child runs.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with(os.getpid()),  # only a prctl call, resolved beforehand
        )
        grace = SHUTDOWN_GRACE_S if shutdown_grace_s is None else shutdown_grace_s
        try:
            returncode, after_finish = _wait(proc, start + timeout_s, finished, grace)
            timed_out = False
        except _Expired as expired:
            try:
                if on_timeout is not None:
                    on_timeout()
            finally:
                _kill_group(proc)
            returncode, timed_out, after_finish = None, True, expired.after_finish
        except BaseException:
            _kill_group(proc)
            raise
    wall_s = time.perf_counter() - start
    grace_used = grace if timed_out and after_finish else None
    return ProcessOutcome(returncode, timed_out, wall_s, log_path, shutdown_grace_s=grace_used)


class _Expired(Exception):
    def __init__(self, after_finish: bool) -> None:
        self.after_finish = after_finish


def _wait(
    proc: subprocess.Popen[bytes],
    deadline: float,
    finished: Callable[[], bool] | None,
    grace_s: float,
) -> tuple[int, bool]:
    """Wait for `proc` until `deadline` (perf_counter), or `grace_s` after `finished()` first
    holds; its return code and whether it was finished. _Expired when a limit passed."""
    finished_at: float | None = None
    while True:
        limit = deadline if finished_at is None else min(deadline, finished_at + grace_s)
        remaining = limit - time.perf_counter()
        if remaining <= 0:
            raise _Expired(after_finish=finished_at is not None and limit < deadline)
        step = remaining if finished is None or finished_at is not None else FINISHED_POLL_S
        try:
            return proc.wait(timeout=min(remaining, step)), finished_at is not None
        except subprocess.TimeoutExpired:
            if finished is not None and finished_at is None and finished():
                finished_at = time.perf_counter()


def _clear_diagnostics(directory: Path) -> None:
    """Remove a previous run's pid and dump files: a stale pid must never be signalled."""
    with contextlib.suppress(OSError):
        for path in directory.iterdir():
            if path.is_file():
                path.unlink(missing_ok=True)


def run_launch(
    command: LaunchCommand, timeout_s: float, finished: Callable[[], bool] | None = None
) -> ProcessOutcome:
    """Run a built torchrun command with its log in its log directory; on timeout, collect
    each rank's stacks (and keep them with the logs) before the kill. Called only by
    `torchscale.orchestration.launch.attempt.run_attempt`, the one launch path."""
    _clear_diagnostics(command.diagnostics_dir)
    stacks: dict[int, Path] = {}
    outcome = run_logged(
        command.argv,
        command.env,
        command.log_path,
        timeout_s,
        on_timeout=lambda: stacks.update(request_stacks(command.diagnostics_dir)),
        finished=finished,
    )
    return replace(outcome, stacks=stacks)
