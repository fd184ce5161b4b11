"""What a sampler records: per window, one column per field and one entry per sample.

Plain data (dataclasses of lists and floats), so a rank's record pickles cheaply and the
summary functions (window_figures.py) stay pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torchscale.contracts.power_limit import PowerLimit
from torchscale.contracts.schema.diagnosis import Reason

# the fields each source writes; a value is None where that sample could not read it
GPU_FIELDS = (
    "gpu_util_pct",
    "gpu_memory_used_bytes",
    "power_w",
    "temperature_c",
    "sm_clock_mhz",
    "clock_reasons",  # NVML clocks-event-reasons bit mask
)
PROCESS_FIELDS = ("cpu_s", "rss_bytes")  # cumulative CPU seconds (user + system), RSS
# read at each window's two edges only (host_source.py): the host's busy CPU seconds (every
# process), the rank's process tree's CPU seconds, the 1-minute load average
HOST_FIELDS = ("busy_cpu_s", "own_cpu_s", "load_avg_1m")
GPU_PROCESSES = "gpu_pids"  # the GPU's compute processes, read at the edges (nvml_source.py)
# read once when the source opens (nvml_source.py): what a clock verdict is judged against
SM_CLOCK_MAX = "sm_clock_max_mhz"


@dataclass
class EdgeReading:
    """What the edge sources read at one window edge (its start or its stop). Only deltas and
    levels at the edges are needed (CPU seconds telescope over a window), so these reads stay
    out of the sampling ticks."""

    t: float  # time.perf_counter() of the reading
    values: dict[str, float | None] = field(default_factory=dict)
    gpu_pids: list[int] | None = None  # None: not read


@dataclass
class WindowSamples:
    """One measured window's samples. `t` is time.perf_counter() of each sample; the first and
    last samples are taken at the sampler's start and stop, outside the window's edge work, so
    the samples span the window. `opened` and `closed` are the window's own edges (after its
    opening barrier, after its closing one): the samples between them are the window's."""

    t: list[float] = field(default_factory=list)
    values: dict[str, list[float | None]] = field(default_factory=dict)
    energy_start_mj: float | None = None  # NVML total-energy counter at start, millijoules
    energy_stop_mj: float | None = None
    energy_t: tuple[float, float] | None = None  # when the two counter reads happened
    complete: bool = False  # the thread stopped cleanly (else: what it had, and `failure`)
    failure: Reason | None = None
    edges: list[EdgeReading] = field(default_factory=list)  # at the start, then at the stop
    opened: float | None = None  # perf_counter() at the window's opening edge; None: not marked
    closed: float | None = None
    # the energy counter read by the main thread at the window's own edges (millijoules,
    # perf_counter()): Sampler.stop() makes them the window's counter reads when both answered
    open_energy: tuple[float | None, float] | None = None
    close_energy: tuple[float | None, float] | None = None

    def column(self, name: str) -> list[float | None]:
        return self.values.get(name, [None] * len(self.t))

    def inside(self) -> list[int]:
        """Indices of the samples taken between the window's edges (every sample when the
        edges were not marked: the sampler's start and stop are then the window's)."""
        if self.opened is None or self.closed is None:
            return list(range(len(self.t)))
        return [i for i, t in enumerate(self.t) if self.opened <= t <= self.closed]

    def inside_column(self, name: str) -> list[float | None]:
        column = self.column(name)
        return [column[i] for i in self.inside()]

    def settled_column(self, name: str, floor_s: float) -> list[float | None]:
        """The window's samples taken at least `floor_s` after it opened: a reading that is a
        trailing average over `floor_s` (NVML's power and utilisation) then covers the window
        alone, not its edge work or the window before it."""
        if not self.t:
            return []
        opened = self.opened if self.opened is not None else self.t[0]
        column = self.column(name)
        return [column[i] for i in self.inside() if self.t[i] >= opened + floor_s]

    @property
    def length_s(self) -> float:
        """Seconds from the opening edge to the closing one (the sample span when unmarked)."""
        if self.opened is not None and self.closed is not None:
            return max(0.0, self.closed - self.opened)
        return self.t[-1] - self.t[0] if len(self.t) >= 2 else 0.0


@dataclass
class SamplerReport:
    """Everything a rank's sampler knows after its last window, for summary.summarise_rank."""

    device: str  # "cuda:0" or "cpu"
    interval_s: float
    windows: list[WindowSamples]
    # field -> why it was never read (NotSupported, no GPU on CPU, no psutil, ...)
    unavailable: dict[str, Reason] = field(default_factory=dict)
    # field -> the last error of a query that failed only sometimes
    errors: dict[str, Reason] = field(default_factory=dict)
    gpu_name: str | None = None
    gpu_uuid: str | None = None
    pid: int | None = None  # the rank's process
    cores: int | None = None  # logical CPUs of the host
    usable_cores: int | None = None  # CPUs the rank may run on
    sm_clock_max_mhz: float | None = None  # the GPU's top SM clock; None: see unavailable
    power_limit: PowerLimit | None = None  # enforced and default limits; None: not a GPU
