"""Which sources sample a rank: its own GPU by UUID through NVML plus its process through psutil
on CUDA; its process only on CPU, where the GPU fields are null with the reason. Both read the
host's CPU and load at each window's edges (what else ran on the machine)."""

from __future__ import annotations

import torch

from torchscale.cell_settings import TelemetryConfig
from torchscale.telemetry.host_source import HostSource
from torchscale.telemetry.nvml_source import ENERGY, NvmlSource
from torchscale.telemetry.process_source import ProcessSource
from torchscale.telemetry.sampler import Sampler, Source
from torchscale.telemetry.samples import GPU_FIELDS, GPU_PROCESSES

CPU_NO_GPU = "CPU cell: no GPU to sample (NVML reads NVIDIA GPUs only)"
CPU_NO_ENERGY = (
    "CPU cell: energy comes from the GPU's NVML counter or power samples; CPU package energy "
    "(RAPL) is not sampled"
)


def torch_uuid(device: torch.device) -> str | None:
    """The UUID torch reports for a CUDA device (the same GPU whatever CUDA_VISIBLE_DEVICES
    did to its index), or None where this torch has none."""
    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    return str(uuid) if uuid is not None else None


def rank_sampler(config: TelemetryConfig, device: torch.device) -> Sampler | None:
    """The rank's sampler, or None when `measurement.telemetry.enabled` is false. Built in the
    main thread (the torch query); its sources open in the sampler thread."""
    if not config.enabled:
        return None
    interval_s = config.interval_ms / 1000.0
    process: list[Source] = [ProcessSource(), HostSource()]
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        label = f"cuda:{index}"
        uuid = torch_uuid(device)
        if uuid is None:
            why = "this torch reports no UUID for the device: its NVML handle cannot be found"
            unavailable = {**dict.fromkeys((*GPU_FIELDS, GPU_PROCESSES), why), ENERGY: why}
            return Sampler(process, interval_s, label, unavailable)
        return Sampler([NvmlSource(uuid), *process], interval_s, label)
    unavailable = {
        **dict.fromkeys((*GPU_FIELDS, GPU_PROCESSES), CPU_NO_GPU),
        ENERGY: CPU_NO_ENERGY,
    }
    return Sampler(process, interval_s, "cpu", unavailable)
