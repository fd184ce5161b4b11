"""Telemetry: the sampler thread on a fake pynvml and on psutil, the summary math (energy by
counter and by trapezoid, clock-event decoding, NotSupported fields), the CUDA allocator
figures, the cell totals, the v3 -> v4 upgrade, and one real 2-rank CPU torchrun cell whose
result carries CPU telemetry and null GPU fields with their reasons. The GPU tests (marked
`gpu`) sample a real GPU under a matmul loop and run a one-cell CUDA benchmark.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.fake_nvml import (
    NOT_SUPPORTED,
    FakeGpu,
    FakeNvml,
    NVMLError_FunctionNotFound,
    NVMLError_Unknown,
)
from torchscale.contracts.cell import CellIdentity
from torchscale.contracts.cell_settings import (
    DataConfig,
    MeasurementConfig,
    ModelSpec,
    TelemetryConfig,
    TrainingConfig,
)
from torchscale.contracts.finding import Finding
from torchscale.contracts.gpu_clocks import judge_clocks, throttle_warning
from torchscale.contracts.power_limit import PowerLimit
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.cell_telemetry import FieldStats, RankLoad, RankTelemetry
from torchscale.contracts.wording import say, why
from torchscale.contracts.wording.cell_reasons import coded
from torchscale.contracts.wording.cell_telemetry import said
from torchscale.contracts.wording.cell_warnings import warning_words
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.offline.results.documents import read_cell
from torchscale.offline.results.frame import cells_table, ranks_table
from torchscale.rank.telemetry import sampler as sampler_module
from torchscale.rank.telemetry.nvml_source import NvmlSource, uuid_candidates
from torchscale.rank.telemetry.process_source import ProcessSource
from torchscale.rank.telemetry.rank import rank_sampler
from torchscale.rank.telemetry.sampler import Sampler
from torchscale.rank.telemetry.samples import GPU_FIELDS, SamplerReport, WindowSamples
from torchscale.rank.telemetry.window_figures import (
    clock_reasons,
    combine,
    counter_j,
    cpu_spans,
    cpu_stats,
    field_stats,
    rank_verdicts,
    summarise_rank,
    trapezoid_j,
    window_energy,
)
from torchscale.rank.worker.allocator import allocator_stats

REPO_ROOT = Path(__file__).resolve().parents[2]
V3_DIR = Path(__file__).parents[1] / "fixtures" / "cpu_sweep_profile" / "v3_fixture"
# what a field NVML does not support leaves in `unavailable`
NOT_SUPPORTED_REASON = Finding(code="telemetry.read_failed", figures={"error": "NotSupported"})
# what the fixture's cells (torchscale 0.3.0) say of the telemetry they did not record
NOT_RECORDED = Finding(code="unavailable.not_recorded", figures={"schema": 3})


def clocks(flagged: dict[str, int], samples: int = 10, limit: PowerLimit | None = None) -> Any:
    """The clock verdict of `flagged` reasons in `samples` in-window samples at 1970 MHz of an
    H100's 1980 (at the default limit where `limit` is not given)."""
    limit = limit or PowerLimit(enforced_w=700.0, default_w=700.0)
    return judge_clocks(flagged, samples, 1970.0, 1980.0, None, limit, power_w=690.0)


UUID = "4b1c9a5e-0000-4000-8000-00000000000a"  # as torch prints it: no "GPU-" prefix
INTERVAL_S = 0.02


# ====================================================================== fake GPU, sampler


def steady_energy(watts: float) -> Callable[[], float]:
    """A total-energy counter (mJ) of a GPU drawing `watts` since the call."""
    t0 = time.perf_counter()
    return lambda: 5_000_000 + watts * (time.perf_counter() - t0) * 1000


def gpu(**fields: Any) -> FakeGpu:
    return FakeGpu(uuid=f"GPU-{UUID}", **fields)


def nvml_sampler(fake: FakeNvml, interval_s: float = INTERVAL_S) -> Sampler:
    return Sampler([NvmlSource(UUID, module=fake), ProcessSource()], interval_s, "cuda:0")


def summarise(rank: int, host: str, report: SamplerReport) -> RankTelemetry:
    """The rank's figures with no averaging floor and an exact energy counter: the sampler's
    mechanics in windows of a few tenths of a second (the floor has its own tests)."""
    return summarise_rank(rank, host, report, floor_s=0.0, counter_step_s=0.0)


def sample_windows(sampler: Sampler, seconds: float = 0.3, windows: int = 2) -> SamplerReport:
    for _ in range(windows):
        sampler.start()
        time.sleep(seconds)
        sampler.stop()
    return sampler.report()


def test_uuid_spellings() -> None:
    assert uuid_candidates(UUID) == [f"GPU-{UUID}", f"MIG-{UUID}"]
    assert uuid_candidates(f"GPU-{UUID}") == [f"GPU-{UUID}"]
    assert uuid_candidates(f"MIG-{UUID} ") == [f"MIG-{UUID}"]


