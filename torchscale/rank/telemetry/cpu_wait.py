"""How long the rank's main thread waited for a CPU: Linux's run_delay, read at step edges.

A rank whose core is taken by other work (another process, a kernel thread, a second rank on
the same core) runs its step later, exactly like a rank with more work: the phase timers and
the traces cannot tell the two apart. The scheduler can: `/proc/thread-self/schedstat` holds,
per thread, the nanoseconds it spent runnable but waiting on a run queue (`run_delay`, the
second field; kept whenever the kernel has CONFIG_SCHED_INFO, as every distribution kernel
does). Read at a step's two edges, its difference is the time the thread was ready to work
and the host gave its CPU to something else.

What it is not: a sleep or a blocking wait (an injected delay, a wait for a peer, the GPU or
a disk) is not run_delay; nor is time lost on a CPU to interrupts or to a slower core. And it
is the main thread's: intra-op threads (torch.get_num_threads() > 1) wait on their own, which
the main thread sees as a blocking wait, so with several threads per rank it under-states
the host's share (the straggler rule then keeps a name rather than drops it).

Cost: one pread of a file descriptor opened once (about 1 us on the 2-core VM here).
"""

from __future__ import annotations

import os

SCHEDSTAT = "/proc/thread-self/schedstat"
UNAVAILABLE = (
    f"{SCHEDSTAT} unreadable ({{why}}): the CPU wait is measured on Linux only (run_delay of "
    "CONFIG_SCHED_INFO)"
)


class CpuWaitClock:
    """Cumulative run_delay seconds of the thread that opened it. Open it in the thread whose
    waits it should read (the training loop's); `read()` is None once it is unavailable, and
    `unavailable` says why."""

    def __init__(self) -> None:
        self.unavailable: str | None = None
        self._fd: int | None = None
        try:
            self._fd = os.open(SCHEDSTAT, os.O_RDONLY)
            self._parse(os.pread(self._fd, 128, 0))
        except (OSError, ValueError, IndexError) as exc:
            self._fail(exc)

    @staticmethod
    def _parse(raw: bytes) -> float:
        return int(raw.split()[1]) / 1e9

    def _fail(self, exc: BaseException) -> None:
        self.unavailable = UNAVAILABLE.format(why=f"{type(exc).__name__}: {exc}")
        self.close()

    def read(self) -> float | None:
        """Seconds this thread has waited for a CPU since it started, or None."""
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
