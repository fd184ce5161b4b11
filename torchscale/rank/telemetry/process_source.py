"""The rank's own process, through psutil: CPU time and resident set.

CPU time is read as cumulative user + system seconds of every thread of this process (so the
utilisation over an interval is exact up to the kernel's 10 ms tick, not psutil's own
cpu_percent bookkeeping); child processes (DataLoader workers) are not included.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from torchscale.contracts.schema.diagnosis import Reason
from torchscale.contracts.wording.cell_telemetry import said
from torchscale.rank.telemetry.samples import PROCESS_FIELDS


class ProcessSource:
    """Reads `cpu_s` and `rss_bytes`; opened and read in the sampler thread only."""

    fields = PROCESS_FIELDS

    def __init__(self, pid: int | None = None) -> None:
        self.pid = os.getpid() if pid is None else pid
        self.unavailable: dict[str, Reason] = {}
        self.errors: dict[str, Reason] = {}
        self._process: Any = None

    def open(self) -> None:
        try:
            psutil = importlib.import_module("psutil")
            self._process = psutil.Process(self.pid)
        except Exception as exc:  # ImportError, or the process is gone
            why = said("telemetry.psutil_unusable", error=f"{type(exc).__name__}: {exc}")
            self.unavailable.update(dict.fromkeys(self.fields, why))

    def read(self, into: dict[str, float | None]) -> None:
        if self._process is None:
            return
        try:
            with self._process.oneshot():
                times = self._process.cpu_times()
                into["cpu_s"] = float(times.user + times.system)
                into["rss_bytes"] = float(self._process.memory_info().rss)
        except Exception as exc:
            why = said("telemetry.psutil_failed", error=f"{type(exc).__name__}: {exc}")
            self.errors.update(dict.fromkeys(self.fields, why))

    def energy_mj(self) -> float | None:
        return None  # no energy counter for a process
