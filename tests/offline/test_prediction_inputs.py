"""What a measured cell gives a forecast: the median step, own work from the phase medians, a
robust jitter and the threads and cores its ranks had (hand-checked against the fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.forecast_samples import FIXTURE, fixture_cell
from torchscale.contracts.schema.cell_result import StepTimeStats
from torchscale.offline.analysis.prediction.inputs import (
    heavy_tail,
    measured_cell,
    robust_sigma,
)
from torchscale.offline.analysis.prediction.stragglers import expected_max_normal


def _stats(mean: float, p50: float, p95: float, std: float) -> StepTimeStats:
    return StepTimeStats(
        count=40, mean=mean, p50=p50, p95=p95, p99=p95, min=p50, max=p95, std=std, cv=std / mean
    )


def test_robust_sigma_is_the_body_spread_of_a_normal() -> None:
    # p95 - p50 = 1.645 sigma for a normal: 3.29 ms apart is sigma 2 ms
    assert robust_sigma(_stats(10e-3, 10e-3, 13.2897e-3, 2e-3)) == pytest.approx(2e-3, rel=1e-4)


def test_a_heavy_tail_is_named_and_a_normal_body_is_not() -> None:
    # 41.1 ms mean over a median of 0.80 ms with a std of 86 ms: far beyond its body's sigma
    cell = fixture_cell(Path(FIXTURE), "tiny-mlp__b16__w1")
    stalled = cell.model_copy(update={"step_time": _stats(41.1e-3, 0.80e-3, 0.9e-3, 86e-3)})
    why = heavy_tail(stalled)
    assert why is not None and "41.1 ms" in why and "0.8 ms" in why
    steady = cell.model_copy(update={"step_time": _stats(10e-3, 10e-3, 13.29e-3, 2.1e-3)})
    assert heavy_tail(steady) is None


def test_a_cell_is_read_in_medians() -> None:
    result = fixture_cell(Path(FIXTURE), "tiny-gpt2__b32__w2")
    cell, why = measured_cell(result)
    assert cell is not None, why
    assert result.step_time is not None
    assert cell.step.value == pytest.approx(result.step_time.p50)
    phases = [r.phases for r in result.ranks]
    own = [p.data + p.forward + p.backward + p.optimizer for p in phases if p]  # type: ignore[operator]
    assert cell.own_work.value == pytest.approx(sum(own) / len(own))
    assert cell.wait.value == pytest.approx((cell.jitter_s or 0) * expected_max_normal(2))
    assert cell.exposed.value == pytest.approx(
        cell.step.value - cell.own_work.value - cell.wait.value
    )
    assert cell.threads == result.environment["torch_threads"]
    assert result.throughput is not None and cell.spread == result.throughput.spread
