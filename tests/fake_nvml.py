"""A small stand-in for the `pynvml` module (nvidia-ml-py), for unit tests of the GPU checks.

It is a real module object (so it can also be put in ``sys.modules["pynvml"]``) with the NVML
functions and constants torchscale calls. Each GPU is a `FakeGpu` whose fields say what the
queries return; a field set to `NOT_SUPPORTED` makes that query raise `NVMLError_NotSupported`,
as NVML does on GPUs or drivers that lack the feature, a field set to an exception instance
raises it, and a field set to a callable is called at each query (values that change over time,
for the telemetry sampler); `driver_has_clocks_event_reasons=False`
makes the new clocks-event query raise `NVMLError_FunctionNotFound`, as nvidia-ml-py does on a
driver older than 535, and `driver_has_compute_processes_v3=False` makes the unversioned
compute-process query raise `NVMLLibraryMismatchError` (a library without the _v3 symbol).

    fake = FakeNvml([FakeGpu(ecc_uncorrected_volatile=3)])
    ctx.__dict__["nvml"] = fake.state()
"""

from __future__ import annotations

import ctypes
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torchscale.contracts.nvml import NvmlGpu, NvmlState


class NVMLError(Exception):
    message = "Unknown Error"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.message)


class NVMLError_NotSupported(NVMLError):
    message = "Not Supported"


class NVMLError_FunctionNotFound(NVMLError):
    """What nvidia-ml-py raises when the binding has a function the driver's library lacks."""

    message = "Function Not Found"


class NVMLError_LibraryNotFound(NVMLError):
    message = "NVML Shared Library Not Found"


class NVMLError_DriverNotLoaded(NVMLError):
    message = "Driver Not Loaded"


class NVMLError_InvalidArgument(NVMLError):
    message = "Invalid Argument"


class NVMLError_Unknown(NVMLError):
    message = "Unknown Error"


class NVMLError_NotFound(NVMLError):
    message = "Not Found"


class NVMLError_NoPermission(NVMLError):
    message = "Insufficient Permissions"


class NVMLLibraryMismatchError(Exception):
    """What nvidia-ml-py's unversioned wrappers raise when the library lacks the symbol they
    call (it is not an NVMLError)."""


class _NotSupported:
    def __repr__(self) -> str:
        return "NOT_SUPPORTED"


NOT_SUPPORTED: Any = _NotSupported()
"""Field value that makes the matching query raise NVMLError_NotSupported."""

# NVML constants (values as in nvml.h)
NVML_FEATURE_DISABLED = 0
NVML_FEATURE_ENABLED = 1
NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_AGGREGATE_ECC = 1
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM = 1
NVML_TOPOLOGY_SINGLE = 10  # behind one PCIe switch
NVML_TOPOLOGY_NODE = 40  # only the CPU (NUMA node) in common
NVML_CLOCK_MEM = 2
NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NOT_READY = 27
NVML_P2P_CAPS_INDEX_NVLINK = 2
NVML_P2P_STATUS_OK = 0
NVML_P2P_STATUS_NOT_SUPPORTED = 5
NVML_NVLINK_ERROR_DL_REPLAY = 0
NVML_NVLINK_ERROR_DL_RECOVERY = 1
NVML_NVLINK_ERROR_DL_CRC_FLIT = 2
NVML_NVLINK_ERROR_DL_CRC_DATA = 3
NVML_NVLINK_VERSION_3_0 = 4
NVML_NVLINK_VERSION_4_0 = 6
NVML_NVLINK_VERSION_5_0 = 7
NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON = 90
NVML_GPU_FABRIC_STATE_NOT_SUPPORTED = 0
NVML_GPU_FABRIC_STATE_NOT_STARTED = 1
NVML_GPU_FABRIC_STATE_IN_PROGRESS = 2
NVML_GPU_FABRIC_STATE_COMPLETED = 3


class c_nvmlGpuFabricInfoV_t(ctypes.Structure):
    """nvidia-ml-py's c_nvmlGpuFabricInfo_v2_t: filled in place through ctypes.byref."""

    _fields_ = [
        ("version", ctypes.c_uint),
        ("clusterUuid", ctypes.c_uint8 * 16),
        ("status", ctypes.c_uint),
        ("cliqueId", ctypes.c_uint32),
        ("state", ctypes.c_uint),
        ("healthMask", ctypes.c_uint32),
    ]


