"""GPU telemetry a GPU engineer can trust: the clock verdict (only hardware and thermal slowdowns,
or SwPowerCap under a site cap or at lowered clocks, count as throttled), only the samples
between a window's edges counted, NVML's ~1 s averages not measurable over shorter windows,
power from the energy counter; and the first H100 run's results as converted (judged by these
rules: tests/fixtures/h100_first_run).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.fake_nvml import NOT_SUPPORTED, FakeGpu, FakeNvml
from tests.h100_replay import WORKLOAD, h100_cell
from torchscale.contracts.gpu_clocks import judge_clocks
from torchscale.contracts.power_limit import PowerLimit
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.wording import say, why
from torchscale.contracts.wording.cell_warnings import warning_words
from torchscale.offline.results.documents import read_cell
from torchscale.rank.telemetry.nvml_source import NvmlSource
from torchscale.rank.telemetry.sampler import Sampler
from torchscale.rank.telemetry.samples import SamplerReport, WindowSamples
from torchscale.rank.telemetry.window_figures import combine, summarise_rank

UUID = "GPU-7e57c10c-0000-4000-8000-000000000001"
HW_SLOWDOWN, POWER_CAP, THERMAL = 0x8, 0x4, 0x40


def sampled_gpu(**fields: Any) -> SamplerReport:
    """One window of ~0.2 s on a fake GPU sampled every 10 ms; its edges marked 20 ms inside
    the sampler's start and stop, as the measuring loop marks them."""
    sampler = Sampler(
        [NvmlSource(UUID, module=FakeNvml([FakeGpu(uuid=UUID, **fields)]))], 0.01, "cuda:0"
    )
    sampler.start()
    time.sleep(0.02)
    opened = time.perf_counter()
    time.sleep(0.2)
    closed = time.perf_counter()
    sampler.mark_window(opened, closed)
    time.sleep(0.02)
    sampler.stop()
    return sampler.report()


def verdict_of(**fields: Any) -> tuple[str | None, bool | None, list[str]]:
    rank = summarise_rank(0, "h", sampled_gpu(**fields), floor_s=0.0, counter_step_s=0.0)
    telemetry, _, warnings = combine([rank], 10, 1, 8, None)
    assert all(w.kind == "throttling" for w in warnings)
    # the warning names the rank; why it throttled is said once, by the rank's clock verdict
    why = say(rank.clock_finding) if rank.clock_finding is not None else None
    return rank.clock_verdict, telemetry.throttled, [f"{warning_words(w)}: {why}" for w in warnings]


def test_hardware_slowdown_bits_throttle() -> None:
    for mask in (HW_SLOWDOWN, THERMAL, 0x20, 0x80):
        verdict, throttled, warnings = verdict_of(clock_reasons=mask)
        assert (verdict, throttled) == ("throttled", True), hex(mask)
        assert warnings and warnings[0].startswith("GPU clocks throttled")


def test_power_cap_at_the_top_clock_is_the_power_limit_not_throttling() -> None:
    """The first H100 run's compiled GPT-2 cell: SwPowerCap at 1980 of 1980 MHz under the
    default 700 W limit. An info verdict, no warning, nothing about cooling."""
    report = sampled_gpu(clock_reasons=POWER_CAP | 0x1, sm_clock=1980)
    rank = summarise_rank(0, "h", report, floor_s=0.0, counter_step_s=0.0)
    assert rank.clock_verdict == "at_power_limit" and rank.throttle_reasons == []
    assert rank.clock_finding is not None  # a code, not words
    assert rank.clock_finding.code == "clocks.power_managed"
    basis = say(rank.clock_finding)
    assert basis.startswith("at its power limit (normal under dense load)")
    assert "1980 MHz max" in basis and "700 W, its default" in basis
    assert rank.sm_clock_max_mhz == 1980
    assert rank.power_limit == PowerLimit(enforced_w=700, default_w=700)
    telemetry, unavailable, warnings = combine([rank], 10, 1, 8, None)
    assert telemetry.throttled is False and telemetry.clock_verdict == "at_power_limit"
    assert warnings == [] and "telemetry.throttled" not in unavailable


def test_power_cap_under_a_site_cap_throttles() -> None:
    verdict, throttled, warnings = verdict_of(
        clock_reasons=POWER_CAP, enforced_power_limit_mw=500_000, default_power_limit_mw=700_000
    )
    assert (verdict, throttled) == ("throttled", True)
    assert "under a site cap: power limit 500 W, below its 700 W default" in warnings[0]


