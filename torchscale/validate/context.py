"""Facts shared by several checks, gathered once and lazily (importing torch takes a second)."""

from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Literal

from torchscale.validate.nvml import NvmlState, probe_nvml

Device = Literal["cuda", "cpu"]


@dataclass(frozen=True)
class TorchState:
    """torch itself, or why it could not be imported."""

    module: ModuleType | None
    error: str | None

    @property
    def cuda_gpu_count(self) -> int:
        """GPUs torch can use here (0 on a CPU-only build or without a working driver)."""
        torch = self.module
        if torch is None:
            return 0
        try:
            return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
        except Exception:  # a broken driver can raise from inside is_available()
            return 0


@dataclass
class ValidateContext:
    device: Device
    output_dir: Path
    quick: bool
    smoke_timeout_s: float = 120.0
    notes: list[str] = field(default_factory=list)

    @cached_property
    def torch(self) -> TorchState:
        try:
            return TorchState(importlib.import_module("torch"), None)
        except Exception as exc:  # ImportError, or a broken install raising OSError
            return TorchState(None, f"{type(exc).__name__}: {exc}")

    @cached_property
    def nvml(self) -> NvmlState:
        return probe_nvml()

    def close(self) -> None:
        """Shut NVML down if a check initialised it."""
        state = self.__dict__.get("nvml")
        if state is not None and state.ok and state.module is not None:
            with contextlib.suppress(Exception):
                state.module.nvmlShutdown()
