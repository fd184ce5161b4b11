"""The suite stops when asked, and leaves nothing running, whichever way it ends.

Three things stand in the way: the CLI under test turns Ctrl-C into exit code 130,
which is right for a user and wrong for a test run (the test failed, pytest went on); pytest
dies on SIGTERM and SIGHUP without running a single `finally`; and torchrun puts every rank in
a session of its own, so a rank whose parent was killed is adopted by init, out of anyone's
reach. So, for the whole session:

- pytest becomes a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`): a process a test started
  stays pytest's descendant even when its own parent dies (a rank under a killed torchrun, a
  daemon that double-forks), and can be found and killed;
- every SIGINT, SIGTERM and SIGHUP is seen through `signal.set_wakeup_fd`, which the kernel-level
  handler writes to whatever Python handler is installed, so a signal the code under test turns
  into an exit code still stops the suite once that test returns;
- SIGTERM and SIGHUP unwind like Ctrl-C (KeyboardInterrupt): fixtures and `finally` blocks run;
- at the end, however it came, every descendant still alive is stopped (SIGTERM to its group,
  then SIGKILL), zombies are reaped, and the terminal summary names what had to be killed.

A SIGKILL of pytest itself cannot be caught: what is left then is what product code leaves (its
children die with it through PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

import psutil
import pytest

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
TERM_GRACE_S = 3.0  # a stopped process' own clean-up, before SIGKILL


def become_subreaper() -> bool:
    """Orphaned descendants are re-parented to this process instead of init (Linux >= 3.4)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    return bool(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)


def stop_descendants(grace_s: float = TERM_GRACE_S) -> list[str]:
    """SIGTERM every live descendant (its whole process group when it leads one apart from
    ours), SIGKILL what is left after `grace_s`, reap the zombies; 'pid: command' of each."""
    me = psutil.Process()
    try:
        found = [p for p in me.children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE]
    except psutil.Error:
        found = []
    named = []
    own_group = os.getpgrp()
    for proc in found:
        with contextlib.suppress(psutil.Error):
            named.append(f"{proc.pid}: {' '.join(proc.cmdline())[:160]}")
        _signal(proc, signal.SIGTERM, own_group)
    _, alive = psutil.wait_procs(found, timeout=grace_s)
    for proc in alive:
        _signal(proc, signal.SIGKILL, own_group)
    psutil.wait_procs(alive, timeout=grace_s)
    _reap()
    return named


def _signal(proc: psutil.Process, signum: int, own_group: int) -> None:
    """`signum` to the group `proc` leads (never pytest's own), then to `proc` itself."""
    with contextlib.suppress(OSError, psutil.Error):
        group = os.getpgid(proc.pid)
        if group != own_group:
            os.killpg(group, signum)
    with contextlib.suppress(psutil.Error):
        proc.send_signal(signum)


def _reap() -> None:
    """Collect exit statuses of adopted children nobody waits for (the end of the session)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


class StopGuard:
    """A pytest plugin (registered by tests/conftest.py): see the module docstring."""

    def __init__(self) -> None:
        self.stop_signal: int | None = None
        self.killed: list[str] = []
        self._read_fd: int | None = None
        self._write_fd: int | None = None
        self._old_wakeup_fd: int = -1
        self._old_handlers: dict[int, Any] = {}
        self._session: pytest.Session | None = None
        self.subreaper = False

    # ------------------------------------------------------------------ set-up and tear-down

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        self.subreaper = become_subreaper()
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        os.set_blocking(self._write_fd, False)
        self._old_wakeup_fd = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
        for signum in (signal.SIGTERM, signal.SIGHUP):
            old = signal.getsignal(signum)
            if old is signal.SIG_IGN:  # nohup: the user asked for this one to be ignored
                continue
            self._old_handlers[signum] = old
            signal.signal(signum, _unwind_like_ctrl_c)

    def uninstall(self) -> None:
        if self._write_fd is None:
            return
        with contextlib.suppress(ValueError):
            signal.set_wakeup_fd(self._old_wakeup_fd)
        for signum, old in self._old_handlers.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)
        for fd in (self._read_fd, self._write_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._read_fd = self._write_fd = None

    def signalled(self) -> int | None:
        """The first stop signal received so far (kept once seen)."""
        if self._read_fd is not None and self.stop_signal is None:
            with contextlib.suppress(BlockingIOError, OSError):
                for byte in os.read(self._read_fd, 512):
                    if byte in STOP_SIGNALS:
                        self.stop_signal = byte
                        break
        return self.stop_signal

    # ------------------------------------------------------------------ pytest hooks

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._session = session
        self.install()

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        signum = self.signalled()
        if signum is not None and self._session is not None:
            name = signal.Signals(signum).name
            self._session.shouldstop = f"stopped by {name} (tests/stop_guard.py)"
            self.killed += stop_descendants()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.signalled()
        self.killed += stop_descendants()
        self.uninstall()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.stop_signal is not None:
            name = signal.Signals(self.stop_signal).name
            terminalreporter.write_line(f"stop guard: stopped by {name}")
        if self.killed:
            terminalreporter.write_line(
                f"stop guard: {len(self.killed)} process(es) started by tests were still "
                "running and were stopped:"
            )
            for line in self.killed[:20]:
                terminalreporter.write_line(f"  {line}")


def _unwind_like_ctrl_c(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")