def test_power_cap_with_low_clocks_well_under_the_limit_throttles() -> None:
    """SwPowerCap, the clocks at 76 % of the top and the GPU drawing 300 W of its 700 W
    default limit: the power manager is not what holds it (an action)."""
    verdict, throttled, warnings = verdict_of(
        clock_reasons=POWER_CAP, sm_clock=1500, energy_mj=NOT_SUPPORTED
    )
    assert (verdict, throttled) == ("throttled", True)
    assert "SM clock median 1500 MHz in them (lowest 1500), 76 % of its 1980 MHz max" in warnings[0]
    assert "drawing 300 W, 43 % of its limit" in warnings[0]
    # 90 % of 1980 is 1782: just above it holds the limit at full clocks
    assert verdict_of(clock_reasons=POWER_CAP, sm_clock=1790)[:2] == ("at_power_limit", False)


def test_power_cap_at_the_default_limit_drawing_at_it_is_context_not_an_action() -> None:
    """The same low clocks with the GPU drawing 690 W of its 700 W default limit: it keeps to
    its limit. At its power limit, no throttling warning (the old rule called it throttled)."""
    verdict, throttled, warnings = verdict_of(
        clock_reasons=POWER_CAP, sm_clock=1500, power_mw=690_000, energy_mj=NOT_SUPPORTED
    )
    assert (verdict, throttled, warnings) == ("at_power_limit", False, [])


def test_power_cap_with_low_clocks_and_no_draw_read_is_not_judged() -> None:
    judged = judge_clocks(
        {"SwPowerCap": 8}, 10, 1500, 1980, None, PowerLimit(enforced_w=700, default_w=700), None
    )
    assert judged.verdict == "not_judged" and judged.finding.code == "clocks.draw_unknown"
    assert "power draw not read" in say(judged.finding)


def test_power_cap_with_neither_limit_nor_top_clock_readable_is_not_judged() -> None:
    rank = summarise_rank(
        0,
        "h",
        sampled_gpu(
            clock_reasons=POWER_CAP,
            sm_clock_max=NOT_SUPPORTED,
            enforced_power_limit_mw=NOT_SUPPORTED,
        ),
        floor_s=0.0,
    )
    assert rank.clock_verdict == "not_judged"
    assert "nvmlDeviceGetMaxClockInfo" in str(why(rank.unavailable["sm_clock_max_mhz"]))
    telemetry, unavailable, warnings = combine([rank], 10, 1, 8, None)
    assert telemetry.throttled is None and warnings == []
    assert "whether it cost clocks is not known" in str(why(unavailable["telemetry.throttled"]))


def test_one_flagged_sample_is_a_transient() -> None:
    judged = judge_clocks({"HwSlowdown": 1, "SwPowerCap": 1}, 10, 1980, 1980, None, None)
    assert judged.verdict == "full_clocks" and "1 sample only" in say(judged.finding)


def window(t: list[float], opened: float, closed: float, **columns: list[Any]) -> WindowSamples:
    return WindowSamples(
        t=t,
        values={name: list(v) for name, v in columns.items()},
        energy_start_mj=0.0,
        energy_stop_mj=700.0 * (t[-1] - t[0]) * 1000,
        energy_t=(t[0], t[-1]),
        complete=True,
        opened=opened,
        closed=closed,
    )


def report_of(windows: list[WindowSamples]) -> SamplerReport:
    return SamplerReport(
        device="cuda:0",
        interval_s=0.1,
        windows=windows,
        gpu_name="NVIDIA H100 80GB HBM3",
        sm_clock_max_mhz=1980.0,
        power_limit=PowerLimit(enforced_w=700, default_w=700),
    )


def test_only_samples_between_the_window_edges_count() -> None:
    """The sampler's first and last samples sit in the window's edge work (the idle GPU before
    the opening barrier, after the closing one): utilisation, power, clocks and reasons count
    the samples between the edges only."""
    edge_mask = HW_SLOWDOWN | POWER_CAP
    w = window(
        [0.0, 0.1, 0.6, 1.1, 1.6, 1.7],
        opened=0.05,
        closed=1.65,
        gpu_util_pct=[0, 95, 100, 100, 95, 0],
        power_w=[90, 650, 690, 700, 680, 90],
        sm_clock_mhz=[345, 1980, 1980, 1980, 1980, 345],
        clock_reasons=[edge_mask, 0, 0, 0, 0, edge_mask],
    )
    rank = summarise_rank(0, "h", report_of([w]))
    assert rank.window_samples == 4 and rank.samples == 6
    assert rank.window_s == pytest.approx(1.6)
    assert rank.gpu_util_pct is not None and rank.gpu_util_pct.mean == pytest.approx(97.5)
    assert rank.sm_clock_mhz is not None and rank.sm_clock_mhz.mean == 1980
    assert rank.clock_event_reasons == [] and rank.throttled_fraction == 0.0
    assert rank.clock_verdict == "full_clocks"
    # power: the energy counter's joules over its seconds, not the samples' 1-s averages
    assert rank.power_method == "counter"
    assert rank.power_w is not None and rank.power_w.mean == pytest.approx(700.0)