def test_sampler_reads_the_ranks_gpu_by_uuid_and_counts_energy() -> None:
    """Two GPUs, the rank's second in NVML's order (CUDA_VISIBLE_DEVICES reordered them): the
    UUID finds it; energy from the counter matches 250 W over the sampled span."""
    other = FakeGpu(uuid="GPU-other", power_mw=90_000, utilization=1)
    mine = gpu(power_mw=250_000, utilization=97, energy_mj=steady_energy(250.0), sm_clock=1755)
    fake = FakeNvml([other, mine])
    report = sample_windows(nvml_sampler(fake))
    assert report.gpu_uuid == f"GPU-{UUID}"
    assert report.gpu_name == mine.name
    assert fake.called("nvmlDeviceGetHandleByUUID") == [(f"GPU-{UUID}",)]
    assert report.unavailable == {} and report.errors == {}
    rank = summarise(0, "host", report)
    assert rank.gpu_util_pct == FieldStats(mean=97, max=97)
    # power by the counter: its joules over its seconds, the highest NVML reading as the max
    assert rank.power_method == "counter" and rank.power_w is not None
    assert rank.power_w.mean == pytest.approx(250, rel=0.01) and rank.power_w.max >= 250
    assert rank.sm_clock_mhz == FieldStats(mean=1755, max=1755)
    assert rank.temperature_c is not None and rank.temperature_c.max == 60
    assert rank.energy_method == "counter"
    spans = [w.energy_t for w in report.windows]
    assert all(span is not None for span in spans)
    expected = sum(250.0 * (b - a) for a, b in (s for s in spans if s is not None))
    assert rank.energy_j == pytest.approx(expected, rel=0.01)
    assert rank.energy_j == pytest.approx(250.0 * rank.sampled_s, rel=0.05)
    # ~0.3 s / 20 ms + the two edge samples per window (a loaded machine may miss a few ticks)
    for window in report.windows:
        assert window.complete
        assert 8 <= len(window.t) <= 0.3 / INTERVAL_S + 3
    assert rank.cpu_util_pct is not None and rank.rss_bytes is not None
    assert rank.unavailable == {}


def test_nvml_is_called_only_in_the_sampler_thread() -> None:
    fake = FakeNvml([gpu()])
    threads: list[str] = []
    record = fake._record

    def spy(name: str, *args: Any) -> None:
        threads.append(threading.current_thread().name)
        record(name, *args)

    fake._record = spy  # type: ignore[method-assign]
    sampler = nvml_sampler(fake)
    sampler.start()
    assert threading.current_thread().name != "torchscale-telemetry"
    sampler.stop()
    sampler.report()
    assert threads and set(threads) == {"torchscale-telemetry"}


def test_not_supported_fields_are_null_with_the_reason_and_asked_once() -> None:
    fake = FakeNvml([gpu(temperature=NOT_SUPPORTED, energy_mj=NOT_SUPPORTED, power_mw=200_000)])
    report = sample_windows(nvml_sampler(fake), seconds=0.1)
    rank = summarise(0, "host", report)
    assert rank.temperature_c is None
    assert "NotSupported" in str(why(rank.unavailable["temperature_c"]))
    assert len(fake.called("nvmlDeviceGetTemperature")) == 1  # never asked again
    assert len(fake.called("nvmlDeviceGetTotalEnergyConsumption")) == 1
    # the rest goes on; energy from the power samples instead of the counter
    assert rank.power_w == FieldStats(mean=200, max=200)
    assert rank.energy_method == "power_integral"
    assert rank.energy_j == pytest.approx(200.0 * rank.sampled_s, rel=1e-6)
    assert "energy_j" not in rank.unavailable


def test_no_counter_and_no_power_means_no_energy_with_both_reasons() -> None:
    fake = FakeNvml([gpu(energy_mj=NOT_SUPPORTED, power_mw=NOT_SUPPORTED)])
    rank = summarise(0, "host", sample_windows(nvml_sampler(fake), seconds=0.05))
    assert rank.energy_j is None and rank.energy_method is None and rank.power_w is None
    assert "nvmlDeviceGetTotalEnergyConsumption" in str(why(rank.unavailable["energy_j"]))
    assert "nvmlDeviceGetPowerUsage" in str(why(rank.unavailable["energy_j"]))
    assert rank.gpu_util_pct is not None


def test_a_transient_error_loses_one_sample_not_the_field() -> None:
    answers = iter([NVMLError_Unknown()])

    def flaky() -> Any:
        return next(answers, 80)

    fake = FakeNvml([gpu(utilization=flaky)])
    report = sample_windows(nvml_sampler(fake), seconds=0.1, windows=1)
    assert "gpu_util_pct" not in report.unavailable
    assert "NVMLError_Unknown" in str(why(report.errors["gpu_util_pct"]))
    rank = summarise(0, "host", report)
    assert rank.gpu_util_pct == FieldStats(mean=80, max=80)
    assert report.windows[0].column("gpu_util_pct")[0] is None


def test_clock_reasons_fall_back_to_the_old_query_name() -> None:
    fake = FakeNvml([gpu(clock_reasons=0x4 | 0x1)], driver_has_clocks_event_reasons=False)
    rank = summarise(0, "host", sample_windows(nvml_sampler(fake), seconds=0.1))
    assert rank.clock_event_reasons == ["SwPowerCap"]
    assert rank.throttled_fraction == 1.0
    # at its top clock and default limit: the GPU holds its power limit, not throttled
    assert rank.clock_verdict == "at_power_limit" and rank.throttle_reasons == []
    # the new name is tried once; every later sample asks the old name directly
    assert len(fake.called("nvmlDeviceGetCurrentClocksEventReasons")) == 1
    assert len(fake.called("nvmlDeviceGetCurrentClocksThrottleReasons")) == rank.samples


def test_unknown_uuid_nulls_the_gpu_but_keeps_the_process() -> None:
    fake = FakeNvml([FakeGpu(uuid="GPU-someone-else")])
    rank = summarise(0, "host", sample_windows(nvml_sampler(fake), seconds=0.05))
    for name in ("gpu_util_pct", "power_w", "temperature_c", "sm_clock_mhz", "energy_j"):
        assert "no NVML device with torch's UUID" in str(why(rank.unavailable[name]))
    assert f"GPU-{UUID}" in str(why(rank.unavailable["power_w"]))
    assert rank.cpu_util_pct is not None and rank.rss_bytes is not None


