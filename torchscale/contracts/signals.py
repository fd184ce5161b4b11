"""Process signals: SIGTERM/SIGHUP as an exception the CLI can clean up after, and the Linux
parent-death signal that keeps a launched process from outliving the one that started it.

A sweep stopped by a scheduler (SIGTERM) or a closed terminal (SIGHUP) must take its running
cell down and keep what it finished, exactly as Ctrl-C does; raising from the handler lets the
same `finally` blocks do that. A sweep that is SIGKILLed cannot clean up at all, so its children
are told by the kernel instead (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class Terminated(BaseException):
    """Raised in the main thread when a terminating signal arrives.

    A BaseException, like KeyboardInterrupt: `except Exception` in library code must not
    swallow a request to stop.
    """

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"stopped by {self.name}")

    @property
    def name(self) -> str:
        return signal_name(self.signum)

    @property
    def exit_code(self) -> int:
        """128 + signal number, as a shell reports a process killed by that signal."""
        return 128 + self.signum


def signal_name(signum: int) -> str:
    """'SIGTERM' for 15; 'signal 99' for a number this platform does not name."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


@contextlib.contextmanager
def terminate_on_signals(signums: tuple[int, ...] = TERMINATING_SIGNALS) -> Iterator[None]:
    """Within the block, `signums` raise Terminated (once; repeats are ignored while the
    first one unwinds, so clean-up is not cut short). Old handlers are restored on exit.

    A signal ignored when we started (`nohup` ignores SIGHUP) stays ignored. Outside the main
    thread, Python cannot install handlers: the block then runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal raised
        if raised:
            return
        raised = True
        raise Terminated(signum)

    previous: dict[int, Any] = {}
    try:
        for signum in signums:
            old = signal.getsignal(signum)
            if old is signal.SIG_IGN:
                continue
            previous[signum] = old
            signal.signal(signum, handler)
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc's prctl, from the symbols already loaded into this process (dlopen(NULL)), else
    libc.so.6. Never ctypes.util.find_library, which runs `ldconfig -p` in a subprocess.
    Looked up on first use and kept. A preexec_fn must not be the first user (a forked child
    should only make the call): resolve it in the parent first, with
    parent_death_signal_supported()."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # here, not at import: every CLI start and every rank imports this module

    for name in (None, "libc.so.6"):
        try:
            prctl: Callable[..., int] = ctypes.CDLL(name, use_errno=True).prctl
        except (OSError, AttributeError):
            continue
        return prctl
    return None


def parent_death_signal_supported() -> bool:
    """Whether prctl(PR_SET_PDEATHSIG) is available; resolves it for later calls."""
    return _prctl() is not None


def set_parent_death_signal(signum: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send `signum` to this process when its parent thread exits.

    Linux only (returns False elsewhere, or if prctl fails). The caller must check that the
    parent is still the expected one afterwards: if it died first, no signal will ever come.
    """
    prctl = _prctl()
    if prctl is None:
        return False
    return bool(prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0)


def die_with_parent(expected_parent: int, signum: int = signal.SIGKILL) -> bool:
    """Set the parent-death signal, and deliver it now if the parent is already gone
    (reparented away from `expected_parent`, the pid of the process that forked this one,
    read before the fork: a preexec_fn). False where the platform has no such signal."""
    if not set_parent_death_signal(signum):
        return False
    if os.getppid() != expected_parent:
        os.kill(os.getpid(), signum)
    return True
