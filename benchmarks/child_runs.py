"""Run a torchscale command as a benchmark's child: in its own session, its output kept, and
stopped with its whole process group (torchrun and every rank) on a timeout, Ctrl-C, SIGTERM
or SIGHUP, so no process a benchmark started outlives it.

Shared by the benchmarks that run many cells (straggler_detection.py, interval_coverage.py).
Import it with the benchmarks folder on sys.path (a script run as `python benchmarks/x.py` has
it there).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from types import FrameType

STOP_GRACE_S = 30.0  # torchscale takes its torchrun down on SIGTERM; then SIGKILL


class Stopped(Exception):
    """SIGTERM or SIGHUP: unwind like Ctrl-C so every process started is stopped."""


def stop(signum: int, frame: FrameType | None) -> None:
    """A signal handler for SIGTERM and SIGHUP: raise Stopped."""
    raise Stopped(signal.Signals(signum).name)


def kill_group(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM the child's process group (it leads its own session), then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace_s)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        proc.wait()


def run_child(argv: Sequence[str], env: dict[str, str], timeout_s: float) -> tuple[int, str]:
    """Run `argv` in its own session: its exit status and output (124 past `timeout_s`); on
    any exception (Ctrl-C, SIGTERM) its group is stopped before the exception goes on."""
    proc = subprocess.Popen(
        list(argv),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_group(proc, STOP_GRACE_S)
        output, _ = proc.communicate()
        return 124, output.decode("utf-8", "replace")
    except BaseException:
        kill_group(proc, STOP_GRACE_S)
        raise
    return proc.returncode, output.decode("utf-8", "replace")