def test_nvml_init_failure_is_the_reason() -> None:
    fake = FakeNvml([gpu()], init_error=NVMLError_FunctionNotFound())
    rank = summarise(0, "host", sample_windows(nvml_sampler(fake), seconds=0.05))
    assert rank.power_w is None
    assert str(why(rank.unavailable["power_w"])).startswith("nvmlInit failed")


def test_sources_open_once_over_many_windows() -> None:
    fake = FakeNvml([gpu()])
    sample_windows(nvml_sampler(fake), seconds=0.03, windows=3)
    assert len(fake.called("nvmlInit")) == 1
    assert len(fake.called("nvmlDeviceGetHandleByUUID")) == 1


class HangingSource:
    """A source whose reads block until released (a hung driver call)."""

    fields = ("x",)

    def __init__(self) -> None:
        self.unavailable: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        self.release = threading.Event()
        self.reads = 0

    def open(self) -> None:
        pass

    def read(self, into: dict[str, float | None]) -> None:
        self.reads += 1
        if self.reads > 1:
            self.release.wait()
        into["x"] = 1.0

    def energy_mj(self) -> float | None:
        return None


def test_a_hung_sampler_is_abandoned_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sampler_module, "STOP_TIMEOUT_S", 0.2)
    source = HangingSource()
    sampler = Sampler([source], 0.01, "cpu")
    try:
        sampler.start()
        # the read stays blocked until `finally`: a stop() that waited for it would never
        # return, so it runs in a thread whose join bound only turns that hang into a failure
        stopped: list[Any] = []
        stopper = threading.Thread(target=lambda: stopped.append(sampler.stop()), daemon=True)
        stopper.start()
        stopper.join(120)
        assert stopped, "stop() waited for the hung read instead of abandoning it"
        (window,) = stopped
        assert not window.complete and window.failure is not None
        sampler.start()  # later windows: not sampled, said so
        assert not sampler.stop().complete
        assert source.reads == 2
        rank = summarise_rank(0, "host", sampler.report())
        assert "did not stop" in str(why(rank.unavailable["windows"]))
        assert "did not stop" in str(why(rank.unavailable["energy_j"]))
    finally:
        source.release.set()


def test_sampler_start_stop_misuse() -> None:
    sampler = Sampler([ProcessSource()], 0.05, "cpu")
    with pytest.raises(RuntimeError, match="not running"):
        sampler.stop()
    sampler.start()
    with pytest.raises(RuntimeError, match="already running"):
        sampler.start()
    sampler.stop()
    with pytest.raises(ValueError, match="positive"):
        Sampler([], 0, "cpu")


# ============================================================================ psutil on CPU


def test_cpu_rank_samples_its_process_and_nulls_the_gpu_fields() -> None:
    sampler = rank_sampler(TelemetryConfig(interval_ms=20), torch.device("cpu"))
    assert sampler is not None
    sampler.start()
    deadline = time.perf_counter() + 0.3
    while time.perf_counter() < deadline:  # keep this process busy
        sum(i * i for i in range(1000))
    sampler.stop()
    rank = summarise_rank(0, "host", sampler.report())
    assert rank.device == "cpu" and rank.gpu_name is None
    assert rank.cpu_util_pct is not None
    assert 0 < rank.cpu_util_pct.mean <= 100 * (os.cpu_count() or 1) + 10
    assert rank.rss_bytes is not None and rank.rss_bytes.max > 10_000_000
    for name in ("gpu_util_pct", "gpu_memory_used_bytes", "power_w", "temperature_c"):
        assert rank.unavailable[name] == said("telemetry.cpu_no_gpu")
    assert rank.unavailable["throttled_fraction"] == said("telemetry.cpu_no_gpu")
    assert rank.unavailable["energy_j"] == said("telemetry.cpu_no_energy")
    assert rank.energy_j is None and rank.throttled_fraction is None


def test_telemetry_off_gives_no_sampler() -> None:
    assert rank_sampler(TelemetryConfig(enabled=False), torch.device("cpu")) is None


# ============================================================================= summary math


def window(
    t: list[float], energy: tuple[float | None, float | None] = (None, None), **cols: list[Any]
) -> WindowSamples:
    return WindowSamples(
        t=t,
        values={name: list(values) for name, values in cols.items()},
        energy_start_mj=energy[0],
        energy_stop_mj=energy[1],
        complete=True,
    )


def test_trapezoid_and_counter() -> None:
    # 100 W for 1 s, then a ramp to 300 W over 1 s: 100 + 200 = 300 J
    assert trapezoid_j([0.0, 1.0, 2.0], [100.0, 100.0, 300.0]) == pytest.approx(300.0)
    assert trapezoid_j([0.0, 1.0, 2.0], [100.0, None, 300.0]) == pytest.approx(400.0)
    assert trapezoid_j([0.0], [100.0]) is None
    assert counter_j(window([0, 1], energy=(1_000.0, 4_500.0))) == pytest.approx(3.5)
    assert counter_j(window([0, 1], energy=(4_500.0, 1_000.0))) is None  # driver reloaded
    assert counter_j(window([0, 1], energy=(None, 1_000.0))) is None


