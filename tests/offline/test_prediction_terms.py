"""Each term of the forecast model against cases computed by hand (docs/prediction.md)."""

from __future__ import annotations

import math

import pytest

from torchscale.contracts.schema.comm_result import CommResult, CommRow
from torchscale.contracts.schema.forecast import ForecastKey
from torchscale.offline.analysis.prediction.communication import (
    collective_time,
    exposed_from_cells,
    exposed_from_comm,
    fit_alpha_beta,
)
from torchscale.offline.analysis.prediction.compute import forecast_compute, time_sharing
from torchscale.offline.analysis.prediction.figures import (
    Figure,
    combine,
    least_squares_weights,
    widened,
)
from torchscale.offline.analysis.prediction.forecast import build_forecast, forecast_step
from torchscale.offline.analysis.prediction.inputs import MeasuredCell
from torchscale.offline.analysis.prediction.stragglers import (
    expected_max_normal,
    forecast_stragglers,
)

MS = 1e-3


def cell(
    world: int,
    own_ms: float,
    exposed_ms: float = 0.0,
    wait_ms: float = 0.0,
    busy: float | None = 1.0,
    cores: int | None = 2,
    grads: int = 1_000_000,
) -> MeasuredCell:
    step = (own_ms + exposed_ms + wait_ms) * MS
    return MeasuredCell(
        cell_id=f"m__w{world}",
        world_size=world,
        nodes=1,
        own_work=Figure(own_ms * MS, 0.1 * MS, 0.1 * MS),
        exposed=Figure(exposed_ms * MS, 0.01 * MS, 0.01 * MS),
        wait=Figure(wait_ms * MS, 0.01 * MS, 0.01 * MS),
        step=Figure(step, 0.1 * MS, 0.1 * MS),
        samples_per_s=Figure(16 * world / step, 10.0, 10.0),
        gradient_bytes=grads,
        parameter_bytes=grads,
        jitter_s=1 * MS,
        jitter_steps=40,
        host_cores=cores,
        busy_cores_per_rank=busy,
    )


def test_expected_max_of_normals_has_its_closed_forms() -> None:
    assert expected_max_normal(1) == 0
    assert expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-6)
    assert expected_max_normal(3) == pytest.approx(3 / (2 * math.sqrt(math.pi)), abs=1e-6)
    assert expected_max_normal(16) == pytest.approx(1.7660, abs=1e-4)


def test_least_squares_weights_read_the_line() -> None:
    # the line through (0, y0) and (1, y1) at 1.5 is -0.5 y0 + 1.5 y1
    assert least_squares_weights([0.0, 1.0], 1.5) == pytest.approx([-0.5, 1.5])
    assert least_squares_weights([2.0, 2.0], 5.0) == pytest.approx([0.5, 0.5])


def test_intervals_add_in_quadrature_and_widen() -> None:
    summed = combine([1.0, 1.0], [Figure(1.0, 3.0, 0.0), Figure(2.0, 4.0, 1.0)])
    assert (summed.value, summed.below, summed.above) == (3.0, 5.0, 1.0)
    wide = widened(Figure(10.0, 3.0, 3.0), 0.4)
    assert wide.below == pytest.approx(5.0)  # hypot(3, 4)


def test_time_sharing_past_the_cores() -> None:
    assert time_sharing(4, 1.0, 2) == 2.0
    assert time_sharing(2, 1.0, 2) == 1.0
    assert time_sharing(8, None, 2) == 1.0


def test_contention_fitted_then_time_shared() -> None:
    # own work 10 ms at 1 rank, 12 ms at 2; 2 cores, a rank keeps 1 busy: at 4 ranks the
    # line at 2 ranks (12 ms) runs 4 x 1 / 2 = 2x slower: 24 ms, 14 ms above the reference
    got = forecast_compute([cell(1, 10.0), cell(2, 12.0)], 4, "cpu")
    assert got.compute.value == pytest.approx(10 * MS)
    assert got.contention.value == pytest.approx(14 * MS)
    assert forecast_compute([cell(1, 10.0), cell(2, 12.0)], 4, "cuda").contention.value == 0


def test_one_host_load_measured_is_an_assumption() -> None:
    got = forecast_compute([cell(1, 10.0, cores=8)], 2, "cpu")
    assert got.contention.value == pytest.approx(0.0)
    assert any("second world size" in a for a in got.assumptions)


def test_stragglers_from_the_measured_wait() -> None:
    # wait 0.5642 ms at 2 ranks: sigma = 1 ms; at 4 ranks 1 ms x e(4) = 1.0294 ms
    wait = expected_max_normal(2)
    got = forecast_stragglers([cell(1, 10.0), cell(2, 10.0, wait_ms=wait)], 4)
    assert not isinstance(got, str)
    assert got.seconds.value == pytest.approx(expected_max_normal(4) * MS)


