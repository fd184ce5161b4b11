"""Schema 20 stores why a GPU's power limit is unknown as a code and its figures
(contracts/power_limit.py writes, contracts/wording/power_limit_reasons.py words); the reader
turns the sentences schemas 16-19 stored back into codes (upgrades/power_limit_words.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fake_nvml import NOT_SUPPORTED, FakeGpu, FakeHandle, FakeNvml
from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.gpu_clocks import judge_clocks
from torchscale.contracts.power_limit import PowerLimit, node_power_cap, read_power_limit
from torchscale.contracts.wording.perf import power_words
from torchscale.offline.results.upgrades.stored_words import upgrade_v19
from torchscale.rank.telemetry.nvml_source import NvmlSource

# one finding per reason a writer stores; today's words for each are what schema 19 stored
WRITTEN_BY_19 = [
    Finding(code="power_limit.no_torch_uuid"),
    Finding(code="power_limit.nvml_unavailable", figures={"error": "NVMLError_LibraryNotFound"}),
    Finding(code="power_limit.nvml_init_failed", figures={"error": "NVMLError_DriverNotLoaded"}),
    Finding(code="power_limit.no_gpu_with_uuid", figures={"uuid": "GPU-1234"}),
    Finding(
        code="power_limit.device_undescribed",
        figures={"device": "cuda:0", "error": "CUDA error: no device"},
    ),
    Finding(code="power_limit.no_pynvml", figures={"error": "No module named 'pynvml'"}),
    Finding(
        code="power_limit.uuid_not_found",
        figures={"tried": ["GPU-1: NVMLError_NotFound", "MIG-1: NVMLError_NotFound"]},
    ),
    Finding(
        code="power_limit.queries_failed",
        figures={"errors": {"nvmlDeviceGetEnforcedPowerLimit": "NVMLError_NotSupported: No"}},
    ),
    Finding(
        code="power_limit.queries_failed",
        figures={
            "errors": {
                "nvmlDeviceGetEnforcedPowerLimit": "NVMLError_NotSupported",
                "nvmlDeviceGetPowerManagementDefaultLimit": "NVMLError_Unknown",
            }
        },
    ),
]


def _cell(reason: Any) -> dict[str, Any]:
    limit = {"enforced_w": None, "default_w": None, "unavailable": reason}
    return {"schema_version": 19, "telemetry": {"ranks": [{"rank": 0, "power_limit": limit}]}}


def _upgraded(reason: Any) -> Any:
    return upgrade_v19(_cell(reason))["telemetry"]["ranks"][0]["power_limit"]["unavailable"]


@pytest.mark.parametrize("finding", WRITTEN_BY_19, ids=lambda f: f.code)
def test_a_sentence_of_schema_19_reads_as_its_code(finding: Finding) -> None:
    """Exactly the sentence: other words around it stay as stored."""
    words = wording.say(finding)
    assert _upgraded(words) == finding.model_dump()
    assert _upgraded(f"older: {words}") == f"older: {words}"


def test_todays_writers_store_codes_and_the_readers_word_them() -> None:
    """read_power_limit and the telemetry's NVML source store a finding, never a sentence;
    node_power_cap and judge_clocks carry it as a figure their words say."""
    assert read_power_limit([]).unavailable == Finding(code="power_limit.no_torch_uuid")
    source = NvmlSource("1234", module=FakeNvml([]))
    source.open()
    assert source.power_limit is not None
    assert isinstance(source.power_limit.unavailable, Finding)
    unread = PowerLimit(
        unavailable=Finding(code="power_limit.no_gpu_with_uuid", figures={"uuid": "GPU-9"})
    )
    _, figures = node_power_cap([unread])
    assert figures["why"] == unread.unavailable.model_dump()  # type: ignore[union-attr]
    assert "(NVML has no GPU with UUID GPU-9)" in power_words(figures)
    judged = judge_clocks({"SwPowerCap": 10}, 10, 1500.0, 1980.0, None, unread)
    assert "power limit unknown (NVML has no GPU with UUID GPU-9)" in wording.say(judged.finding)


def test_a_failed_nvml_query_is_stored_as_its_code() -> None:
    fake = FakeNvml([FakeGpu(enforced_power_limit_mw=NOT_SUPPORTED)])
    from torchscale.contracts.power_limit import power_limit_of

    limit = power_limit_of(fake, FakeHandle(0))
    assert isinstance(limit.unavailable, Finding)
    assert limit.unavailable.code == "power_limit.queries_failed"