def test_window_energy_prefers_the_counter_in_every_window() -> None:
    power = [100.0, 100.0]
    both = [window([0, 1], (0, 150_000), power_w=power), window([5, 6], (0, 50_000), power_w=power)]
    assert window_energy(both) == (pytest.approx(200.0), "counter", None)
    # one window without the counter: all windows by power, never a mix
    half = [both[0], window([5, 6], (None, None), power_w=power)]
    assert window_energy(half) == (pytest.approx(200.0), "power_integral", None)
    energy, method, reason = window_energy([window([0, 1], (None, None), power_w=[None, 1.0])])
    assert energy is None and method is None and reason and "neither" in str(why(reason))
    broken = WindowSamples(t=[0.0], failure=said("telemetry.read_failed", error="it broke"))
    assert why(window_energy([broken])[2]) == "a window was not fully sampled: it broke"
    assert why(window_energy([])[2]) == "no window was sampled"


def test_clock_reason_decoding_ignores_idle_and_application_clocks() -> None:
    masks = [0x1, 0x1 | 0x2, 0x4, 0x10, 0x40 | 0x80, 0x8 | 0x20, None, 0x200]
    seen, fraction = clock_reasons([window(list(range(len(masks))), clock_reasons=masks)])
    assert seen == [
        "SwPowerCap",
        "HwSlowdown",
        "SyncBoost",
        "SwThermalSlowdown",
        "HwThermalSlowdown",
        "HwPowerBrakeSlowdown",
        "0x200",
    ]
    assert fraction == pytest.approx(3 / 7)  # of the 7 masks read, 3 with a slowdown
    assert clock_reasons([window([0.0, 1.0], clock_reasons=[0x1, 0x2 | 0x10])])[1] == 0.0
    assert clock_reasons([window([0.0], clock_reasons=[None])]) == ([], None)


def test_field_stats() -> None:
    assert field_stats([1.0, None, 3.0]) == FieldStats(mean=2.0, max=3.0)
    assert field_stats([None]) is None


def test_cpu_utilisation_over_spans() -> None:
    # 1 core busy for 0.5 s, then idle for 0.5 s, sampled every 0.1 s
    t = [i / 10 for i in range(11)]
    cpu = [min(x, 0.5) for x in t]
    spans = cpu_spans(t, cpu, 0.1)
    assert spans == pytest.approx([100.0] * 5 + [0.0] * 5)
    stats = cpu_stats([window(t, cpu_s=cpu)], min_span_s=0.1)
    assert stats is not None
    assert stats.mean == pytest.approx(50.0)
    assert stats.max == pytest.approx(100.0)
    # spans shorter than the minimum merge: a 10 ms tick cannot fake a 1000 % peak
    assert cpu_spans([0.0, 0.001, 0.2], [0.0, 0.01, 0.1], 0.1) == pytest.approx([50.0])
    assert cpu_spans([0.0, 0.15, 0.16], [0.0, 0.15, 0.16], 0.1) == pytest.approx([100.0])
    assert cpu_spans([0.0], [0.0], 0.1) == []


def rank_telemetry(rank: int, **fields: Any) -> RankTelemetry:
    defaults: dict[str, Any] = {
        "rank": rank,
        "host": "h",
        "device": f"cuda:{rank}",
        "gpu_name": "NVIDIA H100 80GB HBM3",
        "samples": 10,
        "sampled_s": 1.0,
        "gpu_util_pct": FieldStats(mean=90, max=100),
        "gpu_memory_used_bytes": FieldStats(mean=1e9, max=2e9),
        "power_w": FieldStats(mean=300, max=400),
        "temperature_c": FieldStats(mean=60, max=70 + rank),
        "sm_clock_mhz": FieldStats(mean=1900, max=1980),
        "cpu_util_pct": FieldStats(mean=100, max=120),
        "rss_bytes": FieldStats(mean=1e9, max=1e9),
        "energy_j": 300.0,
        "energy_method": "counter",
        "throttled_fraction": 0.0,
        "clock_verdict": "full_clocks",
        "clock_finding": clocks({}).finding,
        "load": quiet_load(rank),
    }
    return RankTelemetry(**(defaults | fields))


def quiet_load(rank: int, **fields: Any) -> RankLoad:
    """A rank's host readings on a quiet 64-core host: over 2 s of windows the rank used one
    core and all processes of the host 2.1; its GPU held only its own process."""
    defaults: dict[str, Any] = {
        "pid": 1000 + rank,
        "cores": 64,
        "usable_cores": 64,
        "window_s": 2.0,
        "busy_cpu_s": 2.0 * 2.1,
        "own_cpu_s": 2.0,
        "load_avg_1m": [2.0, 2.1],
        "gpu_pids": [1000 + rank],
        "gpu_processes_max": 1,
    }
    return RankLoad(**(defaults | fields))


def test_combine_totals_and_energy_per_sample() -> None:
    telemetry, unavailable, warnings = combine(
        [rank_telemetry(1, energy_j=100.0), rank_telemetry(0)],
        interval_ms=100,
        windows=3,
        samples_processed=8000,
        tokens_per_sample=128,
    )
    assert [r.rank for r in telemetry.ranks] == [0, 1]
    assert telemetry.source == "nvml+psutil"
    assert telemetry.energy_j == pytest.approx(400.0)
    assert telemetry.energy_method == "counter"
    assert telemetry.samples_per_joule == pytest.approx(20.0)
    assert telemetry.tokens_per_joule == pytest.approx(20.0 * 128)
    assert telemetry.gpu_util_pct_mean == 90 and telemetry.power_w_mean == 300
    assert telemetry.temperature_c_max == 71
    assert telemetry.throttled is False and telemetry.throttle_reasons == []
    assert unavailable == {} and warnings == []


