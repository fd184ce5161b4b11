"""The matmul peak finder (MAMF): timing, FLOP formula, search budget, availability,
spec lookup and the impossible-figure guard. CPU tests use tiny shapes; fake clocks/timers make
the arithmetic exact."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch

from torchscale.contracts import wording
from torchscale.contracts.gpu_peaks import lookup
from torchscale.contracts.schema.perf import PeakResult, Probe
from torchscale.rank.programs import matmul_peak as mp


class StepClock:
    """A clock that advances `step` seconds each time it is read."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        self.now += self.step
        return self.now


class PerIterTimer:
    """Every matmul 'takes' `seconds`; the loop still runs (so the real matmul path runs)."""

    def __init__(self, seconds: float, clock: StepClock | None = None) -> None:
        self.seconds = seconds
        self.clock = clock
        self.calls: list[int] = []

    def __call__(self, run: Callable[[], object], iters: int) -> float:
        self.calls.append(iters)
        for _ in range(iters):
            run()
        if self.clock is not None:
            self.clock.now += self.seconds * iters
        return self.seconds * iters


def test_cpu_fp32_measurement_is_positive_and_finite() -> None:
    probes = mp.measure_matmul("fp32", [(32, 48, 64), (64, 64, 64)], "cpu", min_time_s=0.005)
    assert len(probes) == 2
    for probe in probes:
        assert probe.error is None
        assert probe.tflops is not None and math.isfinite(probe.tflops) and probe.tflops > 0
        assert probe.iters >= 1 and len(probe.repeats_tflops) == 3
        assert probe.seconds_per_matmul is not None and probe.seconds_per_matmul > 0


def test_flops_are_2mnk_over_the_median_loop_time() -> None:
    # a clock read twice per loop, advancing 0.5 s a read: every loop lasts exactly 0.5 s
    clock = StepClock(0.5)
    (probe,) = mp.measure_matmul(
        "fp32", [(8, 16, 32)], "cpu", min_time_s=0.1, timer=mp.ClockTimer(clock)
    )
    assert mp.matmul_flops((8, 16, 32)) == 2 * 8 * 16 * 32
    assert probe.iters == 1  # 0.5 s >= min_time at once
    assert probe.tflops == pytest.approx(2 * 8 * 16 * 32 / 0.5 / 1e12)
    assert probe.seconds_per_matmul == pytest.approx(0.5)


def test_iterations_grow_until_the_loop_exceeds_min_time() -> None:
    timer = PerIterTimer(1e-3)
    (probe,) = mp.measure_matmul("fp32", [(4, 4, 4)], "cpu", min_time_s=0.05, timer=timer)
    assert probe.iters * 1e-3 >= 0.05
    assert timer.calls[-3:] == [probe.iters] * 3  # three repeats of the calibrated count
    assert probe.tflops == pytest.approx(2 * 4**3 / 1e-3 / 1e12)


def test_median_of_repeats_not_the_best_one() -> None:
    times = iter([1.0, 1.0, 3.0, 2.0])  # calibration, then three repeats: median 2.0

    def timer(run: Callable[[], object], iters: int) -> float:
        run()
        return next(times)

    (probe,) = mp.measure_matmul("fp32", [(2, 2, 2)], "cpu", min_time_s=0.5, timer=timer)
    assert probe.tflops == pytest.approx(16 / 2.0 / 1e12)


def test_search_respects_its_budget() -> None:
    clock = StepClock(0.0)
    timer = PerIterTimer(0.01, clock)  # each probe: 1 calibration + 3 repeats = 0.04 s
    result = mp.find_peak(
        "fp32",
        "cpu",
        budget_s=0.1,
        squares=(8, 16, 32, 64),
        step=8,
        min_step=8,
        max_dim=64,
        min_time_s=0.005,
        timer=timer,
        clock=clock,
    )
    assert result.elapsed_s is not None and result.elapsed_s <= 0.1
    assert 1 <= len(result.probes) < 4  # not every square fitted
    assert any("budget" in wording.say(note) for note in result.notes)
    assert result.best_tflops is not None and result.best_shape is not None


