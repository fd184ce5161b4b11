"""What a cell's samplers saw during its measured windows (docs/telemetry.md): each rank's GPU
and process figures, its host's load, and the cell's totals, the `telemetry` of a cell result
(cell_result.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from torchscale.contracts.finding import Finding
from torchscale.contracts.gpu_clocks import ClockVerdict
from torchscale.contracts.power_limit import PowerLimit
from torchscale.contracts.versioned import Record


class FieldStats(Record):
    """Mean and maximum of one sampled quantity over a rank's samples in the measured windows."""

    mean: float
    max: float


EnergyMethod = Literal["counter", "power_integral"]
# power_w: the energy counter's joules over its seconds, or the mean of NVML's power samples
PowerMethod = Literal["counter", "samples"]


class RankLoad(Record):
    """What one rank's sampler read of its host at each measured window's start and stop, and
    of its GPU's compute processes: the inputs of the cell's `HostLoad` (docs/telemetry.md)."""

    pid: int | None = Field(description="the rank's process id")
    cores: int | None = Field(description="logical CPUs of the host (psutil.cpu_count())")
    usable_cores: int | None = Field(description="CPUs the rank may run on (its affinity)")
    window_s: float = Field(description="seconds from each window's start edge to its stop edge")
    busy_cpu_s: float | None = Field(
        description="CPU seconds all processes of the host used in the windows (psutil.cpu_times "
        "deltas: everything but idle and iowait)"
    )
    own_cpu_s: float | None = Field(
        description="CPU seconds the rank's process and its child processes used in the windows"
    )
    load_avg_1m: list[float] = Field(
        default_factory=list, description="os.getloadavg()[0] at each window's start and stop"
    )
    gpu_pids: list[int] | None = Field(
        default=None,
        description="compute processes NVML listed on the rank's GPU at the window edges, its "
        "own included; null: not read",
    )
    gpu_processes_max: int | None = Field(
        default=None, description="the most compute processes listed on the GPU at one edge"
    )
    unavailable: dict[str, Finding] = Field(
        default_factory=dict,
        description="field -> why null: a code and its figures (contracts/wording/"
        "cell_telemetry.py)",
    )


class RankTelemetry(Record):
    """What one rank's sampler saw during the measured windows (docs/telemetry.md). A null
    field has its reason in `unavailable` under the field's name."""

    rank: int
    host: str
    device: str = Field(description="cuda:<index> or cpu")
    gpu_name: str | None = None
    gpu_uuid: str | None = Field(default=None, description="the NVML UUID sampled")
    samples: int = Field(description="samples taken, window edges included")
    sampled_s: float = Field(description="seconds covered by sampling, all windows")
    window_s: float | None = Field(
        default=None,
        description="seconds from each window's opening edge to its closing edge, all windows: "
        "what utilisation, power and clocks describe; null: not recorded",
    )
    window_samples: int | None = Field(
        default=None,
        description="samples taken between a window's opening and closing edges: the only ones "
        "utilisation, power, SM clock and clocks-event reasons count; null: not recorded",
    )
    gpu_util_pct: FieldStats | None = Field(
        description="NVML utilisation: % of time a kernel ran, over the driver's sample period "
        "(1/6-1 s); null under 1 s of windows"
    )
    gpu_memory_used_bytes: FieldStats | None = Field(
        description="NVML device memory used (all processes on the GPU)"
    )
    power_w: FieldStats | None = Field(
        description="GPU power, watts: mean by `power_method`, max the highest NVML reading (at "
        "least the mean)"
    )
    power_method: PowerMethod | None = Field(
        default=None,
        description="counter: energy-counter joules / the counter's seconds; samples: mean of "
        "nvmlDeviceGetPowerUsage (a ~1 s average) over at least 1 s of windows",
    )
    temperature_c: FieldStats | None = Field(description="GPU core temperature, Celsius")
    sm_clock_mhz: FieldStats | None = Field(description="SM clock, MHz")
    sm_clock_max_mhz: float | None = Field(
        default=None, description="the GPU's top SM clock (nvmlDeviceGetMaxClockInfo)"
    )
    power_limit: PowerLimit | None = Field(
        default=None, description="the enforced and default power limits (a site cap: below)"
    )
    cpu_util_pct: FieldStats | None = Field(
        description="this rank's process: CPU seconds / wall seconds x 100 (100 = one core)"
    )
    rss_bytes: FieldStats | None = Field(description="this rank's process resident set")
    energy_j: float | None = Field(description="GPU energy over the sampled windows, joules")
    energy_method: EnergyMethod | None = Field(
        description="counter: nvmlDeviceGetTotalEnergyConsumption at each window's start and "
        "stop; power_integral: trapezoid integral of the power samples"
    )
    clock_event_reasons: list[str] = Field(
        default_factory=list,
        description="clocks-event reasons seen in any sample (GpuIdle, "
        "ApplicationsClocksSetting left out)",
    )
    throttle_reasons: list[str] = Field(
        default_factory=list,
        description="the reasons a throttled verdict rests on (empty unless throttled)",
    )
    throttled_fraction: float | None = Field(
        description="share of in-window samples with a slowdown reason (SwPowerCap included) set"
    )
    clock_verdict: ClockVerdict | None = Field(
        default=None,
        description="throttled (a hardware/thermal slowdown, or SwPowerCap under a site cap, "
        "or with the clocks below 90 % of the top while drawing well under the limit), "
        "at_power_limit, full_clocks or not_judged; null: no clocks-event reasons read",
    )
    clock_finding: Finding | None = Field(
        default=None,
        description="what the verdict rests on, as a code and its figures (docs/results.md, "
        "'Finding codes')",
    )
    unavailable: dict[str, Finding] = Field(
        default_factory=dict,
        description="field -> why null: a code and its figures (contracts/wording/"
        "cell_telemetry.py)",
    )
    load: RankLoad | None = Field(
        default=None, description="the host's CPU and the GPU's processes at the window edges"
    )


