"""How long the rank's main thread waited for a CPU, and how long it ran on one, read at
step edges: Linux's run_delay and the thread's CPU clock.

A rank whose core is taken by other work is late exactly like a rank with more work; only the
scheduler tells them apart (docs/methodology.md, "Host against compute"). The wait is the
difference of `run_delay` (second field of `/proc/thread-self/schedstat`, CONFIG_SCHED_INFO);
not schedstat's first field, which lags a running thread by a tick (a short step reads 0).
The wait is the main thread's only: with several intra-op threads it under-states the host's
share (the straggler rule then keeps a name). Cost per read: one pread and one clock_gettime.
"""

from __future__ import annotations

import os
import time

from torchscale.contracts.finding import Finding

SCHEDSTAT = "/proc/thread-self/schedstat"


class CpuWaitClock:
    """Cumulative run_delay and on-CPU seconds of the thread that opened it. Open and read it
    in the thread whose waits it should read (the training loop's); `read_both()` and
    `read()` are None once it is unavailable, and `unavailable` says why."""

    def __init__(self) -> None:
        self.unavailable: Finding | None = None
        self._fd: int | None = None
        try:
            self._fd = os.open(SCHEDSTAT, os.O_RDONLY)
            self._parse(os.pread(self._fd, 128, 0))
        except (OSError, ValueError, IndexError) as exc:
            self._fail(exc)

    @staticmethod
    def _parse(raw: bytes) -> float:
        """run_delay seconds of one schedstat line: its second field."""
        return int(raw.split()[1]) / 1e9

    def _fail(self, exc: BaseException) -> None:
        error = f"{type(exc).__name__}: {exc}"
        self.unavailable = Finding(
            code="unavailable.schedstat_unreadable", figures={"path": SCHEDSTAT, "error": error}
        )
        self.close()

    def read_both(self) -> tuple[float, float] | None:
        """(seconds this thread has waited for a CPU, seconds it has run on one) since it
        started: run_delay and the thread's CPU clock, read together; None when
        unavailable."""
        on_cpu = time.thread_time_ns()
        waited = self.read()
        return None if waited is None else (waited, on_cpu / 1e9)

    def read(self) -> float | None:
        """Seconds this thread has waited for a CPU since it started, or None (the pread
        alone: no CPU clock read)."""
        if self._fd is None:
            return None
        try:
            return self._parse(os.pread(self._fd, 128, 0))
        except (OSError, ValueError, IndexError) as exc:
            self._fail(exc)
            return None

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


_CLOCKS: dict[int, CpuWaitClock] = {}


def thread_clock() -> CpuWaitClock:
    """The calling thread's clock, opened once per thread and kept for the process's life
    (one file descriptor per training thread, not one per window)."""
    import threading

    ident = threading.get_native_id()
    clock = _CLOCKS.get(ident)
    if clock is None:
        clock = _CLOCKS[ident] = CpuWaitClock()
    return clock