def test_windows_too_short_for_nvml_averaging_are_not_measurable() -> None:
    """0.216 s of windows (the compiled GPT-2 cell): NVML's 1 s power and utilisation averages
    describe the seconds around them, and the counter's steps are too coarse: null, saying
    why. One window of 2 s is measured, its power by the counter."""
    short = [
        window([0.0, 0.05, 0.11], 0.0, 0.108, gpu_util_pct=[5, 5, 5], power_w=[177] * 3),
        window([1.0, 1.05, 1.11], 1.0, 1.108, gpu_util_pct=[5, 5, 5], power_w=[177] * 3),
    ]
    rank = summarise_rank(0, "h", report_of(short))
    assert rank.gpu_util_pct is None and rank.power_w is None and rank.energy_j is None
    assert str(why(rank.unavailable["gpu_util_pct"])).startswith(
        "not measurable: the longest window is 0.108 s"
    )
    assert "NVML averages over ~1 s" in str(why(rank.unavailable["power_w"]))
    assert "energy counter moves in steps" in str(why(rank.unavailable["energy_j"]))
    telemetry, unavailable, _ = combine([rank], 100, 2, 16, 1024)
    assert telemetry.gpu_util_pct_mean is None and telemetry.power_w_mean is None
    assert str(why(unavailable["telemetry.power_w_mean"])).startswith("not measurable")
    long = [window([0.0, 1.0, 2.0], 0.0, 2.0, gpu_util_pct=[99] * 3, power_w=[400] * 3)]
    rank = summarise_rank(0, "h", report_of(long))
    assert rank.gpu_util_pct is not None and rank.power_method == "counter"
    assert rank.power_w is not None and rank.power_w.mean == pytest.approx(700.0)
    assert rank.energy_j == pytest.approx(1400.0)


def test_the_sampler_marks_the_windows_edges() -> None:
    report = sampled_gpu(utilization=80)
    (w,) = report.windows
    assert w.opened is not None and w.closed is not None
    assert w.t[0] < w.opened and w.t[-1] > w.closed  # the edge samples stay outside
    assert 0 < len(w.inside()) < len(w.t)


# ================================================= the first H100 run, judged by today's rules


def compiled_gpt2() -> CellResult:
    read = read_cell(h100_cell(WORKLOAD / "runs" / "compiled", "gpt2__b8__w1__bf16__ddp"))
    assert read.doc is not None, read.problem
    return read.doc


def test_h100_compiled_gpt2_is_at_its_power_limit_not_throttled() -> None:
    """SwPowerCap in 3 of 6 samples with the SM clock at 1970 mean, 1980 max: the lowest sample
    was at least 1920 MHz, 97 % of the H100's 1980. The run stored it as throttled; its converted
    copy, judged by today's rules, does not."""
    result = compiled_gpt2()
    telemetry = result.telemetry
    assert telemetry is not None
    assert telemetry.throttled is False and telemetry.clock_verdict == "at_power_limit"
    assert telemetry.throttle_reasons == []
    (rank,) = telemetry.ranks
    assert rank.clock_finding is not None
    basis = say(rank.clock_finding)
    assert basis.startswith("at its power limit (normal under dense load): SwPowerCap")
    assert "SM clock mean 1970 MHz, 99 % of its 1980 MHz max (the SKU table's)" in basis
    assert not any(
        "throttled" in warning_words(w) or "cooling" in warning_words(w) for w in result.warnings
    )


def test_h100_compiled_gpt2_utilisation_and_power_are_not_measurable() -> None:
    """0.216 s of windows: the stored 5 % utilisation and 177 W (NVML's 1 s averages) and the
    counter's 146 J (two windows of ~0.1 s) are not measurements."""
    result = compiled_gpt2()
    telemetry = result.telemetry
    assert telemetry is not None
    assert telemetry.gpu_util_pct_mean is None and telemetry.power_w_mean is None
    assert telemetry.energy_j is None and telemetry.samples_per_joule is None
    utilisation = str(why(result.unavailable["telemetry.gpu_util_pct_mean"]))
    assert utilisation.startswith("not measurable: windows of 0.216 s in all")
    assert "NVML averages over ~1 s" in str(why(result.unavailable["telemetry.power_w_mean"]))
    assert "~27 %" in str(why(result.unavailable["telemetry.energy_j"]))


