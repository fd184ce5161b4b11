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
from torchscale.contracts.nvml import NvmlGpu, NvmlState, nvml_indices, probe_nvml

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

    def cuda_uuids(self) -> list[str | None]:
        """The UUID torch reports for each CUDA ordinal (None where it has none)."""
        torch = self.module
        if torch is None:
            return []
        uuids: list[str | None] = []
        for ordinal in range(self.cuda_gpu_count):
            try:
                uuid = getattr(torch.cuda.get_device_properties(ordinal), "uuid", None)
            except Exception:  # a GPU torch counts but cannot describe: its links stay unknown
                uuid = None
            uuids.append(str(uuid) if uuid is not None else None)
        return uuids


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
    # check_nvlink's error counters (GPU UUID -> link -> counter -> count), read again after
    # the load by check_nvlink_errors
    nvlink_counts: dict[str, dict[int, dict[str, int]]] = field(default_factory=dict)

    @cached_property
    def torch(self) -> TorchState:
        try:
            return TorchState(importlib.import_module("torch"), None)
        except Exception as exc:  # ImportError, or a broken install raising OSError
            return TorchState(None, f"{type(exc).__name__}: {exc}")

    @cached_property
    def nvml(self) -> NvmlState:
        return probe_nvml()

    @cached_property
    def judged_gpus(self) -> list[NvmlGpu]:
        """The NVML GPUs this process can use, its CUDA ordinals' by UUID: a slice of a board
        (CUDA_VISIBLE_DEVICES, a Slurm job given some of a node's GPUs) judges its own GPUs,
        never another job's, though NVML lists the whole board. Every NVML GPU where an
        ordinal cannot be matched one to one (no torch, a MIG slice, no UUID), as before."""
        listed = self.nvml.gpus
        uuids = self.torch.cuda_uuids() if listed else []
        found = {i for i in nvml_indices(uuids, [g.uuid for g in listed]) if i is not None}
        if not uuids or len(found) < len(uuids):
            return listed
        return [listed[i] for i in sorted(found)]

    def unjudged_gpus(self) -> list[int]:
        """The NVML indices of the GPUs NVML lists that this process cannot use."""
        judged = {g.index for g in self.judged_gpus}
        return [g.index for g in self.nvml.gpus if g.index not in judged]

    def close(self) -> None:
        """Shut NVML down if a check initialised it."""
        state = self.__dict__.get("nvml")
        if state is not None and state.ok and state.module is not None:
            with contextlib.suppress(Exception):
                state.module.nvmlShutdown()
