"""The measured points a forecast is drawn beside, from the median step, against hand numbers."""

from __future__ import annotations

import math

import pytest

from torchscale.offline.analysis.prediction.measured_rates import (
    StepPoint,
    median_step_efficiency,
    median_step_rate,
)


def test_rate_is_ranks_times_batch_over_the_median_step() -> None:
    # 2 ranks x 16 samples / 20 ms = 1,600/s; the step's ends 25 and 16 ms turn over
    got = median_step_rate(StepPoint(2, 16, 0.020, 0.016, 0.025))
    assert got.value == pytest.approx(1600.0)
    assert got.low == pytest.approx(32 / 0.025) and got.high == pytest.approx(32 / 0.016)
    # a step's lower end of 0 (not measurable above noise) leaves no upper end
    assert median_step_rate(StepPoint(2, 16, 0.020, 0.0, 0.025)).high is None


def test_efficiency_is_the_reference_step_over_the_step() -> None:
    # 1 rank at 10 +-0.1 ms, 4 ranks at 12.5 +-0.5 ms: 10 / 12.5 = 0.8, the rates' relative
    # ends in quadrature (as a forecast's efficiency carries them)
    base, four = StepPoint(1, 16, 0.010, 0.0099, 0.0101), StepPoint(4, 16, 0.0125, 0.012, 0.013)
    ref, got = median_step_efficiency([base, four])
    assert (ref.value, ref.low, ref.high) == (1.0, None, None)
    assert got.value == pytest.approx(0.8)
    assert got.low == pytest.approx(0.8 * (1 - math.hypot(0.5 / 13, 0.1 / 9.9)))
    assert got.high == pytest.approx(0.8 * (1 + math.hypot(0.5 / 12, 0.1 / 10.1)))
    assert median_step_efficiency([base, StepPoint(2, 16, 0.02, None, None)])[1].low is None
