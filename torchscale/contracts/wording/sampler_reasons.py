"""Why a rank's telemetry figure is null (`RankTelemetry.unavailable`, `RankLoad.unavailable`,
rank/telemetry/): what its sources could not read (psutil, NVML, amdsmi, the host) and what
its windows could not measure, as codes with their figures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording.power_limit_reasons import queries
from torchscale.contracts.wording.unavailable import ranks_differ, reason_of, why


def _by_rank(f: Mapping[str, Any]) -> str:
    return "; ".join(f"rank {r['rank']}: {why(reason_of(r['reason']))}" for r in f["ranks"])


PHRASES: Phrases = {
    # the words each figure-less code says
    "telemetry.cpu_no_gpu": "CPU cell: no GPU to sample (NVML reads NVIDIA GPUs only)",
    "telemetry.cpu_no_energy": (
        "CPU cell: energy comes from the GPU's NVML counter or power samples; CPU package energy "
        "(RAPL) is not sampled"
    ),
    "telemetry.no_pci_address": (
        "this torch reports no PCI address for the device: amdsmi cannot find it"
    ),
    "telemetry.no_torch_uuid": (
        "this torch reports no UUID for the device: its NVML handle cannot be found"
    ),
    "telemetry.no_loadavg": "os.getloadavg is not available on this platform",
    "telemetry.max_clock_zero": "nvmlDeviceGetMaxClockInfo: answered 0",
    "telemetry.max_clock_unread": "not read by this GPU's telemetry source",
    "telemetry.no_sample": "no sample of it in the measured windows",
    "telemetry.no_host": "no host readings",
    "telemetry.not_measured": "not measured",
    "telemetry.no_window": "no window was sampled",
    "telemetry.no_edge_reading": "no edge reading",
    "telemetry.no_window_length": "its windows have no length",
    "telemetry.namespace_pids": (
        "NVML lists PIDs of another PID namespace (a container without the host's PID namespace: "
        "a rank's own PID is not among its GPU's processes): counted, not named"
    ),
    "telemetry.no_energy_source": (
        "neither the energy counter nor two power samples in every window"
    ),
    "amdsmi.not_installed": (
        "amdsmi not installed: AMD GPU telemetry reads the amdsmi Python package of the node's "
        "ROCm (pip install the amdsmi matching it)"
    ),
    "amdsmi.no_clock_reasons": (
        "NVML clocks-event reasons: amdsmi has no such mask (not read on AMD GPUs)"
    ),
    "amdsmi.no_process_list": "the GPU's process list is not read on AMD GPUs",
    "amdsmi.no_energy_counter": (
        "amdsmi's energy counter is not read (its fields differ across amdsmi versions): energy "
        "integrates the power samples"
    ),
    "unavailable.sampler_hung": (
        "the sampler thread did not stop within {stop_s:g} s; later windows not sampled"
    ),
    "telemetry.sampler_failed": "sampler thread failed: {error}",
    "telemetry.psutil_unusable": "psutil unusable: {error}",
    "telemetry.psutil_failed": "psutil: {error}",
    "telemetry.read_failed": "{error}",
    "telemetry.queries_failed": queries,  # query: error
    "telemetry.window_broken": "a window was not fully sampled: {failure:finding}",
    "telemetry.several": ranks_differ,
    "telemetry.by_rank": _by_rank,
    "amdsmi.load_failed": "amdsmi failed to load: {error}",
    "amdsmi.list_failed": "amdsmi could not list the GPUs: {error}",
    "amdsmi.no_gpu_at": "no amdsmi GPU at torch's PCI address {address}",
    "amdsmi.gpus_at": (
        "{count} amdsmi GPUs at PCI address {address} (a partitioned GPU?): which one is this "
        "rank's is unknown"
    ),
    "amdsmi.not_reported": "{query}: amdsmi reports {value} on this GPU",
}


def said(code: str, **figures: Any) -> Finding:
    """A telemetry reason as its finding: `said('telemetry.no_sample')`."""
    assert code in PHRASES, code
    return Finding(code=code, figures=figures)
