"""Run one command in its own process group, with a timeout that kills the whole group.

torchrun starts one worker per rank; killing only torchrun can leave ranks holding ports and
GPUs. Starting a new session makes every descendant killable with one signal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

TERM_GRACE_S = 5.0


@dataclass(frozen=True)
class ProcessOutcome:
    returncode: int | None  # None when it was killed for timing out
    timed_out: bool
    wall_s: float
    log_path: Path

    def log_tail(self, lines: int = 20) -> str:
        """The last `lines` lines of the combined stdout/stderr log."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


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


def run_logged(
    argv: Sequence[str],
    env: Mapping[str, str],
    log_path: Path,
    timeout_s: float,
    cwd: Path | None = None,
) -> ProcessOutcome:
    """Run `argv` with stdout+stderr to `log_path`; kill its process group after `timeout_s`.

    Ctrl-C (KeyboardInterrupt) also takes the whole group down before propagating.
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
        )
        try:
            returncode = proc.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            returncode, timed_out = None, True
        except BaseException:
            _kill_group(proc)
            raise
    return ProcessOutcome(returncode, timed_out, time.perf_counter() - start, log_path)
