"""What a measured cell gives a forecast: the median step, own work from the phase medians, a
robust jitter and the threads and cores its ranks had (hand-checked against the fixture)."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from tests.forecast_samples import FIXTURE, fixture_cell
from torchscale.contracts.schema.cell_result import StepTimeStats
from torchscale.contracts.wording import say
from torchscale.offline.analysis.prediction.figures import Figure
from torchscale.offline.analysis.prediction.inputs import (
    MeasuredCell,
    measured_cell,
    noisy_cells,
    robust_sigma,
)
from torchscale.offline.analysis.prediction.stragglers import expected_max_normal

E40 = 2.1607771781749885  # e(40): the fastest of 40 normal steps, sigmas below the middle


def _stats(mean: float, p50: float, fastest: float, std: float) -> StepTimeStats:
    return StepTimeStats(
        count=40, mean=mean, p50=p50, p95=p50, p99=p50, min=fastest, max=p50, std=std, cv=std / mean
    )


def noisy(world: int, cv: float, mean_ms: float, median_ms: float) -> MeasuredCell:
    step = Figure(median_ms * 1e-3)
    return MeasuredCell(
        cell_id=f"m__w{world}",
        world_size=world,
        nodes=1,
        step=step,
        own_work=step,
        wait=Figure(0.0),
        exposed=Figure(0.0),
        samples_per_s=Figure(1.0),
        gradient_bytes=1,
        parameter_bytes=1,
        jitter_s=None,
        jitter_steps=0,
        host_cores=2,
        busy_cores_per_rank=1.0,
        threads=1,
        repeat_range=None,
        mean_step_s=mean_ms * 1e-3,
        step_cv=cv,
    )


def test_robust_sigma_is_read_from_the_faster_half() -> None:
    # the fastest of 40 steps 2 x e(40) ms below a 10 ms median: sigma 2 ms, whatever stalled
    fastest = 10e-3 - 2e-3 * E40
    assert robust_sigma(_stats(10e-3, 10e-3, fastest, 2e-3)) == pytest.approx(2e-3)
    assert robust_sigma(_stats(900e-3, 10e-3, fastest, 2.0)) == pytest.approx(2e-3)


def test_a_cell_far_noisier_than_its_siblings_is_named() -> None:
    # CVs 2.1, 0.15 and 0.2: the first is above 3 x median(0.15, 0.2) = 0.525, the others are
    # not above 3 x their siblings' median
    cells = [
        noisy(1, cv=2.1, mean_ms=41.1, median_ms=0.80),
        noisy(2, cv=0.15, mean_ms=10.2, median_ms=10.0),
        noisy(4, cv=0.2, mean_ms=20.5, median_ms=20.0),
    ]
    (named,) = noisy_cells(cells)
    line = say(named)
    assert line.startswith("m__w1 ") and "41.1 ms" in line and "0.8 ms" in line
    # alone: named only with a std above its mean
    assert noisy_cells(cells[1:2]) == []
    assert len(noisy_cells(cells[:1])) == 1


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
    assert result.throughput is not None
    repeats = result.throughput.repeats
    assert cell.repeat_range == pytest.approx(
        (max(repeats) - min(repeats)) / statistics.median(repeats)
    )


def test_the_worked_example_of_the_docs() -> None:
    """docs/prediction.md, "A forecast by hand": tiny-gpt2 b32 at 4 ranks from the fixture's
    1- and 2-rank cells, each term recomputed here from the 2-rank cell's stored fields."""
    from torchscale.contracts.schema.forecast import ForecastKey
    from torchscale.offline.analysis.prediction.forecast import build_forecast, measured_groups

    one = fixture_cell(Path(FIXTURE), "tiny-gpt2__b32__w1")
    two = fixture_cell(Path(FIXTURE), "tiny-gpt2__b32__w2")
    (by_strategy,) = measured_groups([one, two]).values()
    cells = by_strategy["ddp"].cells
    key = ForecastKey.of_cell(two.cell).model_copy(update={"world_size": 4})
    made = build_forecast(key, cells, [], forecast_id="f", created_at="t", measured_strategy="ddp")
    assert not isinstance(made, str)
    terms = {t.name: t.seconds.value for t in made.terms}
    phases = [r.phases for r in two.ranks if r.phases]
    own = sum(p.data + p.forward + p.backward + p.optimizer for p in phases) / len(phases)  # type: ignore[operator]
    assert two.telemetry is not None
    loads = [r.load for r in two.telemetry.ranks if r.load]
    busy = sum(x.own_cpu_s / x.window_s for x in loads) / len(loads)  # type: ignore[operator]
    factor = 4 * busy / 2  # 4 ranks x busy cores on 2 cores; 2 ranks did not time-share
    assert terms["compute"] == pytest.approx(own)
    e1, e2 = cells[0].exposed.value, cells[1].exposed.value
    exposed = e1 + (e2 - e1) * 1.5  # the line over f(w) at f(4) = 1.5
    # own work and the CPU collective take turns past the cores
    assert terms["contention"] == pytest.approx((own + exposed) * (factor - 1))
    assert terms["stragglers"] == pytest.approx(
        cells[1].jitter_s * factor * expected_max_normal(4)  # type: ignore[operator]
    )
    assert terms["exposed_communication"] == pytest.approx(exposed)
    assert made.step_s.value == pytest.approx(sum(v or 0 for v in terms.values()))
