"""Schema 20 stores why a telemetry figure is null as a code and its figures (the samplers,
rank/telemetry/window_figures.py; worded by contracts/wording/sampler_reasons.py), never a
sentence; the reader turns the sentences schemas 16-19 stored back into codes
(offline/results/upgrades/telemetry_words.py) where today's words are the stored ones."""

from __future__ import annotations

import time
from typing import Any

import pytest
import torch

from tests.fake_nvml import NOT_SUPPORTED, FakeGpu, FakeNvml
from torchscale.contracts import wording
from torchscale.contracts.cell_settings import TelemetryConfig
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_telemetry import RankTelemetry
from torchscale.offline.results.upgrades.stored_words import upgrade_v19
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


# one finding per reason a writer stores; today's words for each are what schema 19 stored
WRITTEN_BY_19 = [
    Finding(code="telemetry.cpu_no_gpu"),
    Finding(code="telemetry.no_sample"),
    Finding(code="telemetry.namespace_pids"),
    Finding(code="amdsmi.not_installed"),
    Finding(code="telemetry.psutil_unusable", figures={"error": "ImportError: no psutil"}),
    Finding(code="telemetry.psutil_failed", figures={"error": "NoSuchProcess: gone"}),
    Finding(code="unavailable.sampler_hung", figures={"stop_s": 10.0}),
    Finding(
        code="telemetry.queries_failed",
        figures={"errors": {"nvmlDeviceGetTemperature": "NVMLError_NotSupported: Not Supported"}},
    ),
    Finding(
        code="telemetry.window_broken",
        figures={"failure": {"code": "unavailable.sampler_hung", "figures": {"stop_s": 10.0}}},
    ),
    Finding(code="unavailable.nvml_longest_window", figures={"window_s": 0.108, "floor_s": 1.0}),
    Finding(code="power_limit.uuid_not_found", figures={"tried": ["GPU-1: NVMLError_NotFound"]}),
]


def _cell(reason: Any) -> dict[str, Any]:
    rank = {"rank": 0, "unavailable": {"power_w": reason}, "load": {"unavailable": {"x": reason}}}
    host = {"host": "h", "unavailable": {"other_gpu_pids": reason}}
    return {"schema_version": 19, "telemetry": {"ranks": [rank], "hosts": [host]}}


def _upgraded(reason: Any) -> list[Any]:
    telemetry = upgrade_v19(_cell(reason))["telemetry"]
    rank, host = telemetry["ranks"][0], telemetry["hosts"][0]
    return [
        rank["unavailable"]["power_w"],
        rank["load"]["unavailable"]["x"],
        host["unavailable"]["other_gpu_pids"],
    ]


@pytest.mark.parametrize("finding", WRITTEN_BY_19, ids=lambda f: f.code)
def test_a_sentence_of_schema_19_reads_as_its_code(finding: Finding) -> None:
    """Exactly the sentence: other words around it stay as stored."""
    words = wording.say(finding)
    assert _upgraded(words) == [finding.model_dump()] * 3
    assert _upgraded(f"older: {words}") == [f"older: {words}"] * 3
