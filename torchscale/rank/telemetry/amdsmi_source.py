"""One AMD GPU through amdsmi (the Python package of ROCm 6 and later): utilisation, VRAM used,
power, temperature and GFX clock, read where pynvml reads an NVIDIA GPU.

docs/telemetry.md, "On AMD GPUs (ROCm)", has the calls, the fields left null and why the GPU
is found by its PCI address (never an index or a UUID). Without amdsmi every GPU field is null
with `NOT_INSTALLED` and the process fields are still sampled. Every call happens in the sampler
thread; a query amdsmi does not support on this GPU (NOT_SUPPORTED, an 'N/A' answer) is not
asked again, any other error loses that one sample.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import Reason
from torchscale.contracts.wording.cell_telemetry import said
from torchscale.contracts.wording.spell import MIB
from torchscale.rank.telemetry.samples import GPU_FIELDS, GPU_PROCESSES

NOT_READ = {
    "clock_reasons": said("amdsmi.no_clock_reasons"),
    GPU_PROCESSES: said("amdsmi.no_process_list"),
    "energy_j": said("amdsmi.no_energy_counter"),
}
# amdsmi_status_t codes after which a query will never answer on this GPU (amdsmi.h)
PERMANENT_CODES = {2: "NOT_SUPPORTED", 3: "NOT_YET_IMPLEMENTED", 10: "NO_PERM"}


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def _permanent(exc: BaseException) -> bool:
    """Unsupported here for good: an error code that says so, or a binding without the call."""
    code = getattr(exc, "err_code", None)
    return code in PERMANENT_CODES or isinstance(exc, (AttributeError, KeyError))


def pci_address(props: Any) -> str | None:
    """`dddd:bb:dd` of a torch device's properties (torch >= 2.6 has the PCI fields), or None."""
    try:
        domain, bus, device = props.pci_domain_id, props.pci_bus_id, props.pci_device_id
    except AttributeError:
        return None
    return f"{int(domain):04x}:{int(bus):02x}:{int(device):02x}"


class AmdSmiSource:
    """Reads GPU_FIELDS of the AMD GPU at the PCI address torch reported for this rank."""

    fields = GPU_FIELDS

    def __init__(self, address: str, module: ModuleType | None = None) -> None:
        self.address = address.lower()
        self.unavailable: dict[str, Reason] = {}
        self.errors: dict[str, Reason] = {}
        self.name: str | None = None
        self.uuid: str | None = None
        self._module = module
        self._smi: Any = None
        self._handle: Any = None

    def _fail_all(self, why: Finding) -> None:
        for name in (*self.fields, GPU_PROCESSES, "energy_j"):
            self.unavailable.setdefault(name, why)

    def open(self) -> None:
        try:
            smi: Any = self._module or importlib.import_module("amdsmi")
        except ImportError:
            self._fail_all(said("amdsmi.not_installed"))
            return
        except Exception as exc:  # the package is there, its libamd_smi.so is not
            self._fail_all(said("amdsmi.load_failed", error=error_text(exc)))
            return
        try:
            smi.amdsmi_init()
            handles = [h for h in smi.amdsmi_get_processor_handles() if self._at(smi, h)]
        except Exception as exc:
            self._fail_all(said("amdsmi.list_failed", error=error_text(exc)))
            return
        if len(handles) != 1:
            self._fail_all(
                said("amdsmi.no_gpu_at", address=self.address)
                if not handles
                else said("amdsmi.gpus_at", count=len(handles), address=self.address)
            )
            return
        self._smi, self._handle = smi, handles[0]
        self.unavailable.update(NOT_READ)
        self.name = self._label(lambda: smi.amdsmi_get_gpu_asic_info(self._handle)["market_name"])
        self.uuid = self._label(lambda: smi.amdsmi_get_gpu_device_uuid(self._handle))

    def _at(self, smi: Any, handle: Any) -> bool:
        """Whether amdsmi's `dddd:bb:dd.f` address of `handle` is torch's (any function); a
        GPU whose address amdsmi cannot read is not this rank's."""
        try:
            bdf = str(smi.amdsmi_get_gpu_device_bdf(handle)).lower()
        except Exception:
            return False
        return bdf.startswith(f"{self.address}.")

    @staticmethod
    def _label(read: Callable[[], Any]) -> str | None:
        try:
            return str(read())
        except Exception:
            return None  # a name or UUID is a label only

    def _value(self, name: str, query: str, read: Callable[[Any], Any]) -> float | None:
        """`read(amdsmi)`'s number, or None with the reason kept under `name`."""
        if name in self.unavailable or self._handle is None:
            return None
        try:
            value = read(self._smi)
        except Exception as exc:
            why = said("telemetry.queries_failed", errors={query: error_text(exc)})
            (self.unavailable if _permanent(exc) else self.errors)[name] = why
            return None
        if not isinstance(value, int | float):  # 'N/A': this GPU does not report it
            self.unavailable[name] = said("amdsmi.not_reported", query=query, value=repr(value))
            return None
        return float(value)

    def _power(self, smi: Any) -> Any:
        """Socket power in W: `current_socket_power`, where 'N/A' (older gpu_metrics
        versions) the average one, as `amd-smi monitor` does."""
        info = smi.amdsmi_get_power_info(self._handle)
        current = info["current_socket_power"]
        return current if current != "N/A" else info["average_socket_power"]

    def read(self, into: dict[str, float | None]) -> None:
        if self._handle is None:
            return
        h = self._handle
        into["gpu_util_pct"] = self._value(
            "gpu_util_pct",
            "amdsmi_get_gpu_activity",
            lambda s: s.amdsmi_get_gpu_activity(h)["gfx_activity"],
        )
        vram = self._value(
            "gpu_memory_used_bytes",
            "amdsmi_get_gpu_vram_usage",
            lambda s: s.amdsmi_get_gpu_vram_usage(h)["vram_used"],  # MiB
        )
        into["gpu_memory_used_bytes"] = vram * MIB if vram is not None else None
        into["power_w"] = self._value("power_w", "amdsmi_get_power_info", self._power)
        into["temperature_c"] = self._value(
            "temperature_c",
            "amdsmi_get_temp_metric(HOTSPOT)",  # junction temperature, °C
            lambda s: s.amdsmi_get_temp_metric(
                h, s.AmdSmiTemperatureType.HOTSPOT, s.AmdSmiTemperatureMetric.CURRENT
            ),
        )
        into["sm_clock_mhz"] = self._value(
            "sm_clock_mhz",
            "amdsmi_get_clock_info(GFX)",
            lambda s: s.amdsmi_get_clock_info(h, s.AmdSmiClkType.GFX)["clk"],
        )
        into["clock_reasons"] = None

    def energy_mj(self) -> None:
        return None
