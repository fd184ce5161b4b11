"""AMD GPU telemetry (torchscale/rank/telemetry/amdsmi_source.py) on a fake `amdsmi` module, and the
rank's choice of source under ROCm's torch. No AMD GPU or amdsmi is needed: where amdsmi is not
importable (this machine), every GPU field is null with "amdsmi not installed".
"""

from __future__ import annotations

import enum
import sys
import time
import types
from typing import Any

import pytest
import torch

from torchscale.contracts.cell_settings import TelemetryConfig
from torchscale.contracts.wording import why
from torchscale.contracts.wording.cell_telemetry import said
from torchscale.rank.telemetry import rank as rank_module
from torchscale.rank.telemetry.amdsmi_source import AmdSmiSource, pci_address
from torchscale.rank.telemetry.nvml_source import NvmlSource
from torchscale.rank.telemetry.process_source import ProcessSource
from torchscale.rank.telemetry.sampler import Sampler
from torchscale.rank.telemetry.samples import GPU_FIELDS
from torchscale.rank.telemetry.window_figures import summarise_rank

ADDRESS = "0000:0c:00"  # torch's PCI fields of the rank's device, as pci_address() spells them


class AmdSmiLibraryException(Exception):  # amdsmi's own name
    def __init__(self, err_code: int) -> None:
        super().__init__(f"Error code:\n\t{err_code} | AMDSMI_STATUS_{err_code}")
        self.err_code = err_code


NOT_SUPPORTED = AmdSmiLibraryException(2)


class FakeAmdSmi(types.ModuleType):
    """The amdsmi calls the source makes; `gpus`: BDF -> {query: answer or exception}."""

    class AmdSmiTemperatureType(enum.IntEnum):
        EDGE = 0
        HOTSPOT = 1

    class AmdSmiTemperatureMetric(enum.IntEnum):
        CURRENT = 0

    class AmdSmiClkType(enum.IntEnum):
        GFX = 1

    def __init__(self, gpus: dict[str, dict[str, Any]]) -> None:
        super().__init__("amdsmi")
        self.gpus = gpus
        self.calls: list[str] = []

    def _answer(self, handle: str, query: str) -> Any:
        self.calls.append(query)
        value = self.gpus[handle][query]
        if isinstance(value, Exception):
            raise value
        return value

    def amdsmi_init(self) -> None:
        self.calls.append("amdsmi_init")

    def amdsmi_get_processor_handles(self) -> list[str]:
        return list(self.gpus)

    def amdsmi_get_gpu_device_bdf(self, handle: str) -> str:
        return handle

    def amdsmi_get_gpu_asic_info(self, handle: str) -> dict[str, Any]:
        return {"market_name": self.gpus[handle].get("name", "AMD Instinct MI300X")}

    def amdsmi_get_gpu_device_uuid(self, handle: str) -> str:
        return f"uuid-{handle}"

    def amdsmi_get_gpu_activity(self, handle: str) -> dict[str, Any]:
        return {"gfx_activity": self._answer(handle, "activity"), "umc_activity": 0}

    def amdsmi_get_gpu_vram_usage(self, handle: str) -> dict[str, Any]:
        return {"vram_used": self._answer(handle, "vram_mib"), "vram_total": 196592}

    def amdsmi_get_power_info(self, handle: str) -> Any:
        return self._answer(handle, "power")

    def amdsmi_get_temp_metric(self, handle: str, sensor: Any, metric: Any) -> Any:
        assert sensor == self.AmdSmiTemperatureType.HOTSPOT
        return self._answer(handle, "temperature")

    def amdsmi_get_clock_info(self, handle: str, clock: Any) -> dict[str, Any]:
        assert clock == self.AmdSmiClkType.GFX
        return {"clk": self._answer(handle, "gfx_clock"), "min_clk": 500}


def gpu(**answers: Any) -> dict[str, Any]:
    base = {
        "activity": 97,
        "vram_mib": 1024,
        "power": {"current_socket_power": 650, "average_socket_power": 600},
        "temperature": 71,
        "gfx_clock": 2100,
    }
    return base | answers


def sampled(fake: FakeAmdSmi | None, address: str = ADDRESS) -> Any:
    """One rank's summary after two short windows on the fake (None: the real import)."""
    sampler = Sampler([AmdSmiSource(address, module=fake), ProcessSource()], 0.02, "cuda:0")
    for _ in range(2):
        sampler.start()
        time.sleep(0.08)
        sampler.stop()
    return summarise_rank(0, "host", sampler.report(), floor_s=0.0, counter_step_s=0.0)


