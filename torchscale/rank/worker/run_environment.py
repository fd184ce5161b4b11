"""The environment recorded with every result: what ran, where, with which versions."""

from __future__ import annotations

import os
import platform
import socket
import sys
from pathlib import Path
from typing import Any

import torch

from torchscale.contracts import host
from torchscale.rank.worker import cpu_binding

RECORDED_ENV_PREFIXES = (
    "NCCL_",
    "TORCH_NCCL_",
    "GLOO_",
    "TORCH_DISTRIBUTED_",
    "TORCHELASTIC_",
    "MALLOC_",
)
RECORDED_ENV_NAMES = (
    "GLIBC_TUNABLES",  # launcher.cpu_malloc (launch/cpu_malloc.py) or the user's own
    "OMP_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
)


def _cpu_model() -> str:
    try:
        with Path("/proc/cpuinfo").open(encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def capture_environment() -> dict[str, Any]:
    binding = cpu_binding.current()
    gpus: list[str] = []
    if torch.cuda.is_available():
        gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.cuda.is_available() else None,
        "nccl": host.nccl_version(),
        "driver": host.driver_version() if gpus else None,
        "libc": " ".join(platform.libc_ver()).strip() or None,  # GLIBC_TUNABLES: glibc only
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        # the node's cores this rank could run on before it bound itself to its own
        "usable_cores": binding.cores_before if binding is not None else host.usable_cores(),
        "cpu_binding": binding.note if binding is not None else None,
        "torch_threads": torch.get_num_threads(),
        "gpus": gpus,
        "env": {
            k: v
            for k, v in sorted(os.environ.items())
            if k.startswith(RECORDED_ENV_PREFIXES) or k in RECORDED_ENV_NAMES
        },
    }
