"""Helpers for tests that start real processes: find them by a marker in their command line,
start them with a known signal disposition, and kill everything they left behind.

torchrun puts every rank in a session of its own, so killing the group a test started is not
enough: leftovers are found by a marker (a path unique to the test) and killed one by one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
RESET_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def processes_mentioning(marker: str, grace_s: float = 5.0) -> list[str]:
    """'pid: command line' of live processes that mention `marker`, after giving processes
    already on their way out up to `grace_s` to go."""
    deadline = time.monotonic() + grace_s
    while True:
        found = scan_processes(marker)
        if not found or time.monotonic() >= deadline:
            return [f"{pid}: {cmdline}" for pid, cmdline in found]
        time.sleep(0.2)


def scan_processes(marker: str) -> list[tuple[int, str]]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            raw = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state == "Z":  # a zombie holds nothing; its parent has not reaped it yet
            continue
        cmdline = raw.replace(b"\0", b" ").decode(errors="replace")
        if marker in cmdline:
            found.append((int(proc.name), cmdline))
    return found


def live_children(parent: int | None = None) -> list[int]:
    """Pids of the live (not zombie) child processes of `parent` (default: this process)."""
    parent = os.getpid() if parent is None else parent
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == parent and fields[0] != "Z":
            found.append(int(proc.name))
    return found


def kill_mentioning(marker: str) -> None:
    """SIGKILL every process (and its group) whose command line mentions `marker`."""
    for pid, _ in scan_processes(marker):
        with contextlib.suppress(OSError):
            group = os.getpgid(pid)
            if group != os.getpgrp():  # never the group this test runs in
                os.killpg(group, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def default_signals() -> None:
    """preexec_fn: the child starts with SIGINT/SIGTERM/SIGHUP at their defaults and
    unblocked, whatever this test process inherited (a background job ignores SIGINT, nohup
    ignores SIGHUP), so what is tested is the program's own handling."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, RESET_SIGNALS)
    for signum in RESET_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)


def start(
    argv: Sequence[str],
    output: Path,
    env: Mapping[str, str] | None = None,
    preexec_fn: Callable[[], None] | None = default_signals,
) -> subprocess.Popen[bytes]:
    """Start `argv` in a new session (its own process group), output to a file (a pipe nobody
    reads could block it)."""
    child_env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})}
    with output.open("wb") as out:
        return subprocess.Popen(
            list(argv),
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=preexec_fn,
        )


def stop(proc: subprocess.Popen[bytes], marker: str | None = None) -> None:
    """Kill the group `proc` leads and every process that mentions `marker`; reap `proc`."""
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    if marker is not None:
        kill_mentioning(marker)


def wait_for(condition: Callable[[], bool], timeout_s: float, poll_s: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(poll_s)
    return condition()


def cli(*args: str | Path) -> list[str]:
    """argv of the torchscale CLI, run by this interpreter."""
    return [sys.executable, "-m", "torchscale", *map(str, args)]