def test_no_amdsmi_nulls_every_gpu_field_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", None)  # import amdsmi raises ImportError
    rank = sampled(None)
    for name in ("gpu_util_pct", "gpu_memory_used_bytes", "power_w", "temperature_c"):
        assert rank.unavailable[name] == said("amdsmi.not_installed")
    assert rank.unavailable["energy_j"] == said("amdsmi.not_installed")
    assert rank.unavailable["throttled_fraction"] == said("amdsmi.not_installed")
    assert "amdsmi not installed" in str(why(said("amdsmi.not_installed")))
    assert rank.cpu_util_pct is not None and rank.rss_bytes is not None  # the process still


def test_reads_the_ranks_gpu_by_pci_address() -> None:
    fake = FakeAmdSmi(
        {
            "0000:05:00.0": gpu(activity=3, power={"current_socket_power": 140}),
            f"{ADDRESS}.0": gpu(),
        }
    )
    rank = sampled(fake)
    assert rank.gpu_name == "AMD Instinct MI300X"
    assert rank.gpu_uuid == f"uuid-{ADDRESS}.0"
    assert rank.gpu_util_pct is not None and rank.gpu_util_pct.mean == 97
    assert rank.power_w is not None and rank.power_w.max == 650
    assert rank.gpu_memory_used_bytes is not None
    assert rank.gpu_memory_used_bytes.max == 1024 * 2**20  # amdsmi answers MiB
    assert rank.temperature_c is not None and rank.temperature_c.max == 71
    assert rank.sm_clock_mhz is not None and rank.sm_clock_mhz.max == 2100
    # energy from the power samples; no NVML mask on AMD, said so
    assert rank.energy_method == "power_integral" and rank.energy_j is not None
    assert "amdsmi has no such mask" in str(why(rank.unavailable["throttled_fraction"]))


def test_average_power_where_current_is_not_reported() -> None:
    power = {"current_socket_power": "N/A", "average_socket_power": 700}
    rank = sampled(FakeAmdSmi({f"{ADDRESS}.0": gpu(power=power)}))
    assert rank.power_w is not None and rank.power_w.mean == 700


def test_unsupported_and_na_fields_are_null_with_the_reason_and_asked_once() -> None:
    fake = FakeAmdSmi({f"{ADDRESS}.0": gpu(temperature=NOT_SUPPORTED, gfx_clock="N/A")})
    rank = sampled(fake)
    assert rank.temperature_c is None and "AmdSmiLibraryException" in str(
        why(rank.unavailable["temperature_c"])
    )
    assert rank.sm_clock_mhz is None and "'N/A'" in str(why(rank.unavailable["sm_clock_mhz"]))
    assert fake.calls.count("temperature") == 1 and fake.calls.count("gfx_clock") == 1
    assert rank.gpu_util_pct is not None  # the other fields go on


def test_no_gpu_at_torchs_address_is_the_reason() -> None:
    rank = sampled(FakeAmdSmi({"0000:05:00.0": gpu()}))
    assert rank.power_w is None
    assert (
        str(why(rank.unavailable["power_w"])) == f"no amdsmi GPU at torch's PCI address {ADDRESS}"
    )


def test_pci_address_from_torchs_properties() -> None:
    props = types.SimpleNamespace(pci_domain_id=0, pci_bus_id=12, pci_device_id=0)
    assert pci_address(props) == ADDRESS
    assert pci_address(types.SimpleNamespace(name="old torch")) is None


def _hip_torch(monkeypatch: pytest.MonkeyPatch, props: Any) -> None:
    monkeypatch.setattr(torch.version, "hip", "6.3.42131", raising=False)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: props)


def test_rocm_torch_samples_through_amdsmi_not_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    props = types.SimpleNamespace(pci_domain_id=0, pci_bus_id=12, pci_device_id=0, uuid="x")
    _hip_torch(monkeypatch, props)
    sampler = rank_module.rank_sampler(TelemetryConfig(), torch.device("cuda", 0))
    assert sampler is not None
    gpu_sources = [s for s in sampler.sources if set(s.fields) == set(GPU_FIELDS)]
    assert len(gpu_sources) == 1 and isinstance(gpu_sources[0], AmdSmiSource)
    assert not any(isinstance(s, NvmlSource) for s in sampler.sources)
    assert gpu_sources[0].address == ADDRESS


def test_rocm_torch_without_pci_fields_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    _hip_torch(monkeypatch, types.SimpleNamespace(uuid="x"))
    sampler = rank_module.rank_sampler(TelemetryConfig(), torch.device("cuda", 0))
    assert sampler is not None
    assert "no PCI address" in str(why(sampler.report().unavailable["power_w"]))