def test_combine_needs_every_rank_and_says_why() -> None:
    telemetry, unavailable, _ = combine(
        [
            rank_telemetry(0, energy_method="power_integral"),
            rank_telemetry(
                1,
                energy_j=None,
                energy_method=None,
                power_w=None,
                unavailable={"energy_j": NOT_SUPPORTED_REASON, "power_w": NOT_SUPPORTED_REASON},
            ),
        ],
        interval_ms=100,
        windows=1,
        samples_processed=100,
        tokens_per_sample=None,
    )
    assert telemetry.energy_j is None and telemetry.samples_per_joule is None
    assert telemetry.power_w_mean is None  # a mean over some GPUs would be another figure
    assert (
        str(why(unavailable["telemetry.energy_j"])) == "rank 0: not measured; rank 1: NotSupported"
    )
    assert unavailable["telemetry.samples_per_joule"] == unavailable["telemetry.energy_j"]
    assert unavailable["telemetry.tokens_per_joule"] == coded("unavailable.not_language_model")
    assert telemetry.gpu_util_pct_mean == 90  # what every rank has is still there


def test_mixed_energy_methods() -> None:
    telemetry, _, _ = combine(
        [rank_telemetry(0), rank_telemetry(1, energy_method="power_integral")], 100, 1, 10, None
    )
    assert telemetry.energy_method == "mixed"


def test_a_cell_without_host_readings_or_energy_says_why_by_codes() -> None:
    telemetry, unavailable, _ = combine(
        [rank_telemetry(0, load=None, energy_j=0.0)],
        interval_ms=100,
        windows=1,
        samples_processed=100,
        tokens_per_sample=4,
    )
    assert telemetry.hosts is None and telemetry.samples_per_joule is None
    assert unavailable["telemetry.hosts"] == coded("unavailable.no_host_readings")
    assert unavailable["telemetry.samples_per_joule"] == coded("unavailable.no_energy_used")
    assert unavailable["telemetry.tokens_per_joule"] == coded("unavailable.no_energy_used")


def test_throttling_is_a_warning() -> None:
    """One GPU throttled makes the cell throttled, with the basis of its verdict; a GPU at its
    power limit beside it is no warning."""
    at_limit, thermal = clocks({"SwPowerCap": 10}), clocks({"HwThermalSlowdown": 3}, 12)
    assert (at_limit.verdict, thermal.verdict) == ("at_power_limit", "throttled")
    basis = say(thermal.finding)
    assert basis == "HwThermalSlowdown in 3 of 12 in-window samples"
    ranks = [
        rank_telemetry(0, clock_verdict="at_power_limit", clock_finding=at_limit.finding),
        rank_telemetry(
            1,
            clock_event_reasons=["HwThermalSlowdown", "SyncBoost"],
            throttle_reasons=["HwThermalSlowdown"],
            throttled_fraction=0.25,
            clock_verdict="throttled",
            clock_finding=thermal.finding,
        ),
    ]
    telemetry, _, warnings = combine(ranks, 100, 1, 10, None)
    assert telemetry.throttled is True and telemetry.throttle_reasons == ["HwThermalSlowdown"]
    assert telemetry.clock_verdict == "throttled"
    assert [(w.kind, w.finding) for w in warnings] == [
        (
            "throttling",
            Finding(code="warning.throttled", figures=throttle_warning(rank_verdicts(ranks))),
        )
    ]
    said = warning_words(warnings[0])
    assert said.startswith("GPU clocks throttled during the measured windows: rank 1")
    # what the verdict rests on is said once, by the rank's own clock verdict
    assert basis not in said and "rank 0" not in said
    at_limit = [ranks[0], rank_telemetry(1)]
    telemetry, unavailable, warnings = combine(at_limit, 100, 1, 10, None)
    assert telemetry.throttled is False and telemetry.clock_verdict == "at_power_limit"
    assert warnings == [] and "telemetry.throttled" not in unavailable
    unread = [
        rank_telemetry(0),
        rank_telemetry(
            1,
            throttled_fraction=None,
            clock_verdict=None,
            clock_finding=None,
            unavailable={"clock_verdict": NOT_SUPPORTED_REASON},
        ),
    ]
    telemetry, unavailable, _ = combine(unread, 100, 1, 10, None)
    assert telemetry.throttled is None and telemetry.clock_verdict is None
    assert str(why(unavailable["telemetry.throttled"])) == "rank 1: NotSupported"


def test_allocator_figures() -> None:
    before = {"num_alloc_retries": 2, "num_ooms": 0}
    after = {
        "num_alloc_retries": 5,
        "num_ooms": 1,
        "allocated_bytes.all.peak": 600,
        "reserved_bytes.all.peak": 800,
        "inactive_split_bytes.all.peak": 64,
    }
    stats = allocator_stats(before, after)
    assert (stats.alloc_retries, stats.oom_count) == (3, 1)
    assert stats.fragmentation == pytest.approx(0.25)
    assert stats.inactive_split_peak_bytes == 64
    assert allocator_stats({}, {}).fragmentation is None


# ================================================================ a real 2-rank CPU cell


def cell_spec(
    tmp: Path,
    world: int,
    device: str = "cpu",
    model: str = "tiny-mlp",
    duration_s: float | None = None,
) -> WorkerSpec:
    return WorkerSpec(
        cell=CellIdentity(
            id="telemetry",
            definition_sha256="0" * 64,
            model=model,
            label=model,
            batch_size=8,
            world_size=world,
            precision="fp32",
            strategy="ddp",
            device=device,  # type: ignore[arg-type]
            backend="gloo" if device == "cpu" else "nccl",
        ),
        model=ModelSpec(name=model),
        training=TrainingConfig(),
        measurement=MeasurementConfig(
            steps=None if duration_s else 30,
            duration_s=duration_s,
            repeats=2,
            warmup_steps=2,
            flops=False,
            comm_overhead=False,
            telemetry=TelemetryConfig(interval_ms=20),
        ),
        data=DataConfig(),
        result_path=str(tmp / "result.json"),
        steps_path=str(tmp / "steps.jsonl"),
    )