@dataclass
class FakeFieldValue:
    """As nvidia-ml-py returns one field of nvmlDeviceGetFieldValues (c_nvmlFieldValue_t)."""

    fieldId: int
    nvmlReturn: int
    value: types.SimpleNamespace


@dataclass
class FakeMemory:
    total: int
    free: int
    used: int


@dataclass
class FakePciInfo:
    busId: bytes


@dataclass
class FakeUtilization:
    gpu: int
    memory: int


@dataclass
class FakeProcessInfo:
    """As nvidia-ml-py returns a compute process (nvmlProcessInfo_v2_t as an object)."""

    pid: int
    usedGpuMemory: int | None = None
    gpuInstanceId: int = 0xFFFFFFFF
    computeInstanceId: int = 0xFFFFFFFF


@dataclass
class FakeGpu:
    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    bus_id: str = "00000000:18:00.0"
    memory_total: Any = 80 * 2**30
    compute_capability: Any = (9, 0)
    # ECC counters: uncorrected since boot (volatile) is what matters; the others are decoys
    ecc_uncorrected_volatile: Any = 0
    ecc_uncorrected_aggregate: Any = 0
    ecc_corrected_volatile: Any = 0
    retired_pages_pending: Any = False
    # (correctable rows, uncorrectable rows, remap pending, remap failure)
    remapped_rows: Any = (0, 0, False, False)
    persistence: Any = True
    clock_reasons: Any = 0  # NVML clocks-event-reasons bit mask
    # telemetry (value, NOT_SUPPORTED, an exception, or a callable giving the value now)
    utilization: Any = 50  # percent
    memory_used: Any = 0  # bytes
    power_mw: Any = 300_000
    # power limits, milliwatts: the one enforced now and the board's default (an H100 SXM's)
    enforced_power_limit_mw: Any = 700_000
    default_power_limit_mw: Any = 700_000
    temperature: Any = 60  # Celsius
    sm_clock: Any = 1980  # MHz
    sm_clock_max: Any = 1980  # MHz: the top SM clock (an H100 SXM's)
    energy_mj: Any = 1_000_000  # total-energy counter, millijoules
    compute_pids: Any = ()  # PIDs of the compute processes on the GPU
    nvlinks: list[bool] = field(default_factory=list)  # state of each link that exists
    nvlink_version: Any = NVML_NVLINK_VERSION_4_0  # of every link (or {link: version})
    # {link: {NVML_NVLINK_ERROR_DL_* counter: count}}; NOT_SUPPORTED: every counter raises
    nvlink_errors: Any = field(default_factory=dict)
    nvlink_speed_mbps: int | None = None  # the common link speed field; None: not supported
    # NVML's P2P status over NVLink with any other GPU: None: OK where both GPUs have an
    # active link, else NVML_P2P_STATUS_NOT_SUPPORTED; an int: that status
    p2p_nvlink: Any = None
    # NVML_GPU_FABRIC_STATE_* and its nvmlReturn_t status; NOT_SUPPORTED: the query raises
    fabric_state: Any = NOT_SUPPORTED
    fabric_status: int = NVML_SUCCESS
    serial: Any = "1650000000000"
    vbios: Any = "96.00.99.00.01"
    ecc_mode: Any = True  # current mode (the pending one is the same)
    mig_mode: Any = False
    power_management_limit_mw: Any = 700_000
    app_clock_sm: Any = 1980  # MHz
    app_clock_mem: Any = 2619  # MHz
    # GPUs with the same switch name share a PCIe switch (NVML_TOPOLOGY_SINGLE), others have
    # only the CPU in common (NVML_TOPOLOGY_NODE); NOT_SUPPORTED makes the query raise
    pcie_switch: Any = None
    unreadable: bool = False  # nvmlDeviceGetHandleByIndex raises for this GPU


@dataclass(frozen=True)
class FakeHandle:
    index: int


