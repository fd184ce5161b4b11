"""Why a rank's telemetry figure is null (`RankTelemetry.unavailable`, `RankLoad.unavailable`,
rank/telemetry/): what its sources could not read (psutil, NVML, amdsmi, the host) and what
its windows could not measure, as codes with their figures."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.power_limit_reasons import PHRASES as LIMIT_PHRASES
from torchscale.contracts.wording.unavailable import ranks_differ, reason_of, said_alike, why

# the words each figure-less code says
SAID: dict[str, str] = {
    "telemetry.cpu_no_gpu": "CPU cell: no GPU to sample (NVML reads NVIDIA GPUs only)",
    "telemetry.cpu_no_energy": "CPU cell: energy comes from the GPU's NVML counter or power "
    "samples; CPU package energy (RAPL) is not sampled",
    "telemetry.no_pci_address": "this torch reports no PCI address for the device: amdsmi "
    "cannot find it",
    "telemetry.no_torch_uuid": "this torch reports no UUID for the device: its NVML handle "
    "cannot be found",
    "telemetry.no_loadavg": "os.getloadavg is not available on this platform",
    "telemetry.max_clock_zero": "nvmlDeviceGetMaxClockInfo: answered 0",
    "telemetry.max_clock_unread": "not read by this GPU's telemetry source",
    "telemetry.no_sample": "no sample of it in the measured windows",
    "telemetry.no_host": "no host readings",
    "telemetry.not_measured": "not measured",
    "telemetry.no_window": "no window was sampled",
    "telemetry.no_edge_reading": "no edge reading",
    "telemetry.no_window_length": "its windows have no length",
    "telemetry.namespace_pids": "NVML lists PIDs of another PID namespace (a container without "
    "the host's PID namespace: a rank's own PID is not among its GPU's processes): counted, not "
    "named",
    "telemetry.no_energy_source": "neither the energy counter nor two power samples in every "
    "window",
    "amdsmi.not_installed": "amdsmi not installed: AMD GPU telemetry reads the amdsmi Python "
    "package of the node's ROCm (pip install the amdsmi matching it)",
    "amdsmi.no_clock_reasons": "NVML clocks-event reasons: amdsmi has no such mask (not read on "
    "AMD GPUs)",
    "amdsmi.no_process_list": "the GPU's process list is not read on AMD GPUs",
    "amdsmi.no_energy_counter": "amdsmi's energy counter is not read (its fields differ across "
    "amdsmi versions): energy integrates the power samples",
}


def _by_rank(f: Mapping[str, Any]) -> str:
    return "; ".join(f"rank {r['rank']}: {why(reason_of(r['reason']))}" for r in f["ranks"])


PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = said_alike(SAID) | {
    "unavailable.sampler_hung": lambda f: (
        f"the sampler thread did not stop within {f['stop_s']:g} s; later windows not sampled"
    ),
    "telemetry.sampler_failed": lambda f: f"sampler thread failed: {f['error']}",
    "telemetry.psutil_unusable": lambda f: f"psutil unusable: {f['error']}",
    "telemetry.psutil_failed": lambda f: f"psutil: {f['error']}",
    "telemetry.read_failed": lambda f: f["error"],
    "telemetry.queries_failed": LIMIT_PHRASES["power_limit.queries_failed"],  # query: error
    "telemetry.window_broken": lambda f: (
        f"a window was not fully sampled: {why(reason_of(f['failure']))}"
    ),
    "telemetry.several": ranks_differ,
    "telemetry.by_rank": _by_rank,
    "amdsmi.load_failed": lambda f: f"amdsmi failed to load: {f['error']}",
    "amdsmi.list_failed": lambda f: f"amdsmi could not list the GPUs: {f['error']}",
    "amdsmi.no_gpu_at": lambda f: f"no amdsmi GPU at torch's PCI address {f['address']}",
    "amdsmi.gpus_at": lambda f: (
        f"{f['count']} amdsmi GPUs at PCI address {f['address']} (a partitioned GPU?): which "
        "one is this rank's is unknown"
    ),
    "amdsmi.not_reported": lambda f: f"{f['query']}: amdsmi reports {f['value']} on this GPU",
}


def said(code: str, **figures: Any) -> Finding:
    """A telemetry reason as its finding: `said('telemetry.no_sample')`."""
    assert code in PHRASES, code
    return Finding(code=code, figures=figures)
