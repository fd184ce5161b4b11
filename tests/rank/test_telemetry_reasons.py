"""Why a telemetry figure is null is stored as a code and its figures (the samplers,
rank/telemetry/window_figures.py; worded by contracts/wording/cell_telemetry.py), never a
sentence."""

from __future__ import annotations

import time
from typing import Any

import torch

from tests.fake_nvml import NOT_SUPPORTED, FakeGpu, FakeNvml
from torchscale.contracts import wording
from torchscale.contracts.cell_settings import TelemetryConfig
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_telemetry import RankTelemetry
from torchscale.rank.telemetry.nvml_source import NvmlSource
from torchscale.rank.telemetry.process_source import ProcessSource
from torchscale.rank.telemetry.rank import rank_sampler
from torchscale.rank.telemetry.sampler import Sampler
from torchscale.rank.telemetry.window_figures import combine, summarise_rank

UUID = "4b1c9a5e-0000-4000-8000-00000000000a"


def _sampled(sampler: Sampler, windows: int = 2, seconds: float = 0.05) -> Any:
    for _ in range(windows):
        sampler.start()
        time.sleep(seconds)
        sampler.stop()
    return sampler.report()


def _nvml(fake: FakeNvml) -> Sampler:
    return Sampler([NvmlSource(UUID, module=fake), ProcessSource()], 0.01, "cuda:0")


def _every_reason(ranks: list[RankTelemetry], cell: dict[str, Any]) -> list[Any]:
    telemetry, unavailable, _ = combine(ranks, 10, 2, 16, 8)
    reasons = [*unavailable.values()]
    for rank in telemetry.ranks:
        reasons += [*rank.unavailable.values()]
        reasons += [*rank.load.unavailable.values()] if rank.load is not None else []
    for host in telemetry.hosts or []:
        reasons += [*host.unavailable.values()]
    cell.update(unavailable)
    return reasons


def test_todays_samplers_store_codes_never_words() -> None:
    """A CPU rank, a GPU that supports nothing, a GPU NVML cannot find and windows too short
    for NVML's averages: every reason of the ranks, their loads, the host and the cell's
    totals is a finding, worded only when shown."""
    cpu = rank_sampler(TelemetryConfig(interval_ms=10), torch.device("cpu"))
    assert cpu is not None
    unsupported = FakeGpu(
        uuid=f"GPU-{UUID}",
        temperature=NOT_SUPPORTED,
        energy_mj=NOT_SUPPORTED,
        sm_clock_max=0,
        clock_reasons=NOT_SUPPORTED,
        compute_pids=NOT_SUPPORTED,
    )
    reports = [
        _sampled(cpu),
        _sampled(_nvml(FakeNvml([unsupported]))),
        _sampled(_nvml(FakeNvml([]))),
        _sampled(_nvml(FakeNvml([FakeGpu(uuid=f"GPU-{UUID}")]))),  # 50 ms windows: too short
    ]
    ranks = [summarise_rank(i, "h", report) for i, report in enumerate(reports)]
    cell: dict[str, Any] = {}
    reasons = _every_reason(ranks, cell)
    assert len(reasons) > 40
    assert [r for r in reasons if not isinstance(r, Finding)] == []
    codes = {r.code for r in reasons}
    assert {"telemetry.cpu_no_gpu", "telemetry.queries_failed", "telemetry.by_rank"} <= codes
    assert "unavailable.nvml_longest_window" in codes
    assert "power_limit.uuid_not_found" in codes
    for reason in reasons:  # each worded by today's phrase, none shown as its bare code
        assert not wording.say(reason).startswith(reason.code)
    assert "rank 0: CPU cell: no GPU to sample" in str(wording.say(cell["telemetry.power_w_mean"]))