def test_h100_report_does_not_call_the_power_limit_throttling() -> None:
    from torchscale.interfaces.report.build import build_report
    from torchscale.interfaces.report.request import ReportOptions
    from torchscale.interfaces.report.sources import read_sources

    report: Any = build_report(
        read_sources(WORKLOAD / "runs" / "compiled"),
        ReportOptions(generated_at="2026-01-01T00:00:00Z"),
    )
    findings = [
        f for s in report.sections for b in s.blocks if b.type == "findings" for f in b.findings
    ]
    assert not [f for f in findings if "throttled" in f.title]
    text = report.model_dump_json()
    assert "below full clocks" not in text and "cooling" not in text
    tables = {b.id: b for b in report.section("bottlenecks").blocks if b.type == "table"}
    rows = {r["cell"]: r for r in tables["bottlenecks-telemetry"].rows}
    assert "no (at power limit)" in [r["throttled"] for r in rows.values()]
    # a schema-15 result recorded no power limit: never called its default
    assert "at their default power limit" not in text
    assert "1 with SwPowerCap within 90 % of their top clock, their power limit not read" in text


def test_an_nvml_average_counts_only_once_it_lies_inside_one_window() -> None:
    """Four 0.3 s windows make 1.2 s in all, yet each 1 s power or utilisation reading taken in
    them mostly averages the edge work and the window before: not measurable. In a 3 s window
    only the readings 1 s or more past its opening edge count (the 20 % one before is out)."""
    four = [
        window([t, t + 0.1, t + 0.2, t + 0.3], t, t + 0.3, gpu_util_pct=[5] * 4, power_w=[177] * 4)
        for t in (0.0, 1.0, 2.0, 3.0)
    ]
    rank = summarise_rank(0, "h", report_of(four))
    assert rank.gpu_util_pct is None and "the longest window is 0.3 s" in str(
        why(rank.unavailable["gpu_util_pct"])
    )
    assert rank.power_method in (None, "counter")  # never the 1 s average samples
    settled = [window([0.0, 0.5, 1.5, 2.5, 3.0], 0.0, 3.0, gpu_util_pct=[20, 20, 90, 90, 90])]
    rank = summarise_rank(0, "h", report_of(settled))
    assert rank.gpu_util_pct is not None and rank.gpu_util_pct.mean == pytest.approx(90.0)


class _Counter:
    """An energy counter that moves 1 J each read, and nothing else."""

    fields: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.mj = 0.0
        self.unavailable: dict[str, str] = {}
        self.errors: dict[str, str] = {}

    def open(self) -> None:
        pass

    def read(self, into: dict[str, float | None]) -> None:
        pass

    def energy_mj(self) -> float:
        self.mj += 1000.0
        return self.mj


def test_a_windows_energy_is_read_at_its_own_edges_not_the_samplers() -> None:
    """The sampler starts before the window's edge work (synchronize, barrier, the untimed
    step) and stops after it: the counter read at the window's own edges, from the main
    thread, is what its joules come from."""
    from torchscale.rank.telemetry.sampler import Sampler

    sampler = Sampler([_Counter()], 0.05, "cuda:0")
    sampler.start()  # the thread's own read: 1 J
    sampler.mark_open()  # 2 J
    sampler.mark_window(10.0, 11.0)  # 3 J
    record = sampler.stop()  # the thread's closing read: 4 J
    assert (record.energy_start_mj, record.energy_stop_mj) == (2000.0, 3000.0)
    assert record.energy_t is not None and record.energy_t[1] >= record.energy_t[0]


def test_one_clock_dip_among_capped_samples_is_the_power_manager_not_a_throttle() -> None:
    """The second H100 run's GPT-2 b16: SwPowerCap in 42 of 44 samples, the SM clock ~1,830 MHz
    (92 % of 1,980) with one sample at 1,560: the typical clock judges, not the dip. With most
    capped samples below 90 % it is throttled."""
    from torchscale.rank.telemetry.window_figures import clock_judgement

    def windows(clocks: list[float]) -> list[WindowSamples]:
        t = [0.1 * i for i in range(len(clocks))]
        mask = float(POWER_CAP)
        return [window(t, 0.0, t[-1], sm_clock_mhz=clocks, clock_reasons=[mask] * len(clocks))]

    limit = PowerLimit(enforced_w=700, default_w=700)
    dip = clock_judgement(windows([1830.0] * 41 + [1560.0]), 1980.0, None, limit, 676.0)
    assert dip is not None and dip.verdict == "at_power_limit"
    assert "median 1830 MHz in them (lowest 1560)" in say(dip.finding)
    # most capped samples below 90 % of the top while drawing well under the limit: throttled
    low = clock_judgement(windows([1700.0] * 30 + [1900.0] * 12), 1980.0, None, limit, 420.0)
    assert low is not None and low.verdict == "throttled"
