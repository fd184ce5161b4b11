"""NVIDIA Management Library access (nvidia-ml-py, imported as `pynvml`).

Every call can fail for reasons that are facts about the node (no library, no driver, a GPU that
does not support a query), so each failure is turned into a reason string, never a crash.
"""

from __future__ import annotations

import ctypes
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class NvmlGpu:
    index: int
    handle: Any
    name: str
    uuid: str
    bus_id: str
    serial: str = ""  # the board's serial, what an RMA asks for ("" where NVML has none)


@dataclass
class NvmlState:
    """An initialised NVML with its GPUs, or the reason there is none."""

    module: ModuleType | None
    error: str | None
    driver_version: str | None = None
    cuda_driver_version: tuple[int, int] | None = None  # highest CUDA the driver supports
    gpus: list[NvmlGpu] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.module is not None and self.error is None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def nvml_error_name(exc: BaseException) -> str:
    """'NVMLError_LibraryNotFound: NVML Shared Library Not Found' style text."""
    return f"{type(exc).__name__}: {exc}"


def call(fn: Callable[..., T], *args: Any) -> tuple[T | None, str | None]:
    """Call an NVML function; return (value, None) or (None, reason)."""
    try:
        return fn(*args), None
    except Exception as exc:  # NVMLError subclasses, plus AttributeError on old bindings
        return None, nvml_error_name(exc)


def gpu_identity(gpu: NvmlGpu) -> dict[str, Any]:
    """The figures that name one GPU in a finding: NVML index, UUID and serial (an RMA needs
    the serial; the UUID survives a reboot's renumbering)."""
    return {"gpu": gpu.index, "uuid": gpu.uuid, "serial": gpu.serial}


def fabric_info(pynvml: Any, handle: Any) -> tuple[tuple[int, int] | None, str | None]:
    """((state, status), None) of the GPU in its NVLink fabric (NVML_GPU_FABRIC_STATE_*, and
    an nvmlReturn_t: 0 is success), or (None, why not). The versioned query first, then the
    older one for a driver that lacks it."""
    for query, struct in (
        ("nvmlDeviceGetGpuFabricInfoV", "c_nvmlGpuFabricInfoV_t"),
        ("nvmlDeviceGetGpuFabricInfo", "c_nvmlGpuFabricInfo_t"),
    ):
        fn, kind = getattr(pynvml, query, None), getattr(pynvml, struct, None)
        if fn is None or kind is None:
            continue
        info = kind()
        _, err = call(fn, handle, ctypes.byref(info))
        if err is None:
            return (int(info.state), int(info.status)), None
        if "FunctionNotFound" not in err:
            return None, err
    return None, "NVMLError_FunctionNotFound: no fabric query in this driver or binding"


def return_name(pynvml: Any, code: int) -> str:
    """An nvmlReturn_t by its constant's name ('NVML_ERROR_NOT_READY'), or its number."""
    names = [n for n in dir(pynvml) if n.startswith("NVML_ERROR_") or n == "NVML_SUCCESS"]
    return next((n for n in names if getattr(pynvml, n) == code), str(code))


def probe_nvml() -> NvmlState:
    """Import pynvml, initialise NVML and list GPUs; on failure say why."""
    try:
        pynvml = importlib.import_module("pynvml")
    except ImportError as exc:
        return NvmlState(None, f"pynvml is not importable ({exc}); pip install nvidia-ml-py")
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        reason = nvml_error_name(exc)
        if "LibraryNotFound" in reason:
            reason = "libnvidia-ml.so not found (no NVIDIA driver on this node)"
        elif "DriverNotLoaded" in reason:
            reason = "the NVIDIA kernel module is not loaded"
        return NvmlState(pynvml, reason)
    state = NvmlState(pynvml, None)
    version, _ = call(pynvml.nvmlSystemGetDriverVersion)
    state.driver_version = _text(version) if version is not None else None
    cuda_version, _ = call(pynvml.nvmlSystemGetCudaDriverVersion_v2)
    if isinstance(cuda_version, int):
        state.cuda_driver_version = (cuda_version // 1000, (cuda_version % 1000) // 10)
    count, err = call(pynvml.nvmlDeviceGetCount)
    if err is not None or count is None:
        state.error = f"nvmlDeviceGetCount failed: {err}"
        return state
    for index in range(count):
        handle, err = call(pynvml.nvmlDeviceGetHandleByIndex, index)
        if err is not None:
            state.gpus.append(NvmlGpu(index, None, f"<unreadable: {err}>", "", ""))
            continue
        name, _ = call(pynvml.nvmlDeviceGetName, handle)
        uuid, _ = call(pynvml.nvmlDeviceGetUUID, handle)
        pci, _ = call(pynvml.nvmlDeviceGetPciInfo, handle)
        bus_id = _text(getattr(pci, "busId", "")) if pci is not None else ""
        serial, _ = call(pynvml.nvmlDeviceGetSerial, handle)
        state.gpus.append(
            NvmlGpu(index, handle, _text(name), _text(uuid or ""), bus_id, _text(serial or ""))
        )
    return state


def uuid_key(uuid: str) -> str:
    """A GPU UUID as NVML spells it, lower case: torch prints a GPU's UUID bare, NVML with
    `GPU-` (a MIG slice's with `MIG-`, never equal to its GPU's)."""
    text = uuid.strip().lower()
    return text if text.startswith(("gpu-", "mig-")) else f"gpu-{text}"


def nvml_indices(torch_uuids: Sequence[str | None], nvml_uuids: Sequence[str]) -> list[int | None]:
    """For each CUDA ordinal (a position in `torch_uuids`), the NVML index (a position in
    `nvml_uuids`) of the same GPU, or None where no NVML GPU has its UUID (a MIG slice, no
    UUID from torch).

    CUDA ordinals count only the GPUs CUDA_VISIBLE_DEVICES leaves, in its order (fastest first
    unless CUDA_DEVICE_ORDER=PCI_BUS_ID); NVML numbers every GPU of the node by PCI bus. Only
    the UUID names the same GPU in both.
    """
    by_uuid = {uuid_key(u): i for i, u in enumerate(nvml_uuids) if u}
    return [by_uuid.get(uuid_key(u)) if u else None for u in torch_uuids]
