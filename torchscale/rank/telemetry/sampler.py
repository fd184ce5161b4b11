"""The sampler thread: started right before a measured window, stopped right after it.

The training loop never waits for it: between start() and stop() the main thread takes no lock
the sampler holds and makes no NVML or psutil call; NVML's ctypes calls release the GIL while
the driver answers. start() returns once the window's first sample (and energy counter read, and
the edge sources' reads) is taken, so the samples span the window; stop() takes the last ones
and joins the thread. Both happen outside the timed steps (before the window's opening barrier,
after its closing one); mark_window() records the window's own edges, between which the samples
are the window's (window_figures.py counts those).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from torchscale.contracts.schema.diagnosis import Reason
from torchscale.contracts.wording.cell_telemetry import said
from torchscale.rank.telemetry.samples import EdgeReading, SamplerReport, WindowSamples

# the first start() opens the sources (nvmlInit can take a while on a node without
# persistence mode); a thread that does not stop within this is abandoned, its window marked
OPEN_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
SOURCE_FACTS = ("name", "uuid", "sm_clock_max_mhz", "power_limit")
HOST_FACTS = ("pid", "cores", "usable_cores")


class Source(Protocol):
    """Something sampled: opened, read and asked for energy in the sampler thread only."""

    unavailable: dict[str, Reason]  # field -> why it is never read
    errors: dict[str, Reason]  # field -> the last error of a query that failed only sometimes

    @property
    def fields(self) -> tuple[str, ...]: ...

    def open(self) -> None: ...

    def read(self, into: dict[str, float | None]) -> None: ...

    def energy_mj(self) -> float | None: ...


@runtime_checkable
class EdgeSource(Protocol):
    """A source that also reads at each window's two edges only (the host's CPU, the GPU's
    processes): what a window's mean needs from the edges alone stays out of the ticks."""

    def read_edge(self, into: EdgeReading) -> None: ...


class Sampler:
    """Samples `sources` every `interval_s` seconds during each window (start() .. stop())."""

    def __init__(
        self,
        sources: Sequence[Source],
        interval_s: float,
        device: str,
        unavailable: Mapping[str, Reason] | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"sampling interval must be positive (got {interval_s})")
        self.sources = list(sources)
        self.interval_s = interval_s
        self.device = device
        self.windows: list[WindowSamples] = []
        self._fixed_unavailable = dict(unavailable or {})  # e.g. GPU fields on a CPU cell
        self._fields = tuple(f for s in self.sources for f in s.fields)
        self._edge_sources = [s for s in self.sources if isinstance(s, EdgeSource)]
        self._opened = False
        self._thread: threading.Thread | None = None
        self._record: WindowSamples | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._abandoned: Reason | None = None  # a thread that did not stop: sample no more

    @property
    def running(self) -> bool:
        """A window is being sampled (started, not yet stopped)."""
        return self._record is not None

    def start(self) -> None:
        """Start sampling a window; returns after its first sample."""
        if self._record is not None:
            raise RuntimeError("the sampler is already running")
        if self._abandoned is not None:  # its sources may still be in use by that thread
            self._record = WindowSamples(failure=self._abandoned)
            return
        self._stop.clear()
        self._ready.clear()
        self._record = WindowSamples(values={name: [] for name in self._fields})
        self._thread = threading.Thread(
            target=self._run, args=(self._record,), name="torchscale-telemetry", daemon=True
        )
        self._thread.start()
        self._ready.wait(OPEN_TIMEOUT_S if not self._opened else STOP_TIMEOUT_S)

    def stop(self) -> WindowSamples:
        """Take the window's last sample, join the thread and keep the window's record."""
        thread, record = self._thread, self._record
        if record is None:
            raise RuntimeError("the sampler is not running")
        if thread is not None:
            self._stop.set()
            thread.join(STOP_TIMEOUT_S)
            if thread.is_alive():  # a hung query: abandon the daemon thread, say so
                self._abandoned = said("unavailable.sampler_hung", stop_s=STOP_TIMEOUT_S)
                record = WindowSamples(failure=self._abandoned)
        opened, closed = record.open_energy, record.close_energy
        if opened is not None and closed is not None and None not in (opened[0], closed[0]):
            record.energy_start_mj, record.energy_stop_mj = opened[0], closed[0]
            record.energy_t = (opened[1], closed[1])
        self.windows.append(record)
        self._thread = self._record = None
        return record

    def mark_open(self) -> None:
        """The running window's clocks are about to start: read the energy counter here, from
        the main thread (NVML is thread-safe), so that the window's joules leave out its edge
        work (the untimed step, synchronize, barrier) that the sampler's own reads span."""
        if self._record is not None and self._abandoned is None:
            self._record.open_energy = (self._energy(), time.perf_counter())

    def mark_window(self, opened: float, closed: float) -> None:
        """The running window's own edges (perf_counter() after its opening barrier and after
        its closing one): only samples between them count towards its figures, and the energy
        counter is read again here (see mark_open). Plain assignments from the main thread:
        the sampler thread never reads these."""
        if self._record is not None:
            self._record.opened, self._record.closed = opened, closed
            if self._abandoned is None and self._record.open_energy is not None:
                self._record.close_energy = (self._energy(), time.perf_counter())

    def report(self) -> SamplerReport:
        """The windows sampled so far and why fields are missing (call when stopped)."""
        unavailable = dict(self._fixed_unavailable)
        errors: dict[str, Reason] = {}
        # the first source that knows it; only the host source knows its process and host
        found: dict[str, Any] = {}
        for source in self.sources:
            unavailable.update(source.unavailable)
            errors.update(source.errors)
            edge = isinstance(source, EdgeSource)
            for attr in (*SOURCE_FACTS, *(HOST_FACTS if edge else ())):
                found[attr] = found.get(attr) or getattr(source, attr, None)
        return SamplerReport(
            device=self.device,
            interval_s=self.interval_s,
            windows=list(self.windows),
            unavailable=unavailable,
            errors=errors,
            **{f"gpu_{k}" if k in ("name", "uuid") else k: v for k, v in found.items()},
        )

    # -- the thread ----------------------------------------------------------------------------

    def _energy(self) -> float | None:
        return next((mj for s in self.sources if (mj := s.energy_mj()) is not None), None)

    def _edge(self, record: WindowSamples) -> None:
        reading = EdgeReading(t=time.perf_counter())
        for source in self._edge_sources:
            source.read_edge(reading)
        record.edges.append(reading)

    def _take(self, record: WindowSamples) -> None:
        row: dict[str, float | None] = {}
        now = time.perf_counter()
        for source in self.sources:
            source.read(row)
        record.t.append(now)
        for name, column in record.values.items():
            column.append(row.get(name))

    def _run(self, record: WindowSamples) -> None:
        try:
            if not self._opened:
                for source in self.sources:
                    source.open()
                self._opened = True
            started = time.perf_counter()
            record.energy_start_mj = self._energy()
            self._edge(record)
            self._take(record)
            self._ready.set()
            deadline = record.t[0] + self.interval_s
            while not self._stop.wait(max(0.0, deadline - time.perf_counter())):
                self._take(record)
                now = time.perf_counter()
                deadline += self.interval_s
                if deadline < now:  # a slow query: skip the missed ticks, never burst
                    deadline = now + self.interval_s
            self._take(record)
            self._edge(record)
            record.energy_stop_mj = self._energy()
            record.energy_t = (started, time.perf_counter())
            record.complete = True
        except Exception as exc:  # never let telemetry take the rank down
            record.failure = said("telemetry.sampler_failed", error=f"{type(exc).__name__}: {exc}")
        finally:
            self._ready.set()
