"""One GPU through NVML (pynvml): utilisation, memory used, power, temperature, SM clock,
clocks-event reasons and the total-energy counter; at each window's edges, its compute processes;
once, its top SM clock and power limits (what a clock verdict is judged against).

The GPU is found by its UUID (what torch reports for the rank's device), never by index:
CUDA_VISIBLE_DEVICES may reorder the GPUs or name them by UUID, and NVML always sees every GPU
of the node in its own order. A query the GPU or driver does not support (NotSupported,
FunctionNotFound, NoPermission) leaves that field null with the reason and is not asked again;
any other error loses that one sample's value only. Every call happens in the sampler thread.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from torchscale.contracts.clock_reasons import clock_reason_errors
from torchscale.contracts.finding import Finding
from torchscale.contracts.nvml import nvml_error_name
from torchscale.contracts.power_limit import PowerLimit, power_limit_of
from torchscale.contracts.schema.diagnosis import Reason
from torchscale.contracts.wording.cell_telemetry import said
from torchscale.rank.telemetry.samples import GPU_FIELDS, GPU_PROCESSES, SM_CLOCK_MAX, EdgeReading

ENERGY = "energy_j"  # the unavailable key of the energy counter
# errors that say the query will never answer on this GPU and driver
PERMANENT_ERRORS = (
    "NVMLError_NotSupported",
    "NVMLError_FunctionNotFound",
    "NVMLError_NoPermission",
)
# the compute-process list: nvidia-ml-py's unversioned name calls the _v3 symbol (driver >= 510)
# and raises NVMLLibraryMismatchError where the library lacks it; then _v2 answers the same
PROCESS_QUERIES = (
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetComputeRunningProcesses_v2",
)
MISSING_SYMBOL = ("NVMLError_FunctionNotFound", "NVMLLibraryMismatchError")


def uuid_candidates(torch_uuid: str) -> list[str]:
    """NVML spellings of a torch device UUID: torch prints the bare UUID of a GPU; NVML wants
    `GPU-<uuid>` (or `MIG-<uuid>` for a MIG slice). A prefixed UUID is used as it is."""
    text = torch_uuid.strip()
    return [text] if text.startswith(("GPU-", "MIG-")) else [f"GPU-{text}", f"MIG-{text}"]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _permanent(exc: BaseException) -> bool:
    return isinstance(exc, AttributeError) or type(exc).__name__ in PERMANENT_ERRORS


class NvmlSource:
    """Reads GPU_FIELDS of the GPU whose UUID torch reported for this rank."""

    fields = GPU_FIELDS

    def __init__(self, torch_uuid: str, module: ModuleType | None = None) -> None:
        self.torch_uuid = torch_uuid
        self.unavailable: dict[str, Reason] = {}
        self.errors: dict[str, Reason] = {}
        self.name: str | None = None
        self.uuid: str | None = None
        self.sm_clock_max_mhz: float | None = None
        self.power_limit: PowerLimit | None = None
        self._module = module
        self._nvml: Any = None
        self._handle: Any = None
        self._reasons_query: str | None = None  # the clocks-event query name that answers
        self._process_queries = list(PROCESS_QUERIES)  # those not yet found missing

    def _fail_all(self, code: str, **figures: Any) -> None:
        reason = Finding(code=code, figures=figures)
        for name in (*self.fields, ENERGY, GPU_PROCESSES, SM_CLOCK_MAX):
            self.unavailable.setdefault(name, reason)
        self.power_limit = PowerLimit(unavailable=reason)

    def open(self) -> None:
        try:
            nvml: Any = self._module or importlib.import_module("pynvml")
        except ImportError as exc:
            self._fail_all("power_limit.no_pynvml", error=str(exc))
            return
        try:
            nvml.nvmlInit()
        except Exception as exc:
            self._fail_all("power_limit.nvml_init_failed", error=nvml_error_name(exc))
            return
        tried = []
        for candidate in uuid_candidates(self.torch_uuid):
            try:
                self._handle = nvml.nvmlDeviceGetHandleByUUID(candidate)
            except Exception as exc:
                tried.append(f"{candidate}: {nvml_error_name(exc)}")
                continue
            self.uuid = candidate
            break
        if self._handle is None:
            self._fail_all("power_limit.uuid_not_found", tried=tried)
            return
        self._nvml = nvml
        try:
            self.name = _text(nvml.nvmlDeviceGetName(self._handle))
        except Exception:
            self.name = None  # a name is a label only
        top = self._call(SM_CLOCK_MAX, "nvmlDeviceGetMaxClockInfo", nvml.NVML_CLOCK_SM)
        self.sm_clock_max_mhz = float(top) if top else None
        if top is not None and not top:
            self.unavailable[SM_CLOCK_MAX] = said("telemetry.max_clock_zero")
        self.power_limit = power_limit_of(nvml, self._handle)

    def _call(self, name: str, query: str, *args: Any) -> Any:
        """The query's answer, or None with the reason kept under `name`."""
        if name in self.unavailable or self._handle is None:
            return None
        try:
            return getattr(self._nvml, query)(self._handle, *args)
        except Exception as exc:
            why = said("telemetry.queries_failed", errors={query: nvml_error_name(exc)})
            (self.unavailable if _permanent(exc) else self.errors)[name] = why
            return None

    def _clock_reasons(self) -> int | None:
        if "clock_reasons" in self.unavailable or self._handle is None:
            return None
        if self._reasons_query is None:  # first read: find the name this binding and driver have
            mask, query, errors = clock_reason_errors(self._nvml, self._handle)
            if mask is None:
                why = said("telemetry.queries_failed", errors=errors)
                permanent = all(
                    any(p in error for p in (*PERMANENT_ERRORS, "not in this pynvml"))
                    for error in errors.values()
                )
                (self.unavailable if permanent else self.errors)["clock_reasons"] = why
                return None
            self._reasons_query = query
            return mask
        value = self._call("clock_reasons", self._reasons_query)
        return int(value) if value is not None else None

    def read(self, into: dict[str, float | None]) -> None:
        if self._handle is None:
            return
        nvml = self._nvml
        util = self._call("gpu_util_pct", "nvmlDeviceGetUtilizationRates")
        into["gpu_util_pct"] = float(util.gpu) if util is not None else None
        memory = self._call("gpu_memory_used_bytes", "nvmlDeviceGetMemoryInfo")
        into["gpu_memory_used_bytes"] = float(memory.used) if memory is not None else None
        power_mw = self._call("power_w", "nvmlDeviceGetPowerUsage")
        into["power_w"] = power_mw / 1000.0 if power_mw is not None else None
        temp = self._call("temperature_c", "nvmlDeviceGetTemperature", nvml.NVML_TEMPERATURE_GPU)
        into["temperature_c"] = float(temp) if temp is not None else None
        clock = self._call("sm_clock_mhz", "nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_SM)
        into["sm_clock_mhz"] = float(clock) if clock is not None else None
        mask = self._clock_reasons()
        into["clock_reasons"] = float(mask) if mask is not None else None

    def read_edge(self, into: EdgeReading) -> None:
        """The PIDs of the GPU's compute processes (every process holding a CUDA context on
        it, busy or not), read at the window's edges only: a process on the GPU through the
        window is seen at both, and the loop's ticks stay as cheap as they were measured."""
        if GPU_PROCESSES in self.unavailable or self._handle is None:
            return
        while self._process_queries:
            query = self._process_queries[0]
            try:
                pids = sorted({int(p.pid) for p in getattr(self._nvml, query)(self._handle)})
            except Exception as exc:
                why = said("telemetry.queries_failed", errors={query: nvml_error_name(exc)})
                if type(exc).__name__ in MISSING_SYMBOL or isinstance(exc, AttributeError):
                    self._process_queries.pop(0)  # an older driver or binding: the next name
                    if not self._process_queries:
                        self.unavailable[GPU_PROCESSES] = why
                    continue
                (self.unavailable if _permanent(exc) else self.errors)[GPU_PROCESSES] = why
                return
            into.gpu_pids = pids
            return

    def energy_mj(self) -> float | None:
        """The GPU's total-energy counter (millijoules since the driver loaded; Volta and
        newer), or None: then the summary integrates the power samples instead."""
        value = self._call(ENERGY, "nvmlDeviceGetTotalEnergyConsumption")
        return float(value) if value is not None else None