def test_stragglers_from_one_rank_jitter_say_so() -> None:
    got = forecast_stragglers([cell(1, 10.0)], 2)
    assert not isinstance(got, str)
    assert got.seconds.value == pytest.approx(expected_max_normal(2) * MS)
    assert got.seconds.below > 0 and got.assumptions


def test_exposed_from_cells_is_a_line_over_the_bus_factor() -> None:
    # 0.1 ms at f(1) = 0, 2.1 ms at f(2) = 1: at 4 ranks f = 1.5, 0.1 + 2 x 1.5 = 3.1 ms
    got = exposed_from_cells([cell(1, 10, 0.1), cell(2, 10, 2.1)], "ddp", 4)
    assert not isinstance(got, str)
    assert got.seconds.value == pytest.approx(3.1 * MS)
    assert "no comm run" in got.assumptions[0]
    assert isinstance(exposed_from_cells([cell(1, 10, 0.1)], "ddp", 4), str)


def _comm(alpha_s: float, beta: float, world: int = 2) -> CommResult:
    rows = []
    for size in (1 << 16, 1 << 20, 1 << 24):
        seconds = alpha_s + beta * size * 2 * (world - 1) / world
        rows.append(
            CommRow(
                op="all_reduce",
                size_bytes=size,
                count=size // 4,
                dtype="float32",
                placement="out-of-place",
                time_us=seconds * 1e6,
            )
        )
    return CommResult(
        id="ar",
        world_size=world,
        device="cpu",
        backend="gloo",
        dtype="float32",
        check=True,
        rows=rows,
    )


def test_alpha_beta_fit_and_the_step_collective() -> None:
    fit = fit_alpha_beta(_comm(10e-6, 1e-9), "all_reduce")
    assert fit is not None
    assert fit.alpha_s == pytest.approx(10e-6) and fit.beta_s_per_byte == pytest.approx(1e-9)
    t, _how = collective_time({"all_reduce": fit}, "ddp", 4, 1_000_000, 1_000_000, 1 << 30)
    assert t.value == pytest.approx(10e-6 + 1e6 * 1.5 * 1e-9)  # 1.51 ms


def test_exposed_from_comm_subtracts_the_measured_overlap() -> None:
    # T(2) = 1.01 ms, exposed 0.6 ms at 2 ranks and 0.1 at 1: H = 1.01 - 0.5 = 0.51 ms;
    # T(4) = 1.51 ms: exposed = 0.1 + (1.51 - 0.51) = 1.1 ms
    fit = fit_alpha_beta(_comm(10e-6, 1e-9), "all_reduce")
    assert fit is not None
    cells = [cell(1, 10, 0.1), cell(2, 10, 0.6)]
    got = exposed_from_comm(cells, {"all_reduce": fit}, "ddp", 4, 1 << 30)
    assert got is not None
    assert got.seconds.value == pytest.approx(1.1 * MS)
    assert got.basis == ["comm/ar.json"]


def test_no_forecast_below_the_measured_or_without_a_collective() -> None:
    assert "below the smallest" in str(forecast_step([cell(2, 10)], [], "ddp", 1, 1, "cpu"))
    assert "no collective measured" in str(forecast_step([cell(1, 10)], [], "ddp", 4, 1, "cpu"))


def _key(world: int, strategy: str = "ddp") -> ForecastKey:
    return ForecastKey(
        model="m",
        label="m",
        batch_size=16,
        precision="fp32",
        strategy=strategy,  # type: ignore[arg-type]
        world_size=world,
        device="cpu",
    )


def test_fsdp_is_not_derivable_from_ddp_without_a_comm_run() -> None:
    cells = [cell(1, 10, 0.1), cell(2, 10, 2.1)]
    got = build_forecast(
        _key(4, "fsdp"), cells, [], forecast_id="f", created_at="t", measured_strategy="ddp"
    )
    assert isinstance(got, str) and "not derivable" in got


def test_back_test_widens_the_interval_by_the_model_error() -> None:
    cells = [cell(1, 10, 0.1), cell(2, 10, 2.1), cell(4, 10, 3.1, wait_ms=0.9)]
    got = build_forecast(
        _key(8), cells, [], forecast_id="f", created_at="t", measured_strategy="ddp"
    )
    assert not isinstance(got, str)
    assert "back-testing" in got.assumptions[-1]
    assert "model_uncertainty" not in got.unavailable
    narrow = build_forecast(
        _key(8), cells[:2], [], forecast_id="f", created_at="t", measured_strategy="ddp"
    )
    assert not isinstance(narrow, str) and "model_uncertainty" in narrow.unavailable
    assert sum(t.seconds.value or 0 for t in got.terms) == pytest.approx(got.step_s.value)