class Telemetry(Record):
    """Telemetry of every rank and the cell's totals (docs/telemetry.md). A null total has its
    reason in the result's `unavailable` under `telemetry.<field>`."""

    source: str = Field(description="what was sampled: nvml+psutil on CUDA, psutil on CPU")
    interval_ms: int
    windows: int = Field(description="measured windows sampled (no_sync window excluded)")
    ranks: list[RankTelemetry]
    gpu_util_pct_mean: float | None = Field(description="mean over GPUs of their mean")
    power_w_mean: float | None = Field(description="mean over GPUs of their mean power")
    power_method: PowerMethod | Literal["mixed"] | None = None
    temperature_c_max: float | None = Field(description="hottest sample of any GPU")
    sm_clock_mhz_mean: float | None = Field(description="mean over GPUs of their mean")
    cpu_util_pct_mean: float | None = Field(description="mean over ranks of their mean")
    energy_j: float | None = Field(description="sum over GPUs, all sampled windows")
    energy_method: EnergyMethod | Literal["mixed"] | None = None
    samples_per_joule: float | None = Field(
        description="samples processed by all ranks in the windows / energy_j"
    )
    tokens_per_joule: float | None = Field(description="language models only")
    throttled: bool | None = Field(
        description="a GPU's clock verdict is throttled; false: every GPU judged otherwise; null: "
        "not judged"
    )
    throttle_reasons: list[str] = Field(default_factory=list)
    clock_verdict: ClockVerdict | None = Field(
        default=None, description="the worst GPU's verdict (throttled first)"
    )
    hosts: list[HostLoad] | None = Field(
        default=None,
        description="what else ran on each of the cell's hosts during the windows; null: not "
        "sampled (the reason in the result's unavailable['telemetry.hosts'])",
    )


class HostLoad(Record):
    """What else ran on one host during the cell's measured windows (docs/telemetry.md): the CPU
    of all its processes less the cell's ranks' own, the load average, and compute processes on
    the cell's GPUs that are not its ranks. A null figure has its reason in `unavailable`."""

    host: str
    ranks: list[int] = Field(description="the cell's ranks on this host")
    cores: int | None = Field(description="logical CPUs of the host")
    busy_cores: float | None = Field(
        description="all processes: busy CPU seconds / window seconds, mean over the ranks here"
    )
    cell_cores: float | None = Field(
        description="the cell's ranks here and their child processes: sum over the ranks of "
        "their CPU seconds / window seconds"
    )
    other_cores: float | None = Field(
        description="busy_cores - cell_cores, at least 0: other processes, the kernel and "
        "hypervisor steal"
    )
    load_avg_1m: FieldStats | None = Field(
        description="1-minute load average at the window edges of every rank here"
    )
    other_gpu_processes: int | None = Field(
        description="compute processes on the cell's GPUs here that are not its ranks"
    )
    other_gpu_pids: list[int] = Field(
        default_factory=list,
        description="their PIDs; empty when NVML's PIDs belong to another PID namespace",
    )
    busy: bool | None = Field(
        description="other_cores reached the busy threshold (contracts/busy_machine.py: the "
        "free cores less one per rank, plus a tenth of cell_cores); null: the CPU figures are "
        "missing, or within one tick of the kernel's CPU accounting of the threshold"
    )
    finding: Finding | None = Field(
        default=None,
        description="the busy verdict as a code (busy.contended, busy.quiet, busy.unresolved) "
        "and its figures: other, cell, machine and free cores, the threshold; null: not judged",
    )
    unavailable: dict[str, Finding] = Field(
        default_factory=dict,
        description="field -> why null: a code and its figures (contracts/wording/"
        "cell_telemetry.py)",
    )