def test_search_climbs_to_the_fastest_shape() -> None:
    # a made-up speed landscape with its maximum at (24, 16, 16): the search must reach it
    def timer(run: Callable[[], object], iters: int) -> float:
        return iters * 1e-3

    landscape = {(24, 16, 16): 3.0}
    real = mp.measure_shape

    def fake_measure(run, shape, timer_, min_time_s, repeats, warmup):  # type: ignore[no-untyped-def]
        probe = real(run, shape, timer_, min_time_s, repeats, warmup)
        m, n, k = shape
        probe.tflops = landscape.get(shape, 1.0 / (1 + abs(m - 24) + abs(n - 16) + abs(k - 16)))
        return probe

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mp, "measure_shape", fake_measure)
        result = mp.find_peak(
            "fp32", "cpu", budget_s=60, squares=(8, 16), step=8, min_step=8, timer=timer
        )
    assert result.best_shape == (24, 16, 16) and result.best_tflops == 3.0
    assert len(result.probes) > 2


@pytest.mark.parametrize("dtype", ["fp8", "tf32"])
def test_gpu_only_dtypes_are_unavailable_on_cpu(dtype: str) -> None:
    result = mp.find_peak(dtype, "cpu", budget_s=1)
    why = wording.say(result.unavailable) if result.unavailable else ""
    assert "CPU" in why or "GPU" in why
    assert result.probes == [] and result.best_tflops is None and result.headline_tflops is None
    with pytest.raises(ValueError, match=r"GPU|CPU"):
        mp.measure_matmul(dtype, [(4, 4, 4)], "cpu")


@pytest.mark.slow  # over 2 s on 2 cores
def test_cpu_has_no_spec_and_says_why() -> None:
    result = mp.find_peak("fp32", "cpu", budget_s=2, squares=(16, 32), min_time_s=0.002)
    assert result.best_tflops is not None and result.best_tflops > 0
    assert result.spec_tflops is None and result.ratio is None and result.suspect is None
    assert result.spec_note and "CPU" in wording.say(result.spec_note)
    assert result.headline_tflops == result.best_tflops


def test_spec_for_h100_is_the_peaks_table_bf16_dense_figure() -> None:
    name = "NVIDIA H100 80GB HBM3"
    row = lookup(name)
    assert row is not None
    spec, source, note = mp.spec_for(name, "bf16")
    assert spec == row.tflops["bf16"] == 989.0 and source == row.source and note is None
    assert mp.spec_for(name, "fp8")[0] == row.tflops["fp8"]
    assert mp.spec_for("NVIDIA A100-SXM4-40GB MIG 1g.5gb", "bf16")[0] is None
    spec, _, note = mp.spec_for("NVIDIA A100-SXM4-80GB", "fp8")
    assert spec is None and note and "fp8" in wording.say(note)


def _judged(best: float) -> PeakResult:
    return mp.judge(
        PeakResult(
            dtype="bf16",
            device="cuda:0",
            device_name="NVIDIA H100 80GB HBM3",
            best_tflops=best,
            best_shape=(4096, 4096, 4096),
        )
    )


def test_a_figure_above_the_spec_is_flagged_not_a_headline() -> None:
    ok = _judged(790.0)
    assert ok.suspect is None and ok.headline_tflops == 790.0
    assert ok.ratio == pytest.approx(790 / 989)
    assert _judged(989 * 1.04).suspect is None  # rounding slack
    bad = _judged(989 * 1.2)
    assert bad.suspect and "impossible" in wording.say(bad.suspect)
    assert bad.headline_tflops is None


