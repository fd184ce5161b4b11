"""Which sources sample a rank: its own GPU plus its process through psutil on a GPU (NVIDIA:
NVML, by UUID; AMD under ROCm's torch: amdsmi, by PCI address); its process only on CPU, where
the GPU fields are null with the reason. Both read the host's CPU and load at each window's
edges (what else ran on the machine)."""

from __future__ import annotations

import torch

from torchscale.contracts.cell_settings import TelemetryConfig
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.cell_telemetry import said
from torchscale.rank.telemetry.amdsmi_source import AmdSmiSource, pci_address
from torchscale.rank.telemetry.host_source import HostSource
from torchscale.rank.telemetry.nvml_source import ENERGY, NvmlSource
from torchscale.rank.telemetry.process_source import ProcessSource
from torchscale.rank.telemetry.sampler import Sampler, Source
from torchscale.rank.telemetry.samples import GPU_FIELDS, GPU_PROCESSES


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
        gpu = _gpu_source(device)
        if isinstance(gpu, Finding):
            unavailable = {**dict.fromkeys((*GPU_FIELDS, GPU_PROCESSES), gpu), ENERGY: gpu}
            return Sampler(process, interval_s, label, unavailable)
        return Sampler([gpu, *process], interval_s, label)
    no_gpu = said("telemetry.cpu_no_gpu")
    unavailable = dict.fromkeys((*GPU_FIELDS, GPU_PROCESSES), no_gpu)
    unavailable[ENERGY] = said("telemetry.cpu_no_energy")
    return Sampler(process, interval_s, "cpu", unavailable)


def _gpu_source(device: torch.device) -> Source | Finding:
    """The source for the rank's GPU: amdsmi under ROCm's torch, NVML otherwise; or why the
    GPU cannot be found."""
    if getattr(torch.version, "hip", None):
        address = pci_address(torch.cuda.get_device_properties(device))
        if address is None:
            return said("telemetry.no_pci_address")
        return AmdSmiSource(address)
    uuid = torch_uuid(device)
    if uuid is None:
        return said("telemetry.no_torch_uuid")
    return NvmlSource(uuid)
