"""What else ran on this machine while a comm launch ran: the busy-machine caveat of a comm run
(docs/comm.md, 'A busy machine is said'), by the rule the benchmark's cells use
(contracts/busy_machine.py).

Other cores = (host busy - the launch's - this process's CPU seconds) / wall, read at the
launch's two edges; RUSAGE_CHILDREN counts torchrun and every rank it reaped, since a child's
figures include its own waited-for children.
"""

from __future__ import annotations

import importlib
import os
import resource
import time
from dataclasses import dataclass

from torchscale.contracts.busy_machine import busy_cpu_seconds, is_busy
from torchscale.contracts.finding import Finding


@dataclass(frozen=True)
class LoadEdge:
    """The machine's CPU counters at one edge of a launch (seconds)."""

    at_s: float
    host_busy_s: float
    children_s: float
    own_s: float
    cores: int | None


def read_edge() -> LoadEdge | None:
    """The counters now; None where psutil cannot read the host's CPU times."""
    try:
        psutil = importlib.import_module("psutil")
        busy = busy_cpu_seconds(psutil.cpu_times())
        cores = psutil.cpu_count(logical=True)
    except Exception:  # psutil missing, /proc unreadable: no caveat, never a failed run
        return None
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = os.times()
    return LoadEdge(
        at_s=time.monotonic(),
        host_busy_s=busy,
        children_s=children.ru_utime + children.ru_stime,
        own_s=own.user + own.system,
        cores=cores,
    )


def busy_warning(start: LoadEdge | None, end: LoadEdge | None, ranks: int) -> Finding | None:
    """The busy-machine warning of a launch of `ranks` ranks on this machine between the two
    edges, or None when it was not busy (or could not be read)."""
    if start is None or end is None:
        return None
    wall = end.at_s - start.at_s
    if wall <= 0:
        return None
    launch = max(0.0, (end.children_s - start.children_s) + (end.own_s - start.own_s))
    busy = max(0.0, end.host_busy_s - start.host_busy_s)
    other = max(0.0, busy - launch) / wall
    if not is_busy(other, launch / wall, end.cores, ranks):
        return None
    figures = {"other_cores": other, "cores": end.cores, "run_cores": launch / wall}
    return Finding(code="comm.busy_machine", figures=figures)
