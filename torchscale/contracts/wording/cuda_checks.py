"""Words for validate's CUDA and GPU inventory checks (orchestration/validate/checks_gpu.py):
torch's CUDA, the GPUs NVML (or torch) lists, the driver, the runtime against the driver."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.wording.spell import gib

F = Mapping[str, Any]


def _describe(gpu: Mapping[str, Any]) -> str:
    memory = gpu.get("memory_total_bytes")
    size = gib(memory) if memory else "? GiB"
    return f"{gpu['index']}: {gpu['name']} {size} sm_{gpu.get('compute_capability', '?')}"


def _compat(f: F) -> str:
    text = f"torch built with CUDA {f['runtime']}; driver supports up to {f['driver']}"
    return text + (" (minor-version compatibility mode)" if f["verdict"] == "minor" else "")


PHRASES: dict[str, Callable[[F], str]] = {
    "cuda.fix_install_torch": lambda f: "install PyTorch with CUDA support",
    "cuda.cpu_only_build": lambda f: f"torch {f['torch']} is a CPU-only build",
    "cuda.fix_cpu_only_build": lambda f: (
        "install a CUDA build of PyTorch; on a machine without GPUs use --device cpu"
    ),
    "cuda.raised": lambda f: f"torch.cuda raised {f['error']}",
    "cuda.fix_raised": lambda f: "check the NVIDIA driver (nvidia-smi) and CUDA_VISIBLE_DEVICES",
    "cuda.no_device": lambda f: f"{f['build']} build, but no CUDA device is usable",
    "cuda.fix_no_device": lambda f: (
        "check that the NVIDIA driver is loaded (nvidia-smi), that CUDA_VISIBLE_DEVICES "
        "does not hide the GPUs, and that the container was started with GPU access"
    ),
    "cuda.devices": lambda f: f"{f['count']} device(s) usable by torch ({f['build']})",
    "gpus.none_found": lambda f: f"no GPU found ({f['why']})",
    "gpus.fix_none_found": lambda f: (
        "install the NVIDIA driver and check `nvidia-smi` lists the GPUs"
    ),
    "gpus.unreadable": lambda f: (
        "NVML cannot read GPU " + "; ".join(f"{i} ({why})" for i, why in f["gpus"])
    ),
    "gpus.fix_unreadable": lambda f: (
        "the GPU may have fallen off the bus: check `nvidia-smi` and dmesg (Xid errors), "
        "reset or reboot"
    ),
    "gpus.listed": lambda f: (
        f"{len(f['gpus'])} GPU(s) via {f['source']}: " + "; ".join(map(_describe, f["gpus"]))
    ),
    "gpus.fix_mixed": lambda f: "mixed GPU models: the slowest one sets the pace of every DDP step",
    "driver.no_nvml": lambda f: f"NVML unavailable: {f['error']}",
    "driver.fix_no_nvml": lambda f: (
        "install/load the NVIDIA driver; `nvidia-smi` must work on the node"
    ),
    "driver.version": lambda f: (
        f"driver {f['driver_version']}"
        + (f", supports CUDA up to {f['cuda']}" if f.get("cuda") else "")
    ),
    "cuda.no_runtime": lambda f: "torch has no CUDA runtime (not a CUDA build)",
    "cuda.driver_cuda_unknown": lambda f: f"driver's CUDA version unknown ({f['error']})",
    "cuda.compat": _compat,
    "cuda.fix_driver_too_old": lambda f: (
        f"upgrade the driver to one supporting CUDA {f['runtime']}, or install a "
        f"PyTorch build for CUDA {f['driver_major']}.x"
    ),
    "cuda.fix_minor_compat": lambda f: (
        "works for most kernels; upgrade the driver for PTX JIT and newest features"
    ),
}
