"""Words for validate's CUDA and GPU inventory checks (orchestration/validate/checks_gpu.py):
torch's CUDA, the GPUs NVML (or torch) lists, the driver, the runtime against the driver."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording.spell import gib

F = Mapping[str, Any]


def _describe(gpu: Mapping[str, Any]) -> str:
    memory = gpu.get("memory_total_bytes")
    size = gib(memory) if memory else "? GiB"
    return f"{gpu['index']}: {gpu['name']} {size} sm_{gpu.get('compute_capability', '?')}"


def _compat(f: F) -> str:
    text = f"torch built with CUDA {f['runtime']}; driver supports up to {f['driver']}"
    return text + (" (minor-version compatibility mode)" if f["verdict"] == "minor" else "")


PHRASES: Phrases = {
    "cuda.fix_install_torch": "install PyTorch with CUDA support",
    "cuda.cpu_only_build": "torch {torch} is a CPU-only build",
    "cuda.fix_cpu_only_build": (
        "install a CUDA build of PyTorch; on a machine without GPUs use --device cpu"
    ),
    "cuda.raised": "torch.cuda raised {error}",
    "cuda.fix_raised": "check the NVIDIA driver (nvidia-smi) and CUDA_VISIBLE_DEVICES",
    "cuda.no_device": "{build} build, but no CUDA device is usable",
    "cuda.fix_no_device": (
        "check that the NVIDIA driver is loaded (nvidia-smi), that CUDA_VISIBLE_DEVICES does not "
        "hide the GPUs, and that the container was started with GPU access"
    ),
    "cuda.devices": "{count} device(s) usable by torch ({build})",
    "gpus.none_found": "no GPU found ({why})",
    "gpus.fix_none_found": "install the NVIDIA driver and check `nvidia-smi` lists the GPUs",
    "gpus.unreadable": lambda f: (
        "NVML cannot read GPU " + "; ".join(f"{i} ({why})" for i, why in f["gpus"])
    ),
    "gpus.fix_unreadable": (
        "the GPU may have fallen off the bus: check `nvidia-smi` and dmesg (Xid errors), reset "
        "or reboot"
    ),
    "gpus.listed": lambda f: (
        f"{len(f['gpus'])} GPU(s) via {f['source']}: " + "; ".join(map(_describe, f["gpus"]))
    ),
    "gpus.fix_mixed": "mixed GPU models: the slowest one sets the pace of every DDP step",
    "driver.no_nvml": "NVML unavailable: {error}",
    "driver.fix_no_nvml": "install/load the NVIDIA driver; `nvidia-smi` must work on the node",
    "driver.version": lambda f: (
        f"driver {f['driver_version']}"
        + (f", supports CUDA up to {f['cuda']}" if f.get("cuda") else "")
    ),
    "cuda.no_runtime": "torch has no CUDA runtime (not a CUDA build)",
    "cuda.driver_cuda_unknown": "driver's CUDA version unknown ({error})",
    "cuda.compat": _compat,
    "cuda.fix_driver_too_old": (
        "upgrade the driver to one supporting CUDA {runtime}, or install a PyTorch build for "
        "CUDA {driver_major}.x"
    ),
    "cuda.fix_minor_compat": (
        "works for most kernels; upgrade the driver for PTX JIT and newest features"
    ),
}