def test_fake_timer_beyond_spec_is_caught_end_to_end() -> None:
    # a broken timer (a tiny matmul "taking" 1 ps) yields an impossible figure;
    # named as an H100, the result must flag it instead of reporting it
    result = mp.find_peak(
        "bf16",
        "cpu",
        budget_s=5,
        squares=(16,),
        step=16,
        min_step=16,
        max_dim=32,
        timer=PerIterTimer(1e-12),
        min_time_s=1e-13,
        name="NVIDIA H100 80GB HBM3",
    )
    assert result.best_tflops is not None and result.best_tflops > 989 * 1.05
    assert result.spec_tflops == 989.0
    assert result.suspect and result.headline_tflops is None


def test_result_serialises_to_json() -> None:
    result = _judged(500.0)
    again = PeakResult.model_validate_json(result.model_dump_json())
    assert again == result


@pytest.mark.gpu
def test_gpu_bf16_peak_is_plausible() -> None:
    result = mp.find_peak("bf16", "cuda:0", budget_s=20, squares=(2048, 4096), min_time_s=0.05)
    assert result.unavailable is None and result.best_tflops and result.best_tflops > 0
    assert result.suspect is None, result.suspect
    if result.spec_tflops:
        assert result.ratio is not None and 0.3 < result.ratio <= mp.SPEC_TOLERANCE


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["fp32", "tf32", "fp16", "fp8"])
def test_gpu_dtypes_measure_or_say_why(dtype: str) -> None:
    before = torch.backends.cuda.matmul.fp32_precision
    result = mp.find_peak(dtype, "cuda:0", budget_s=10, squares=(4096,), min_time_s=0.05)
    assert torch.backends.cuda.matmul.fp32_precision == before  # the TF32 switch is restored
    if result.unavailable:
        assert dtype == "fp8", result.unavailable  # the only dtype a recent GPU may lack
        return
    assert result.best_tflops and result.suspect is None, result.suspect


@pytest.mark.parametrize(
    ("tflops", "stop"),
    [
        ([100.0, 200.0, 300.0], False),  # three probes, none before them: nothing to compare
        ([100.0, 300.0, 301.0, 302.0, 302.5], True),  # the last three add 0.8 %
        ([100.0, 300.0, 301.0, 302.0, 304.0], False),  # the last three add 1.3 %
        ([300.0, None, None, None], True),  # failed probes add nothing
        ([None, None, None, None], False),  # no figure yet
        ([300.0, 250.0, 310.0, 299.0, 200.0, 305.0], True),  # 310 then nothing above it + 1 %
    ],
)
def test_the_search_has_converged_when_three_probes_add_under_one_percent(
    tflops: list[float | None], stop: bool
) -> None:
    assert mp.converged(tflops) is stop


def test_the_search_stops_once_converged_long_before_its_budget() -> None:
    """A flat landscape: the squares' ramp climbs, then three probes add nothing and the
    search ends with the reason in its notes; the budget (60 s) is never the limit."""
    clock = StepClock(0.0)

    def fake_measure(run, shape, timer_, min_time_s, repeats, warmup):  # type: ignore[no-untyped-def]
        clock.now += 1.0  # each probe takes a second
        m, n, k = shape
        return Probe(m=m, n=n, k=k, tflops=min(m, 32) * 10.0, iters=1)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mp, "measure_shape", fake_measure)
        result = mp.find_peak(
            "fp32", "cpu", budget_s=60, squares=(8, 16, 32, 48, 64, 96), step=8, clock=clock
        )
    # 8, 16, 32 climb; 48, 64, 96 add nothing: converged after six probes
    assert [p.m for p in result.probes] == [8, 16, 32, 48, 64, 96]
    assert result.best_tflops == 320.0
    notes = [wording.say(note) for note in result.notes]
    assert any(note.startswith("converged: the last 3 probes") for note in notes)
    assert not any("budget" in note for note in notes)
    assert result.elapsed_s is not None and result.elapsed_s < 60
