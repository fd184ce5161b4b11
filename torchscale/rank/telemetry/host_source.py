"""The rank's host, through psutil and os: what every process used, what the rank's own process
tree used, and the load average, read at each window's two edges only.

The window's "other processes' CPU" is (host busy CPU seconds - the cell's own) / window
seconds, and CPU seconds telescope: the two edge readings give the exact mean over the window,
and ticks in between would add nothing but cost (listing the rank's descendants scans /proc).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

from torchscale.contracts.busy_machine import busy_cpu_seconds
from torchscale.contracts.host import usable_cores
from torchscale.contracts.schema.diagnosis import Reason
from torchscale.contracts.wording.cell_telemetry import said
from torchscale.rank.telemetry.samples import HOST_FIELDS, EdgeReading


def tree_cpu_seconds(process: Any, psutil: Any) -> float:
    """CPU seconds (user + system) of `process` and every live descendant, each with the
    children it has reaped: DataLoader workers and compile workers are the rank's own work.
    A process that ends between the two edges moves into its parent's reaped-children time, so
    the delta over a window stays whole."""
    gone = (psutil.NoSuchProcess, psutil.AccessDenied)
    total = 0.0
    try:
        family = [process, *process.children(recursive=True)]
    except gone:
        family = [process]
    for member in family:
        try:
            t = member.cpu_times()
        except gone:  # ended since it was listed: its parent has (or will have) its time
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


class HostSource:
    """A sampler source with no per-tick fields: `read_edge` at each window's start and stop.
    Opened and read in the sampler thread only."""

    fields: tuple[str, ...] = ()

    def __init__(self, pid: int | None = None) -> None:
        self.pid = os.getpid() if pid is None else pid
        self.unavailable: dict[str, Reason] = {}
        self.errors: dict[str, Reason] = {}
        self.cores: int | None = None
        self.usable_cores: int | None = None
        self._psutil: Any = None
        self._process: Any = None

    def open(self) -> None:
        self.usable_cores = usable_cores()
        try:
            psutil = importlib.import_module("psutil")
            self._process = psutil.Process(self.pid)
        except Exception as exc:  # ImportError, or the process is gone
            why = said("telemetry.psutil_unusable", error=f"{type(exc).__name__}: {exc}")
            self.unavailable.update({k: why for k in HOST_FIELDS if k != "load_avg_1m"})
        else:
            self._psutil = psutil
            self.cores = psutil.cpu_count(logical=True)
        if not hasattr(os, "getloadavg"):
            self.unavailable["load_avg_1m"] = said("telemetry.no_loadavg")

    def read(self, into: dict[str, float | None]) -> None:
        return None  # edges only

    def energy_mj(self) -> float | None:
        return None

    def read_edge(self, into: EdgeReading) -> None:
        if self._psutil is not None:
            self._read("busy_cpu_s", into, lambda: busy_cpu_seconds(self._psutil.cpu_times()))
            self._read("own_cpu_s", into, lambda: tree_cpu_seconds(self._process, self._psutil))
        if "load_avg_1m" not in self.unavailable:
            self._read("load_avg_1m", into, lambda: os.getloadavg()[0])

    def _read(self, name: str, into: EdgeReading, read: Callable[[], float]) -> None:
        try:
            into.values[name] = float(read())
        except Exception as exc:  # the rank's process gone, /proc unreadable: this edge only
            self.errors[name] = said("telemetry.read_failed", error=f"{type(exc).__name__}: {exc}")
            into.values[name] = None