class FakeNvml(types.ModuleType):
    """Configurable fake `pynvml`. Every call is recorded in `calls` as (name, args)."""

    NVMLError = NVMLError
    NVMLError_NotSupported = NVMLError_NotSupported
    NVMLError_FunctionNotFound = NVMLError_FunctionNotFound
    NVMLError_LibraryNotFound = NVMLError_LibraryNotFound
    NVMLError_DriverNotLoaded = NVMLError_DriverNotLoaded
    NVMLError_InvalidArgument = NVMLError_InvalidArgument
    NVMLError_Unknown = NVMLError_Unknown
    NVMLError_NotFound = NVMLError_NotFound
    NVMLError_NoPermission = NVMLError_NoPermission
    NVMLLibraryMismatchError = NVMLLibraryMismatchError

    NVML_FEATURE_DISABLED = NVML_FEATURE_DISABLED
    NVML_FEATURE_ENABLED = NVML_FEATURE_ENABLED
    NVML_MEMORY_ERROR_TYPE_CORRECTED = NVML_MEMORY_ERROR_TYPE_CORRECTED
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = NVML_MEMORY_ERROR_TYPE_UNCORRECTED
    NVML_VOLATILE_ECC = NVML_VOLATILE_ECC
    NVML_AGGREGATE_ECC = NVML_AGGREGATE_ECC
    NVML_TEMPERATURE_GPU = NVML_TEMPERATURE_GPU
    NVML_CLOCK_SM = NVML_CLOCK_SM
    NVML_TOPOLOGY_SINGLE = NVML_TOPOLOGY_SINGLE
    NVML_TOPOLOGY_NODE = NVML_TOPOLOGY_NODE
    NVML_NVLINK_MAX_LINKS = 18
    NVML_CLOCK_MEM = NVML_CLOCK_MEM
    NVML_SUCCESS = NVML_SUCCESS
    NVML_ERROR_NOT_SUPPORTED = NVML_ERROR_NOT_SUPPORTED
    NVML_ERROR_NOT_READY = NVML_ERROR_NOT_READY
    NVML_P2P_CAPS_INDEX_NVLINK = NVML_P2P_CAPS_INDEX_NVLINK
    NVML_P2P_STATUS_OK = NVML_P2P_STATUS_OK
    NVML_P2P_STATUS_NOT_SUPPORTED = NVML_P2P_STATUS_NOT_SUPPORTED
    NVML_NVLINK_ERROR_DL_REPLAY = NVML_NVLINK_ERROR_DL_REPLAY
    NVML_NVLINK_ERROR_DL_RECOVERY = NVML_NVLINK_ERROR_DL_RECOVERY
    NVML_NVLINK_ERROR_DL_CRC_FLIT = NVML_NVLINK_ERROR_DL_CRC_FLIT
    NVML_NVLINK_ERROR_DL_CRC_DATA = NVML_NVLINK_ERROR_DL_CRC_DATA
    NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON = NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON
    c_nvmlGpuFabricInfoV_t = c_nvmlGpuFabricInfoV_t

    def __init__(
        self,
        gpus: list[FakeGpu] | None = None,
        *,
        driver_version: str | bytes = "550.54.15",
        cuda_driver_version: int = 12040,
        init_error: NVMLError | None = None,
        count_error: NVMLError | None = None,
        clocks_event_reasons_api: bool = True,
        driver_has_clocks_event_reasons: bool = True,
        throttle_reasons_api: bool = True,
        driver_has_compute_processes_v3: bool = True,
    ) -> None:
        super().__init__("pynvml")
        # the constants in the module's own namespace, as dir(pynvml) lists them
        self.__dict__.update({k: v for k, v in vars(FakeNvml).items() if k.startswith("NVML_")})
        self.gpus = [FakeGpu()] if gpus is None else gpus
        self.driver_version = driver_version
        self.cuda_driver_version = cuda_driver_version
        self.init_error = init_error
        self.count_error = count_error
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        # a driver older than 535: the binding has the new name, the library lacks the symbol
        self.driver_has_clocks_event_reasons = driver_has_clocks_event_reasons
        self.driver_has_compute_processes_v3 = driver_has_compute_processes_v3
        if not clocks_event_reasons_api:
            # older nvidia-ml-py: only the "throttle reasons" spelling exists
            self.nvmlDeviceGetCurrentClocksEventReasons = None
        if not throttle_reasons_api:
            # a future nvidia-ml-py without the deprecated "throttle reasons" spelling
            self.nvmlDeviceGetCurrentClocksThrottleReasons = None

    # -- helpers for tests --------------------------------------------------------------------

    def state(self, cuda_driver_version: tuple[int, int] | None = (12, 4)) -> NvmlState:
        """An initialised NvmlState over these GPUs, as probe_nvml would build it."""
        return NvmlState(
            module=self,
            error=None,
            driver_version=(
                self.driver_version.decode()
                if isinstance(self.driver_version, bytes)
                else self.driver_version
            ),
            cuda_driver_version=cuda_driver_version,
            gpus=[
                NvmlGpu(i, FakeHandle(i), g.name, g.uuid, g.bus_id, g.serial)
                for i, g in enumerate(self.gpus)
            ],
        )

    def called(self, name: str) -> list[tuple[Any, ...]]:
        return [args for n, args in self.calls if n == name]

    # -- internals ----------------------------------------------------------------------------

    def _record(self, name: str, *args: Any) -> None:
        self.calls.append((name, args))

    def _gpu(self, handle: Any) -> FakeGpu:
        if not isinstance(handle, FakeHandle) or not 0 <= handle.index < len(self.gpus):
            raise NVMLError_InvalidArgument()
        return self.gpus[handle.index]

    @staticmethod
    def _value(value: Any) -> Any:
        if value is NOT_SUPPORTED:
            raise NVMLError_NotSupported()
        if isinstance(value, BaseException):
            raise value
        if callable(value):
            return FakeNvml._value(value())
        return value

    def _query(self, name: str, handle: Any, get: Callable[[FakeGpu], Any]) -> Any:
        self._record(name, handle)
        return self._value(get(self._gpu(handle)))

    # -- the pynvml API -----------------------------------------------------------------------

    def nvmlInit(self) -> None:
        self._record("nvmlInit")
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self) -> None:
        self._record("nvmlShutdown")

    def nvmlSystemGetDriverVersion(self) -> str | bytes:
        self._record("nvmlSystemGetDriverVersion")
        return self.driver_version

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        self._record("nvmlSystemGetCudaDriverVersion_v2")
        return self.cuda_driver_version

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._record("nvmlSystemGetCudaDriverVersion")
        return self.cuda_driver_version

    def nvmlDeviceGetCount(self) -> int:
        self._record("nvmlDeviceGetCount")
        if self.count_error is not None:
            raise self.count_error
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeHandle:
        self._record("nvmlDeviceGetHandleByIndex", index)
        if not 0 <= index < len(self.gpus):
            raise NVMLError_InvalidArgument()
        if self.gpus[index].unreadable:
            raise NVMLError_Unknown()
        return FakeHandle(index)

    def nvmlDeviceGetHandleByUUID(self, uuid: str | bytes) -> FakeHandle:
        self._record("nvmlDeviceGetHandleByUUID", uuid)
        text = uuid.decode() if isinstance(uuid, bytes) else uuid
        for index, gpu in enumerate(self.gpus):
            if gpu.uuid == text:
                if gpu.unreadable:
                    raise NVMLError_Unknown()
                return FakeHandle(index)
        raise NVMLError_NotFound()

    def nvmlDeviceGetName(self, handle: Any) -> bytes:
        return self._query("nvmlDeviceGetName", handle, lambda g: g.name.encode())

    def nvmlDeviceGetUUID(self, handle: Any) -> bytes:
        return self._query("nvmlDeviceGetUUID", handle, lambda g: g.uuid.encode())

    def nvmlDeviceGetPciInfo(self, handle: Any) -> FakePciInfo:
        return self._query("nvmlDeviceGetPciInfo", handle, lambda g: FakePciInfo(g.bus_id.encode()))

    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> FakeMemory:
        def memory(g: FakeGpu) -> Any:
            if g.memory_total is NOT_SUPPORTED:
                return NOT_SUPPORTED
            used = self._value(g.memory_used)
            return FakeMemory(g.memory_total, g.memory_total - used, used)

        return self._query("nvmlDeviceGetMemoryInfo", handle, memory)

    def nvmlDeviceGetCudaComputeCapability(self, handle: Any) -> tuple[int, int]:
        return self._query(
            "nvmlDeviceGetCudaComputeCapability", handle, lambda g: g.compute_capability
        )

    def nvmlDeviceGetTotalEccErrors(self, handle: Any, error_type: int, counter: int) -> int:
        self._record("nvmlDeviceGetTotalEccErrors", handle, error_type, counter)
        gpu = self._gpu(handle)
        if error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED:
            return self._value(gpu.ecc_corrected_volatile)
        if counter == NVML_AGGREGATE_ECC:
            return self._value(gpu.ecc_uncorrected_aggregate)
        return self._value(gpu.ecc_uncorrected_volatile)

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle: Any) -> int:
        return self._query(
            "nvmlDeviceGetRetiredPagesPendingStatus", handle, lambda g: g.retired_pages_pending
        )

    def nvmlDeviceGetRemappedRows(self, handle: Any) -> tuple[int, int, int, int]:
        return self._query("nvmlDeviceGetRemappedRows", handle, lambda g: g.remapped_rows)

    def nvmlDeviceGetPersistenceMode(self, handle: Any) -> int:
        def mode(g: FakeGpu) -> Any:
            if g.persistence is NOT_SUPPORTED:
                return NOT_SUPPORTED
            return NVML_FEATURE_ENABLED if g.persistence else NVML_FEATURE_DISABLED

        return self._query("nvmlDeviceGetPersistenceMode", handle, mode)

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any) -> int:
        if not self.driver_has_clocks_event_reasons:
            self._record("nvmlDeviceGetCurrentClocksEventReasons", handle)
            raise NVMLError_FunctionNotFound()
        return self._query(
            "nvmlDeviceGetCurrentClocksEventReasons", handle, lambda g: g.clock_reasons
        )

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: Any) -> int:
        return self._query(
            "nvmlDeviceGetCurrentClocksThrottleReasons", handle, lambda g: g.clock_reasons
        )

    def nvmlDeviceGetTopologyCommonAncestor(self, first: Any, second: Any) -> int:
        self._record("nvmlDeviceGetTopologyCommonAncestor", first, second)
        switches = [self._value(self._gpu(h).pcie_switch) for h in (first, second)]
        shared = switches[0] is not None and switches[0] == switches[1]
        return NVML_TOPOLOGY_SINGLE if shared else NVML_TOPOLOGY_NODE

    def nvmlDeviceGetNvLinkState(self, handle: Any, link: int) -> int:
        self._record("nvmlDeviceGetNvLinkState", handle, link)
        gpu = self._gpu(handle)
        if link >= len(gpu.nvlinks):
            raise NVMLError_NotSupported()
        return NVML_FEATURE_ENABLED if gpu.nvlinks[link] else NVML_FEATURE_DISABLED

    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> FakeUtilization:
        return self._query(
            "nvmlDeviceGetUtilizationRates",
            handle,
            lambda g: (
                g.utilization
                if g.utilization is NOT_SUPPORTED
                else FakeUtilization(self._value(g.utilization), 0)
            ),
        )

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int:
        return self._query("nvmlDeviceGetPowerUsage", handle, lambda g: g.power_mw)

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any) -> int:
        return self._query(
            "nvmlDeviceGetEnforcedPowerLimit", handle, lambda g: g.enforced_power_limit_mw
        )

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: Any) -> int:
        return self._query(
            "nvmlDeviceGetPowerManagementDefaultLimit", handle, lambda g: g.default_power_limit_mw
        )

    def nvmlDeviceGetTemperature(self, handle: Any, sensor: int) -> int:
        self._record("nvmlDeviceGetTemperature", handle, sensor)
        if sensor != NVML_TEMPERATURE_GPU:
            raise NVMLError_InvalidArgument()
        return self._value(self._gpu(handle).temperature)

    def nvmlDeviceGetClockInfo(self, handle: Any, clock_type: int) -> int:
        self._record("nvmlDeviceGetClockInfo", handle, clock_type)
        if clock_type != NVML_CLOCK_SM:
            raise NVMLError_InvalidArgument()
        return self._value(self._gpu(handle).sm_clock)

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, clock_type: int) -> int:
        self._record("nvmlDeviceGetMaxClockInfo", handle, clock_type)
        if clock_type != NVML_CLOCK_SM:
            raise NVMLError_InvalidArgument()
        return self._value(self._gpu(handle).sm_clock_max)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Any) -> int:
        return self._query("nvmlDeviceGetTotalEnergyConsumption", handle, lambda g: g.energy_mj)

    def _processes(self, name: str, handle: Any) -> list[FakeProcessInfo]:
        pids = self._query(name, handle, lambda g: g.compute_pids)
        return [FakeProcessInfo(pid) for pid in pids]

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[FakeProcessInfo]:
        if not self.driver_has_compute_processes_v3:
            self._record("nvmlDeviceGetComputeRunningProcesses", handle)
            raise NVMLLibraryMismatchError("Unversioned function called ...")
        return self._processes("nvmlDeviceGetComputeRunningProcesses", handle)

    def nvmlDeviceGetComputeRunningProcesses_v2(self, handle: Any) -> list[FakeProcessInfo]:
        return self._processes("nvmlDeviceGetComputeRunningProcesses_v2", handle)

    def nvmlDeviceGetSerial(self, handle: Any) -> bytes:
        return self._query("nvmlDeviceGetSerial", handle, lambda g: _encoded(g.serial))

    def nvmlDeviceGetVbiosVersion(self, handle: Any) -> bytes:
        return self._query("nvmlDeviceGetVbiosVersion", handle, lambda g: _encoded(g.vbios))

    def nvmlDeviceGetEccMode(self, handle: Any) -> list[int]:
        return self._query("nvmlDeviceGetEccMode", handle, lambda g: _mode_pair(g.ecc_mode))

    def nvmlDeviceGetMigMode(self, handle: Any) -> list[int]:
        return self._query("nvmlDeviceGetMigMode", handle, lambda g: _mode_pair(g.mig_mode))

    def nvmlDeviceGetPowerManagementLimit(self, handle: Any) -> int:
        return self._query(
            "nvmlDeviceGetPowerManagementLimit", handle, lambda g: g.power_management_limit_mw
        )

    def nvmlDeviceGetApplicationsClock(self, handle: Any, clock_type: int) -> int:
        self._record("nvmlDeviceGetApplicationsClock", handle, clock_type)
        gpu = self._gpu(handle)
        if clock_type == NVML_CLOCK_SM:
            return self._value(gpu.app_clock_sm)
        if clock_type == NVML_CLOCK_MEM:
            return self._value(gpu.app_clock_mem)
        raise NVMLError_InvalidArgument()

    def _link(self, name: str, handle: Any, link: int) -> FakeGpu:
        self._record(name, handle, link)
        gpu = self._gpu(handle)
        if link >= len(gpu.nvlinks):
            raise NVMLError_NotSupported()
        return gpu

    def nvmlDeviceGetNvLinkVersion(self, handle: Any, link: int) -> int:
        version = self._link("nvmlDeviceGetNvLinkVersion", handle, link).nvlink_version
        return self._value(version[link] if isinstance(version, dict) else version)

    def nvmlDeviceGetNvLinkErrorCounter(self, handle: Any, link: int, counter: int) -> int:
        errors = self._value(
            self._link("nvmlDeviceGetNvLinkErrorCounter", handle, link).nvlink_errors
        )
        return int(errors.get(link, {}).get(counter, 0))

    def nvmlDeviceGetFieldValues(self, handle: Any, field_ids: list[int]) -> list[FakeFieldValue]:
        self._record("nvmlDeviceGetFieldValues", handle, tuple(field_ids))
        speed = self._gpu(handle).nvlink_speed_mbps
        values = []
        for field_id in field_ids:
            known = field_id == NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON and speed is not None
            status = NVML_SUCCESS if known else NVML_ERROR_NOT_SUPPORTED
            values.append(FakeFieldValue(field_id, status, types.SimpleNamespace(uiVal=speed or 0)))
        return values

    def nvmlDeviceGetP2PStatus(self, first: Any, second: Any, index: int) -> int:
        self._record("nvmlDeviceGetP2PStatus", first, second, index)
        gpus = [self._gpu(first), self._gpu(second)]
        if index != NVML_P2P_CAPS_INDEX_NVLINK:
            raise NVMLError_InvalidArgument()
        set_to = [g.p2p_nvlink for g in gpus if g.p2p_nvlink is not None]
        if set_to:
            return self._value(set_to[0])
        linked = all(any(g.nvlinks) for g in gpus)
        return NVML_P2P_STATUS_OK if linked else NVML_P2P_STATUS_NOT_SUPPORTED

    def nvmlDeviceGetGpuFabricInfoV(self, handle: Any, info: Any) -> int:
        self._record("nvmlDeviceGetGpuFabricInfoV", handle)
        gpu = self._gpu(handle)
        target = info._obj  # what ctypes.byref points at
        target.state = self._value(gpu.fabric_state)
        target.status = gpu.fabric_status
        return NVML_SUCCESS


def _encoded(value: Any) -> Any:
    return value.encode() if isinstance(value, str) else value


def _mode_pair(mode: Any) -> Any:
    """[current, pending] as NVML gives a mode (NOT_SUPPORTED and exceptions pass through)."""
    if isinstance(mode, bool):
        state = NVML_FEATURE_ENABLED if mode else NVML_FEATURE_DISABLED
        return [state, state]
    return mode
