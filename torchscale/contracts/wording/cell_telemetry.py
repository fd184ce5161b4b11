"""Words for why a cell result's telemetry figure is null:
`telemetry.ranks[].unavailable` and their `load.unavailable` (`telemetry.*`, `amdsmi.*`), a GPU's
power limit (`power_limit.*`), NVML's reads (`nvml.*`), its averaged readings over short windows
and a host's load (`unavailable.nvml_*`, `unavailable.busy_windows_too_short`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import Phrases, reason_of, why
from torchscale.contracts.wording.cell_reasons import ranks_differ

# Why a rank's telemetry figure is null (`RankTelemetry.unavailable`, `RankLoad.unavailable`,
# rank/telemetry/): what its sources could not read (psutil, NVML, amdsmi, the host) and what
# its windows could not measure, as codes with their figures.


def _by_rank(f: Mapping[str, Any]) -> str:
    return "; ".join(f"rank {r['rank']}: {why(reason_of(r['reason']))}" for r in f["ranks"])


def said(code: str, **figures: Any) -> Finding:
    """A telemetry reason as its finding: `said('telemetry.no_sample')`."""
    assert code in PHRASES, code
    return Finding(code=code, figures=figures)


# Why a GPU's power limit is unknown (`PowerLimit.unavailable`, contracts/power_limit.py):
# the codes the readers store and their words.


def queries(f: Mapping[str, Any]) -> str:
    return "; ".join(f"{query}: {error}" for query, error in f["errors"].items())


def limit_why(stored: Any) -> str:
    """A finding's figure of why a limit is unknown (`power_limit.stored_reason`) in words."""
    return str(why(reason_of(stored))) if stored else "not read"


# Words for why a GPU's reading through NVML is missing (the burn's error counters in
# rank/programs/burn_in.py): the query that failed and NVML's error name.

F = Mapping[str, Any]

# Why NVML's averaged readings or its energy counter cannot describe a cell's windows: the
# rules are contracts/gpu_clocks.py's (`averaged_too_short`, `counter_too_coarse`, which give
# the figures), the words are here.

_AVERAGES = "NVML averages over ~1 s (power) and 1/6-1 s (utilisation)"

# Why a host's load figure is null (`HostLoad.unavailable`, rank/telemetry/window_figures.py
# `host_load`): the host's own reasons as codes with their figures. The reasons copied from its
# ranks' records are still their words (`RankLoad.unavailable`).


def _too_short(f: Mapping[str, Any]) -> str:
    window_s, tick_s = f["window_s"], f["tick_s"]
    return (
        f"not measurable: the measured windows last {window_s * 1e3:.3g} ms, where one "
        f"{tick_s * 1e3:.3g} ms tick of the kernel's CPU accounting reads as "
        f"{tick_s / window_s:.2g} core, more than lies between the other processes' "
        f"{f['other_cores']:.2g} and the busy threshold {f['threshold']:.2g}; run "
        "more steps to measure it"
    )


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
    "telemetry.sampler_failed": "sampler thread failed: {error}",
    "telemetry.psutil_unusable": "psutil unusable: {error}",
    "telemetry.psutil_failed": "psutil: {error}",
    "telemetry.read_failed": "{error}",
    "telemetry.queries_failed": queries,
    # query: error
    "telemetry.window_broken": "a window was not fully sampled: {failure:finding}",
    "telemetry.several": ranks_differ,
    "telemetry.by_rank": _by_rank,
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
    "amdsmi.load_failed": "amdsmi failed to load: {error}",
    "amdsmi.list_failed": "amdsmi could not list the GPUs: {error}",
    "amdsmi.no_gpu_at": "no amdsmi GPU at torch's PCI address {address}",
    "amdsmi.gpus_at": (
        "{count} amdsmi GPUs at PCI address {address} (a partitioned GPU?): which one is this "
        "rank's is unknown"
    ),
    "amdsmi.not_reported": "{query}: amdsmi reports {value} on this GPU",
    "unavailable.sampler_hung": (
        "the sampler thread did not stop within {stop_s:g} s; later windows not sampled"
    ),
    "unavailable.nvml_longest_window": (
        "not measurable: the longest window is {window_s:.3g} s, where "
        + _AVERAGES
        + "; a reading counts only {floor_s:g} s or more into a window"
    ),
    "unavailable.nvml_windows": (
        "not measurable: windows of {window_s:.3g} s in all, where "
        + _AVERAGES
        + "; at least {floor_s:g} s of windows is needed"
    ),
    "unavailable.energy_counter_coarse": (
        "not measurable: the energy counter moves in steps of up to ~{step_s:g} s, so over "
        "{windows} window(s) of {window_s:.3g} s in all it is uncertain by ~{error:share0} (kept "
        "at {max:share0} or less)"
    ),
    "unavailable.busy_windows_too_short": _too_short,
    "power_limit.queries_failed": queries,
    "power_limit.no_torch_uuid": "this torch reports no UUID for the GPU",
    "power_limit.nvml_unavailable": "NVML unavailable: {error}",
    "power_limit.no_gpu_with_uuid": "NVML has no GPU with UUID {uuid}",
    "power_limit.device_undescribed": "torch cannot describe {device}: {error}",
    "power_limit.no_pynvml": "pynvml is not importable ({error}); pip install nvidia-ml-py",
    "power_limit.nvml_init_failed": "nvmlInit failed: {error}",
    "power_limit.uuid_not_found": "no NVML device with torch's UUID ({tried:list;})",
    "nvml.cpu_no_counters": "a CPU has no NVML error counters",
    "nvml.no_uuid": lambda f: f"this torch reports no UUID for the {f.get('what', 'GPU')}",
    "nvml.unavailable": "NVML unavailable: {error}",
    "nvml.no_gpu_with_uuid": lambda f: f"NVML has no {f.get('what', 'GPU')} with UUID {f['uuid']}",
    "nvml.read_failed": "{error}",
    "nvml.xid_not_read": "Xid errors need NVML's event API or the kernel log: not read",
}
