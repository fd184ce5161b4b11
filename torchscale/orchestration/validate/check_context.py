"""Facts shared by several checks, gathered once and lazily (importing torch takes a second)."""

from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Literal

from torchscale.contracts import host
from torchscale.contracts.nvml import NvmlState, probe_nvml

Device = Literal["cuda", "cpu"]


@dataclass(frozen=True)
class TorchState:
    """torch itself, or why it could not be imported."""

    module: ModuleType | None
    error: str | None

    @property
    def cuda_gpu_count(self) -> int:
        """GPUs torch can use here (0 on a CPU-only build or without a working driver)."""
        return 0 if self.module is None else host.cuda_gpu_count(self.module)


@dataclass
class ValidateContext:
    device: Device
    output_dir: Path
    quick: bool
    smoke_timeout_s: float = 120.0
    notes: list[str] = field(default_factory=list)
    # --level: basic (the checks, seconds), perf (+ measured capability, minutes), burn (+
    # sustained load for burn_duration_s); cumulative, as DCGM's levels are
    level: Literal["basic", "perf", "burn"] = "basic"
    burn_duration_s: float = 600.0
    matmul_budget_s: float | None = None  # per dtype; None: perf.py's default for the device
    experiment_dir: Path | None = None  # where perf's comm sweep and the report are stored
    fail_on: Literal["fail", "warn"] = "fail"

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