def run_cell(spec: WorkerSpec, tmp: Path) -> CellResult:
    spec_path = tmp / "spec.json"
    spec_path.write_text(spec.model_dump_json(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "MASTER_", "PET_"))}
    path = [str(REPO_ROOT), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]
    env |= {"OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(path)}
    done = subprocess.run(
        [
            sys.executable,
            *("-m", "torch.distributed.run", "--standalone"),
            f"--nproc-per-node={spec.cell.world_size}",
            "--max-restarts=0",
            *("-m", "torchscale.rank.worker.main", "--spec", str(spec_path)),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return CellResult.model_validate_json((tmp / "result.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def cpu_cell(tmp_path_factory: pytest.TempPathFactory) -> CellResult:
    tmp = tmp_path_factory.mktemp("telemetry_cell")
    return run_cell(cell_spec(tmp, world=2), tmp)


@pytest.mark.slow  # a real torchrun cell
def test_real_cpu_cell_has_cpu_telemetry(cpu_cell: CellResult) -> None:
    telemetry = cpu_cell.telemetry
    assert telemetry is not None
    assert telemetry.source == "psutil" and telemetry.interval_ms == 20
    assert telemetry.windows == 2
    assert [r.rank for r in telemetry.ranks] == [0, 1]
    for rank in telemetry.ranks:
        assert rank.device == "cpu"
        assert rank.samples >= 2 * 2  # at least both edges of both windows
        # the measuring loop marks each window's edges: the sampler's edge samples fall outside
        assert rank.window_samples is not None and rank.window_samples <= rank.samples - 2 * 2
        assert rank.window_s is not None and 0 < rank.window_s < rank.sampled_s
        assert rank.cpu_util_pct is not None and rank.cpu_util_pct.mean > 0
        assert rank.rss_bytes is not None and rank.rss_bytes.max > 10_000_000
        for name in GPU_FIELDS[:-1]:
            assert getattr(rank, name) is None
            assert rank.unavailable[name] == said("telemetry.cpu_no_gpu")
        assert rank.unavailable["energy_j"] == said("telemetry.cpu_no_energy")
    assert telemetry.cpu_util_pct_mean is not None
    for name in ("gpu_util_pct_mean", "power_w_mean", "energy_j", "samples_per_joule"):
        assert getattr(telemetry, name) is None
        assert cpu_cell.unavailable[f"telemetry.{name}"]
    assert cpu_cell.unavailable["telemetry.energy_j"] == said("telemetry.cpu_no_energy")
    assert telemetry.throttled is None
    assert not any("throttl" in warning_words(w) for w in cpu_cell.warnings)


@pytest.mark.slow  # a real torchrun cell
def test_real_cpu_cell_memory_has_no_allocator_figures(cpu_cell: CellResult) -> None:
    memory = cpu_cell.memory
    assert memory is not None
    assert memory.alloc_retries is None and memory.fragmentation is None
    assert memory.oom_count is None and memory.inactive_split_peak_bytes is None
    assert "CPU" in (why(cpu_cell.unavailable["memory.alloc_retries"]) or "")
    assert memory.peak_rss_bytes is not None and memory.peak_rss_bytes > 0


@pytest.mark.slow  # a real torchrun cell
def test_real_cpu_cell_columns(cpu_cell: CellResult) -> None:
    row = cells_table([cpu_cell]).iloc[0]
    assert row["cpu_util_mean"] > 0
    assert row["energy_j"] is None or row["energy_j"] != row["energy_j"]  # None or NaN
    ranks = ranks_table([cpu_cell])
    assert (ranks["cpu_util_mean"] > 0).all()
    assert ranks["power_w_mean"].isna().all()


# ==================================================================================== GPU


@pytest.mark.gpu
def test_real_gpu_sampled_under_a_matmul_loop() -> None:
    device = torch.device("cuda", 0)
    sampler = rank_sampler(TelemetryConfig(interval_ms=50), device)
    assert sampler is not None
    a = torch.randn(4096, 4096, device=device)
    torch.cuda.synchronize(device)
    sampler.start()
    opened = time.perf_counter()
    deadline = opened + 1.5  # past NVML's 1 s averaging floor
    while time.perf_counter() < deadline:
        for _ in range(10):
            a = torch.tanh(a @ a)
        torch.cuda.synchronize(device)
    sampler.mark_window(opened, time.perf_counter())
    sampler.stop()
    report = sampler.report()
    rank = summarise_rank(0, "host", report)
    assert report.gpu_uuid is not None and report.gpu_uuid.startswith(("GPU-", "MIG-"))
    # what the clock verdict is judged against, read once; a verdict from the in-window samples
    assert rank.sm_clock_max_mhz is not None and rank.power_limit is not None
    assert rank.clock_verdict is not None and rank.clock_finding, rank.unavailable
    assert rank.power_w is not None and rank.power_w.max > 0
    assert rank.energy_j is not None and rank.energy_j > 0
    assert rank.gpu_util_pct is not None and rank.gpu_util_pct.max > 0
    expected = rank.sampled_s / 0.05 + 2
    assert abs(rank.samples - expected) <= max(3, 0.2 * expected)


@pytest.mark.gpu
def test_real_cuda_cell_carries_telemetry_and_allocator_stats(tmp_path: Path) -> None:
    # windows past NVML's 1 s averaging: 30 tiny-gpt2 steps took 0.1 s on an H200, and so short
    # a window has no power figure, rightly (the H200 run of 2026-11-27)
    spec = cell_spec(tmp_path, world=1, device="cuda", model="tiny-gpt2", duration_s=1.5)
    result = run_cell(spec, tmp_path)
    telemetry = result.telemetry
    assert telemetry is not None and telemetry.source == "nvml+psutil"
    (rank,) = telemetry.ranks
    assert rank.device == "cuda:0" and rank.gpu_uuid is not None
    assert rank.power_w is not None and rank.power_w.mean > 0
    assert telemetry.energy_j is not None and telemetry.energy_j > 0
    assert telemetry.samples_per_joule is not None and telemetry.samples_per_joule > 0
    assert telemetry.tokens_per_joule is not None
    assert telemetry.throttled is not None or "telemetry.throttled" in result.unavailable
    memory = result.memory
    assert memory is not None
    assert memory.alloc_retries is not None and memory.alloc_retries >= 0
    assert memory.oom_count == 0
    assert memory.fragmentation is not None and 0 <= memory.fragmentation < 1
    assert memory.inactive_split_peak_bytes is not None
    assert result.ranks[0].alloc_retries == memory.alloc_retries


# ================================================================================ report


def gpu_result(result: CellResult, ranks: list[RankTelemetry] | None) -> CellResult:
    """A fixture cell as if measured on GPUs, with this telemetry (None: none)."""
    cell = result.cell.model_copy(update={"device": "cuda", "backend": "nccl"})
    unavailable = {k: v for k, v in result.unavailable.items() if k != "telemetry"}
    if ranks is None:
        return result.model_copy(update={"cell": cell})
    telemetry, why, warnings = combine(ranks, 100, 2, 1000, None)
    return result.model_copy(
        update={
            "cell": cell,
            "telemetry": telemetry,
            "unavailable": unavailable | why,
            "warnings": [*result.warnings, *warnings],
        }
    )


def report_of(tmp: Path, results: dict[str, CellResult]) -> Any:
    import shutil

    from torchscale.interfaces.report.build import ReportOptions, build_report
    from torchscale.interfaces.report.sources import read_sources

    root = tmp / "results"
    shutil.copytree(V3_DIR, root / V3_DIR.name)
    for cell_id, result in results.items():
        path = root / V3_DIR.name / "cells" / f"{cell_id}.json"
        path.write_text(result.model_dump_json(indent=2), encoding="utf-8")
    return build_report(read_sources(root), ReportOptions(generated_at="2026-01-01T00:00:00Z"))


def ok_v3_cells() -> dict[str, CellResult]:
    """The fixture's ok cells, by id."""
    cells = {}
    for path in sorted((V3_DIR / "cells").glob("*.json")):
        result = read_cell(path).doc
        assert result is not None, path
        if result.status == "ok":
            cells[path.stem] = result
    return cells


def test_report_shows_throttling_as_a_finding_and_in_the_telemetry_table(tmp_path: Path) -> None:
    cells = ok_v3_cells()
    hot = next(k for k in cells if "__w2__" in k)
    throttled = rank_telemetry(
        1,
        clock_event_reasons=["HwThermalSlowdown"],
        throttle_reasons=["HwThermalSlowdown"],
        throttled_fraction=0.5,
        clock_verdict="throttled",
        clock_finding=clocks({"HwThermalSlowdown": 5}).finding,
    )
    report = report_of(tmp_path, {hot: gpu_result(cells[hot], [rank_telemetry(0), throttled])})
    findings = [
        f for s in report.sections for b in s.blocks if b.type == "findings" for f in b.findings
    ]
    (finding,) = [f for f in findings if "throttled" in f.title]
    assert finding.title.endswith("GPU clocks throttled (HwThermalSlowdown)")
    assert finding.title.startswith(finding.source)  # the cell's label, not its hashed id
    assert finding.source.startswith("tiny-gpt2 b8 x2") and finding.severity == "warn"
    assert any("HwThermalSlowdown in 5 of 10 in-window samples" in e for e in finding.evidence)
    bottlenecks = report.section("bottlenecks")
    tables = {b.id: b for b in bottlenecks.blocks if b.type == "table"}
    kinds = {r["kind"] for r in tables["bottlenecks-warnings"].rows}
    assert "throttling" in kinds
    (row,) = tables["bottlenecks-telemetry"].rows
    assert row["throttled"] == "HwThermalSlowdown" and row["_severity"] == "warn"
    assert row["power"] == 300 and row["per_joule"] == pytest.approx(1000 / 600)
    unavailable = {
        k: v for b in bottlenecks.blocks if b.type == "unavailable" for k, v in b.items.items()
    }
    assert "throttling" not in unavailable
    assert unavailable["telemetry"] == say(NOT_RECORDED)  # the other cells: torchscale 0.3.0


def test_report_rules_out_throttling_only_where_it_was_read(tmp_path: Path) -> None:
    cells = ok_v3_cells()
    first, second = sorted(cells)[:2]
    report = report_of(
        tmp_path,
        {
            first: gpu_result(cells[first], [rank_telemetry(0)]),
            second: gpu_result(cells[second], None),  # a GPU run without telemetry
        },
    )
    bottlenecks = report.section("bottlenecks")
    texts = [b.text for b in bottlenecks.blocks if b.type == "text"]
    assert any(
        t.startswith("No GPU clock throttling during the measured windows of 1 GPU run")
        for t in texts
    )
    unavailable = {
        k: v for b in bottlenecks.blocks if b.type == "unavailable" for k, v in b.items.items()
    }
    assert str(unavailable["throttling"]).startswith("1 GPU run(s) without readable clocks-event")
    assert say(NOT_RECORDED) in unavailable["throttling"]
    findings = [
        f for s in report.sections for b in s.blocks if b.type == "findings" for f in b.findings
    ]
    assert not [f for f in findings if "throttled" in f.title]


# ============================================================================== aggregate


def test_aggregate_carries_telemetry_allocator_and_throttle_warning() -> None:
    from tests.rank.test_aggregate import make_rank, make_spec, run
    from torchscale.rank.worker.allocator import AllocatorStats

    ranks = [
        make_rank(0, [1, 1, 1], peak_allocated=10_000),
        make_rank(1, [1, 1, 1], peak_allocated=12_000),
    ]
    ranks[0].telemetry = rank_telemetry(0, energy_j=60.0)
    ranks[1].telemetry = rank_telemetry(
        1,
        energy_j=40.0,
        throttle_reasons=["SwPowerCap"],
        throttled_fraction=0.1,
        clock_verdict="throttled",
        clock_finding=clocks(
            {"SwPowerCap": 2}, limit=PowerLimit(enforced_w=500.0, default_w=700.0)
        ).finding,
    )
    ranks[0].allocator = AllocatorStats(1, 0, 0.2, 4096)
    ranks[1].allocator = AllocatorStats(3, 0, 0.1, 1024)
    spec = make_spec(world=2, batch=8, steps=4)
    result = run(ranks, spec, tokens=16)
    telemetry = result.telemetry
    assert telemetry is not None
    # 8 per rank x 2 ranks x 4 steps x 3 repeats = 192 samples over 100 J
    assert telemetry.energy_j == pytest.approx(100.0)
    assert telemetry.samples_per_joule == pytest.approx(1.92)
    assert telemetry.tokens_per_joule == pytest.approx(1.92 * 16)
    assert telemetry.interval_ms == spec.measurement.telemetry.interval_ms
    assert telemetry.windows == 3
    assert any(warning_words(w).startswith("GPU clocks throttled") for w in result.warnings)
    memory = result.memory
    assert memory is not None
    assert (memory.alloc_retries, memory.oom_count) == (3, 0)
    assert memory.fragmentation == pytest.approx(0.2)
    assert memory.inactive_split_peak_bytes == 4096
    assert [r.alloc_retries for r in result.ranks] == [1, 3]
    assert not any(k.startswith("memory.") for k in result.unavailable)
    row = cells_table([result]).iloc[0]
    assert row["energy_j"] == pytest.approx(100.0) and row["throttled"]
    assert row["throttle_reasons"] == "SwPowerCap" and row["alloc_retries"] == 3


def test_aggregate_without_telemetry_says_it_was_off() -> None:
    from tests.rank.test_aggregate import make_rank, run

    result = run([make_rank(0, [1, 1, 1])])
    assert result.telemetry is None
    assert result.unavailable["telemetry"] == coded("unavailable.telemetry_off")


@pytest.mark.slow  # a real torchrun cell
def test_real_cpu_cell_records_what_else_ran_on_its_host(cpu_cell: CellResult) -> None:
    telemetry = cpu_cell.telemetry
    assert telemetry is not None and telemetry.hosts is not None
    (host,) = telemetry.hosts
    assert host.ranks == [0, 1] and host.cores == os.cpu_count()
    assert host.cell_cores is not None and host.cell_cores > 0
    assert host.busy_cores is not None and host.busy_cores > 0
    assert host.other_cores is not None and host.other_cores >= 0
    assert host.load_avg_1m is not None and host.load_avg_1m.max > 0
    assert host.other_gpu_processes is None
    assert host.unavailable["other_gpu_processes"] == said("telemetry.cpu_no_gpu")
    loads = [r.load for r in telemetry.ranks]
    assert all(load is not None and load.window_s > 0 for load in loads)
    assert len({load.pid for load in loads if load is not None}) == 2
    # the warning follows the rule, whatever else this shared machine was doing
    assert any(w.kind == "busy machine" for w in cpu_cell.warnings) is host.busy
    row = cells_table([cpu_cell]).iloc[0]
    assert row["other_cpu_cores"] == pytest.approx(host.other_cores)


def test_a_cpu_report_leaves_out_the_gpu_columns_no_cell_has(tmp_path: Path) -> None:
    """On CPU ranks no cell has a GPU figure: a column no cell has a figure for is left out
    (not printed as a column of '-'), and the note names it."""
    cells = ok_v3_cells()
    cell_id = next(k for k in cells if "__w2__" in k)
    result = cells[cell_id]
    cpu_only = {
        "device": "cpu",
        "gpu_name": None,
        "gpu_util_pct": None,
        "gpu_memory_used_bytes": None,
        "power_w": None,
        "temperature_c": None,
        "sm_clock_mhz": None,
        "energy_j": None,
        "energy_method": None,
        "throttled_fraction": None,
    }
    ranks = [rank_telemetry(r, **cpu_only) for r in (0, 1)]
    telemetry, _why, _warnings = combine(ranks, 100, 2, 1000, None)
    report = report_of(tmp_path, {cell_id: result.model_copy(update={"telemetry": telemetry})})
    bottlenecks = report.section("bottlenecks")
    (table,) = [b for b in bottlenecks.blocks if b.type == "table" and b.id.endswith("telemetry")]
    labels = [c.label for c in table.columns]
    assert "CPU per rank (mean, 100 % = one core)" in labels
    assert not [label for label in labels if "GPU" in label or "SM clock" in label], labels
    assert "no cell has a figure for GPU utilisation (mean), Power per GPU" in (table.note or "")
