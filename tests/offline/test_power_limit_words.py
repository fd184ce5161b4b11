"""Why a GPU's power limit is unknown is stored as a code and its figures (contracts/power_limit.py
writes, contracts/wording/cell_telemetry.py words)."""

from __future__ import annotations

from tests.fake_nvml import NOT_SUPPORTED, FakeGpu, FakeHandle, FakeNvml
from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.gpu_clocks import judge_clocks
from torchscale.contracts.power_limit import PowerLimit, node_power_cap, read_power_limit
from torchscale.contracts.wording.validate_measured import power_words
from torchscale.rank.telemetry.nvml_source import NvmlSource


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
