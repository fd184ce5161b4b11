"""Each term of the forecast model against cases computed by hand (docs/prediction.md)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.comm_result import CommResult, CommRow
from torchscale.contracts.schema.forecast import ForecastKey
from torchscale.contracts.wording import say
from torchscale.offline.analysis.nccl_bandwidth import ring_steps
from torchscale.offline.analysis.prediction.communication import (
    collective_time,
    exposed_from_cells,
    exposed_from_comm,
    fit_alpha_beta,
    fit_at,
    pick_fits,
)
from torchscale.offline.analysis.prediction.compute import (
    forecast_compute,
    threads_at,
    time_sharing_middle,
    time_sharing_range,
)
from torchscale.offline.analysis.prediction.figures import (
    Figure,
    combine,
    least_squares_weights,
    widened,
)
from torchscale.offline.analysis.prediction.forecast import (
    BackTest,
    _efficiency,
    build_forecast,
    forecast_step,
    model_error,
)
from torchscale.offline.analysis.prediction.inputs import MeasuredCell
from torchscale.offline.analysis.prediction.stragglers import (
    expected_max_normal,
    forecast_stragglers,
)

MS = 1e-3


def said(findings: list[Finding]) -> list[str]:
    """The findings in today's words."""
    return [say(f) for f in findings]


def cell(
    world: int,
    own_ms: float,
    exposed_ms: float = 0.0,
    wait_ms: float = 0.0,
    busy: float | None = 1.0,
    cores: int | None = 2,
    grads: int = 1_000_000,
    threads: int | None = 1,
    spread: float | None = None,
    nodes: int = 1,
) -> MeasuredCell:
    step = (own_ms + exposed_ms + wait_ms) * MS
    return MeasuredCell(
        cell_id=f"m__w{world}",
        world_size=world,
        nodes=nodes,
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
        threads=threads,
        repeat_range=spread,
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
    assert time_sharing_middle(4, 1.0, 2)[0] == 2.0
    assert time_sharing_middle(2, 1.0, 2)[0] == 1.0
    assert time_sharing_middle(8, None, 2)[0] == 1.0
    # 3 ranks on 2 cores: shared out perfectly 1.5x, the busiest core's 2 ranks 2x: 1.75x
    assert time_sharing_range(3, 1.0, 2) == (1.5, 2.0)
    assert time_sharing_middle(3, 1.0, 2)[0] == 1.75
    # half a core each: 3 ranks fit on 2 cores however placed
    assert time_sharing_range(3, 0.5, 2) == (1.0, 1.0)
    # a rank wanting 1.6 cores (threads): spread over the cores, the fair share is the most
    assert time_sharing_range(2, 1.6, 2) == (1.6, 1.6)


def test_an_uneven_count_past_the_cores_spans_fair_to_busiest_core() -> None:
    # 2 ranks, 12 ms own work, 1 core busy each; at 3 ranks on 2 cores the slowest rank runs
    # between 1.5x (18 ms) and 2x (24 ms): the middle 21 ms (9 ms of contention), +-3 ms
    # reaching both ends (in quadrature with the own work's 0.1 ms x 0.75)
    cells = [cell(1, 10.0, busy=1.0, threads=1), cell(2, 12.0, busy=1.0, threads=1)]
    got = forecast_compute(cells, 3, "cpu")
    assert got.contention.value == pytest.approx(9 * MS)
    assert got.contention.above == pytest.approx(math.hypot(3 * MS, 0.075 * MS))
    assert any("between 1.5x" in a and "2x (the busiest core" in a for a in said(got.assumptions))


def test_fewer_threads_slow_a_rank_between_none_and_the_cores_it_kept_busy() -> None:
    # 1 rank kept 1.6 cores busy with 2 threads, own work 10 ms; at 2 ranks on 2 cores each
    # rank gets 2 // 2 = 1 thread: its work slows between 1x and 1.6 / min(1.6, 1) = 1.6x
    # (busy cores count spin-waits): the middle 1.3x, 3 ms of contention, +-3 ms reaching
    # both ends (in quadrature with the own work's 0.1 ms x 0.3)
    got = forecast_compute([cell(1, 10.0, busy=1.6, threads=2)], 2, "cpu")
    assert got.factor == pytest.approx(1.3)
    assert got.compute.value == pytest.approx(10 * MS)
    assert got.contention.value == pytest.approx(3 * MS)
    assert got.contention.above == pytest.approx(math.hypot(3 * MS, 0.03 * MS))
    assert got.contention.low < 1e-4 and got.contention.high > 5.9 * MS
    assert any("launcher's default" in a for a in said(got.assumptions))
    assert any("spin-waits" in a for a in said(got.assumptions))


def test_past_the_cores_ranks_take_turns_from_the_nearest_cell() -> None:
    # own work 10 ms at 1 rank (2 threads), 12 ms at 2 ranks (1 thread, 1 core busy each):
    # at 4 ranks (1 thread each) the reference is the 2-rank cell, time-shared 4 x 1 / 2 = 2x:
    # 24 ms, 12 ms of it contention
    cells = [cell(1, 10.0, busy=1.6, threads=2), cell(2, 12.0, busy=1.0, threads=1)]
    got = forecast_compute(cells, 4, "cpu")
    assert got.reference.world_size == 2
    assert got.compute.value == pytest.approx(12 * MS)
    assert got.contention.value == pytest.approx(12 * MS)
    assert forecast_compute(cells, 4, "cuda").contention.value == 0
    assert any("past the cores" in a for a in said(got.assumptions))
    assert not any(
        "past the cores" in a for a in said(forecast_compute(cells, 2, "cpu").assumptions)
    )


def test_a_reference_past_the_cores_carries_its_own_range() -> None:
    # the reference ran 3 ranks on 2 cores (1.5x to 2x, middle 1.75); at 4 ranks both ends
    # are 2x: the ratio 2 / 1.75 = 1.143 (12 ms x 0.143 = 1.71 ms of contention) is known to
    # +-0.25 / 1.75 of itself, 12 x 1.143 x 0.143 = 1.96 ms each side
    cells = [cell(1, 10.0, busy=1.0, threads=1), cell(3, 12.0, busy=1.0, threads=1)]
    got = forecast_compute(cells, 4, "cpu")
    assert got.reference.world_size == 3
    assert got.contention.value == pytest.approx(12 * MS * (2 / 1.75 - 1))
    spread = 12 * MS * (2 / 1.75) * (0.25 / 1.75)
    assert got.contention.above == pytest.approx(math.hypot(spread, 0.1 * MS * (2 / 1.75 - 1)))
    assert got.sharing_spread == pytest.approx(0.25 / 1.75)


def test_past_the_cores_the_cpu_collective_takes_turns_too() -> None:
    # 2 ranks: own work 12 ms (1 core busy each), exposed 2.1 ms over 0.1 at 1 rank; at 4
    # ranks on 2 cores sharing is 2: own work 24 ms (12 of contention); exposed on the line
    # 0.1 + 2 x 1.5 = 3.1 ms, and its turn-taking another 3.1 x (2 - 1): contention 15.1 ms
    cells = [cell(1, 10.0, 0.1, busy=1.6, threads=2), cell(2, 12.0, 2.1, busy=1.0, threads=1)]
    step = forecast_step(cells, [], "ddp", 4, 1, "cpu")
    assert not isinstance(step, str)
    terms = {name: figure.value for name, figure, _ in step.terms}
    assert terms["exposed_communication"] == pytest.approx(3.1 * MS)
    assert terms["contention"] == pytest.approx(15.1 * MS)
    gpu = forecast_step(cells, [], "ddp", 4, 1, "cuda")
    assert not isinstance(gpu, str)
    assert {n: f.value for n, f, _ in gpu.terms}["contention"] == 0


def test_a_sleep_shares_no_core_so_no_contention() -> None:
    # a rank that keeps 0.02 cores busy: 4 ranks want 0.08 of 2 cores, nothing time-shared;
    # with fewer threads it still needs min(0.02, 1) = 0.02: factor 1, contention 0
    cells = [cell(1, 40.0, busy=0.02, threads=2), cell(2, 40.5, busy=0.02, threads=1)]
    for size in (2, 3, 4, 16):
        got = forecast_compute(cells[:1] if size == 2 else cells, size, "cpu")
        assert got.contention.value == 0.0 and got.factor == 1.0


def test_contention_is_never_below_zero() -> None:
    # the 2-rank cell measured less own work than the 1-rank one (a busy machine at 1 rank):
    # the reference at 4 ranks is the 2-rank cell, and its own work can only grow
    cells = [cell(1, 30.0, busy=1.0, threads=1), cell(2, 10.0, busy=1.0, threads=1)]
    for size in (2, 3, 4):
        assert forecast_compute(cells, size, "cpu").contention.value >= 0


def test_threads_at_the_target() -> None:
    default = [cell(1, 10.0, threads=2), cell(2, 10.0, threads=1)]
    assert threads_at(default, 4, 2)[0] == 1  # the launcher's 2 // 4, at least 1
    fixed = [cell(1, 10.0, threads=1), cell(2, 10.0, threads=1)]
    number, why = threads_at(fixed, 4, 8)
    assert number == 1 and why is not None and "fixed" in say(why)
    assert threads_at([cell(1, 10.0, threads=None)], 2, 2) == (None, None)


def test_stragglers_from_the_robust_jitter_scaled_with_the_own_work() -> None:
    # sigma 1 ms at own work 10 ms; at 4 ranks own work 20 ms: sigma 2 ms x e(4) = 2.0588 ms
    reference = cell(2, 10.0)
    got = forecast_stragglers(reference, 20 * MS, 4)
    assert not isinstance(got, str)
    assert got.seconds.value == pytest.approx(2 * expected_max_normal(4) * MS)
    assert got.seconds.below > 0 and not got.assumptions


def test_stragglers_from_one_rank_jitter_say_so() -> None:
    got = forecast_stragglers(cell(1, 10.0), 10 * MS, 2)
    assert not isinstance(got, str)
    assert got.seconds.value == pytest.approx(expected_max_normal(2) * MS)
    assert got.seconds.below > 0 and got.assumptions


def test_exposed_from_cells_is_a_line_over_the_bus_factor() -> None:
    # 0.1 ms at f(1) = 0, 2.1 ms at f(2) = 1: at 4 ranks f = 1.5, 0.1 + 2 x 1.5 = 3.1 ms
    got = exposed_from_cells([cell(1, 10, 0.1), cell(2, 10, 2.1)], "ddp", 4)
    assert not isinstance(got, str)
    assert got.seconds.value == pytest.approx(3.1 * MS)
    assert "no comm run" in say(got.assumptions[0])
    assert isinstance(exposed_from_cells([cell(1, 10, 0.1)], "ddp", 4), str)


def _comm(
    alpha_s: float, beta: float, world: int = 2, run_id: str = "ar", started_at: str = ""
) -> CommResult:
    """An all_reduce run on the ring's line: alpha_s per step, 2(n-1) steps, four sizes."""
    rows = []
    for size in (1 << 12, 1 << 16, 1 << 20, 1 << 24):
        seconds = alpha_s * 2 * (world - 1) + beta * size * 2 * (world - 1) / world
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
        id=run_id,
        world_size=world,
        device="cpu",
        backend="gloo",
        dtype="float32",
        check=True,
        rows=rows,
        started_at=started_at or None,
    )


def test_alpha_beta_fit_and_the_step_collective() -> None:
    # 5 us per ring step: 10 us at 2 ranks (2 steps), 30 us at 4 (6 steps)
    fit = fit_alpha_beta(_comm(5e-6, 1e-9), "all_reduce")
    assert fit is not None
    assert fit.alpha_s == pytest.approx(5e-6) and fit.beta_s_per_byte == pytest.approx(1e-9)
    t, how = collective_time({"all_reduce": [fit]}, "ddp", 4, 1_000_000, 1_000_000, 1 << 30)
    assert t.value == pytest.approx(30e-6 + 1e6 * 1.5 * 1e-9)  # 1.53 ms
    assert [c["steps"] for c in how] == [6]
    # FSDP from an all_reduce run: each half its own n-1 steps and (n-1)/n bus factor
    fsdp, _ = collective_time({"all_reduce": [fit]}, "fsdp", 4, 1_000_000, 1_000_000, 1 << 30)
    assert fsdp.value == pytest.approx(2 * 15e-6 + 3e6 * 0.75 * 1e-9)


def test_ring_steps_of_each_op() -> None:
    assert [ring_steps("all_reduce", n) for n in (1, 2, 4, 8)] == [0, 2, 6, 14]
    assert [ring_steps("all_gather", n) for n in (1, 2, 4)] == [0, 1, 3]
    assert ring_steps("reduce_scatter", 8) == 7


def test_the_fit_is_robust_to_a_stalled_row() -> None:
    # one row stalled 20x by a busy host: least squares would follow it, Theil-Sen keeps the
    # line of the others (5 us a step, 1 ns/B), and the error band, a median of the rows'
    # residuals, is that of the 7 clean rows: 0
    run = _comm(5e-6, 1e-9)
    sizes = [1 << k for k in range(10, 25, 2)]
    rows = [
        run.rows[0].model_copy(
            update={"size_bytes": s, "count": s // 4, "time_us": (10e-6 + 1e-9 * s) * 1e6}
        )
        for s in sizes
    ]
    rows[2] = rows[2].model_copy(update={"time_us": rows[2].time_us * 20})
    fit = fit_alpha_beta(run.model_copy(update={"rows": rows}), "all_reduce")
    assert fit is not None
    assert fit.alpha_s == pytest.approx(5e-6, rel=1e-6)
    assert fit.beta_s_per_byte == pytest.approx(1e-9, rel=1e-6)
    assert fit.relative_error == pytest.approx(0, abs=1e-9)  # the clean rows: median residual


def test_too_few_sizes_fit_no_line() -> None:
    # a line through 3 rows passes through 2 of them: no scatter left to learn its error from
    run = _comm(5e-6, 1e-9)
    assert fit_alpha_beta(run, "all_reduce") is not None
    assert fit_alpha_beta(run.model_copy(update={"rows": run.rows[:3]}), "all_reduce") is None


def test_of_two_runs_of_one_size_the_later_is_used() -> None:
    later = _comm(50e-6, 1e-9, 2, "comm-b-later", "2026-11-26T12:00:00+00:00")
    earlier = _comm(5e-6, 1e-9, 2, "comm-z-earlier", "2026-11-26T11:00:00+00:00")
    fits, _ = pick_fits([later, earlier], "cpu", 1)
    assert [f.run_id for f in fits["all_reduce"]] == ["comm-b-later"]


def test_the_comm_run_nearest_the_target_is_used() -> None:
    # runs at 2 and 4 ranks on different lines: a forecast at 4 reads the 4-rank run itself,
    # at 3 the nearer larger one, at 8 the 4-rank run carried over by the ring's steps
    small = fit_alpha_beta(_comm(5e-6, 1e-9, 2, "w2"), "all_reduce")
    large = fit_alpha_beta(_comm(50e-6, 2e-9, 4, "w4"), "all_reduce")
    assert small is not None and large is not None
    fits = {"all_reduce": [small, large]}
    assert fit_at(fits, "all_reduce", 4) is large and fit_at(fits, "all_reduce", 2) is small
    assert fit_at(fits, "all_reduce", 3) is large
    assert fit_at(fits, "all_gather", 8) is large  # all_reduce stands in
    t, how = collective_time(fits, "ddp", 8, 1_000_000, 1_000_000, 1 << 30)
    assert t.value == pytest.approx(14 * 50e-6 + 1e6 * 1.75 * 2e-9)
    assert [c["run_id"] for c in how] == ["w4"]


def test_an_unmeasured_overlap_hides_nothing_with_the_interval_below() -> None:
    # one rank only: exposed at 4 = 0.1 + T(4) = 0.1 + 1.53 ms; the interval reaches down
    # to all of T hidden (own work 10 ms > T): 0.1 ms, less the measurement's own 0.01
    fit = fit_alpha_beta(_comm(5e-6, 1e-9), "all_reduce")
    assert fit is not None
    got = exposed_from_comm([cell(1, 10, 0.1)], {"all_reduce": [fit]}, "ddp", 4, 1 << 30)
    assert got is not None
    assert got.seconds.value == pytest.approx(1.63 * MS)
    assert got.seconds.low == pytest.approx(0.1 * MS, abs=0.02 * MS)
    assert "nothing assumed hidden" in say(got.assumptions[0])
    assert "can also pay more than the comm run's collective" in say(got.assumptions[0])


def test_a_latency_only_run_fits_no_bytes_term() -> None:
    # times that fall with size (noise around a latency): slope 0, the median time 1.5 ms as
    # the latency of the run's 2 ring steps
    run = _comm(5e-6, 1e-9)
    times = [2500.0, 1750.0, 1250.0, 1000.0]  # us, at 4 KiB, 64 KiB, 1 MiB, 16 MiB
    rows = [r.model_copy(update={"time_us": t}) for r, t in zip(run.rows, times, strict=True)]
    fit = fit_alpha_beta(run.model_copy(update={"rows": rows}), "all_reduce")
    assert fit is not None
    assert fit.beta_s_per_byte == 0 and fit.alpha_s == pytest.approx(0.75e-3)


def test_exposed_from_comm_subtracts_the_measured_overlap() -> None:
    # T(2) = 1.01 ms, exposed 0.6 ms at 2 ranks and 0.1 at 1: H = 1.01 - 0.5 = 0.51 ms;
    # T(4) = 1.53 ms: exposed = 0.1 + (1.53 - 0.51) = 1.12 ms
    fit = fit_alpha_beta(_comm(5e-6, 1e-9), "all_reduce")
    assert fit is not None
    cells = [cell(1, 10, 0.1), cell(2, 10, 0.6)]
    got = exposed_from_comm(cells, {"all_reduce": [fit]}, "ddp", 4, 1 << 30)
    assert got is not None
    assert got.seconds.value == pytest.approx(1.12 * MS)
    assert got.basis == ["comm/ar.json"]


def test_without_the_models_bytes_a_comm_run_sizes_nothing() -> None:
    # a user's job (jobs:, profile -- COMMAND): the probe counts no parameter bytes, stored 0
    fit = fit_alpha_beta(_comm(5e-6, 1e-9), "all_reduce")
    assert fit is not None
    cells = [cell(1, 10, 0.1, grads=0), cell(2, 10, 0.6, grads=0)]
    assert exposed_from_comm(cells, {"all_reduce": [fit]}, "ddp", 4, 1 << 30) is None
    assert not isinstance(exposed_from_cells(cells, "ddp", 4), str)  # what is used instead


def test_a_step_that_paid_more_than_the_collective_carries_it() -> None:
    # T(2) = 1.01 ms but 2 ranks exposed 3.1 ms over 0.1 at 1: H = 1.01 - 3.0 = -1.99 ms;
    # at 4: 0.1 + (1.53 + 1.99) = 3.62 ms (and at 2 it gives back the measured 3.1 ms)
    fit = fit_alpha_beta(_comm(5e-6, 1e-9), "all_reduce")
    assert fit is not None
    cells = [cell(1, 10, 0.1), cell(2, 10, 3.1)]
    at_4 = exposed_from_comm(cells, {"all_reduce": [fit]}, "ddp", 4, 1 << 30)
    at_2 = exposed_from_comm(cells, {"all_reduce": [fit]}, "ddp", 2, 1 << 30)
    assert at_4 is not None and at_2 is not None
    assert at_4.seconds.value == pytest.approx(3.62 * MS)
    assert at_2.seconds.value == pytest.approx(3.1 * MS)


def test_a_stalled_one_rank_cell_exposes_no_more_than_the_multi_rank_ones() -> None:
    # 1 rank read 150 ms of overhead (stalled), 2 ranks exposed 3.1 ms: E1 is taken as 3.1,
    # H = 1.01 - (3.1 - 3.1) = 1.01 ms; at 4: 3.1 + (1.53 - 1.01) = 3.62 ms, not 150
    fit = fit_alpha_beta(_comm(5e-6, 1e-9), "all_reduce")
    assert fit is not None
    cells = [cell(1, 10, 150.0), cell(2, 10, 3.1)]
    got = exposed_from_comm(cells, {"all_reduce": [fit]}, "ddp", 4, 1 << 30)
    assert got is not None and got.seconds.value == pytest.approx(3.62 * MS)


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
    assert "back-testing" in say(got.assumptions[-1])
    assert "model_uncertainty" not in got.unavailable
    narrow = build_forecast(
        _key(8), cells[:2], [], forecast_id="f", created_at="t", measured_strategy="ddp"
    )
    # nothing checks a forecast from two sizes: widened as far as such forecasts have missed
    assert not isinstance(narrow, str) and "model_uncertainty" not in narrow.unavailable
    assert "missed by up to 30 % (the stated default until a track record" in say(
        narrow.assumptions[-1]
    )
    record = build_forecast(
        _key(8),
        cells[:2],
        [],
        forecast_id="f",
        created_at="t",
        measured_strategy="ddp",
        missed=(0.45, 12),
    )
    assert not isinstance(record, str) and "up to 45 % (the worst of 12" in say(
        record.assumptions[-1]
    )
    assert record.step_s.high - record.step_s.low > narrow.step_s.high - narrow.step_s.low
    assert sum(t.seconds.value or 0 for t in got.terms) == pytest.approx(got.step_s.value)


def test_without_a_back_test_the_repeats_spread_widens_it() -> None:
    # 1 and 2 ranks, no comm run: 2 cannot be forecast from 1, so no back-test; the 2-rank
    # cell's repeats spread 20 %: the step's half-width grows to at least 20 % of it
    cells = [cell(1, 10, 0.1), cell(2, 10, 2.1, spread=0.2)]
    got = build_forecast(
        _key(4), cells, [], forecast_id="f", created_at="t", measured_strategy="ddp"
    )
    assert not isinstance(got, str) and "model_uncertainty" not in got.unavailable
    step = got.step_s
    assert step.value is not None and step.low is not None and step.high is not None
    assert step.high - step.value >= 0.2 * step.value
    assert step.value - step.low >= 0.2 * step.value
    assert "range of the repeats up to 20.0 %" in say(got.assumptions[-1])


def test_model_error_is_the_larger_of_back_test_and_spread() -> None:
    tested = BackTest({2: -0.05, 4: 0.12})
    assert model_error(tested, [cell(1, 10, spread=0.3)])[0] == pytest.approx(0.3)
    assert model_error(tested, [cell(1, 10, spread=0.02)])[0] == pytest.approx(0.12)
    # nothing back-tested, no spread: as far as such forecasts have missed (a stated default)
    assert model_error(BackTest({}), [cell(1, 10)])[0] == pytest.approx(0.30)


def test_efficiency_base_is_the_median_step_not_the_wall_clock_throughput() -> None:
    # the 1-rank reference's median step is 10 +-0.1 ms (16 samples: 1,600/s), its wall-clock
    # throughput 1,000/s (stalls in a mean); the 4-rank forecast step 12.5 +-0.5 ms (5,120/s).
    # Same statistic on both sides: 5,120 / (4 x 1,600) = 10 / 12.5 = 0.8, where the
    # wall-clock base would give 1.28. Relative ends: the rate 0.5/13 below and 0.5/12 above,
    # the base 0.1/9.9 above and 0.1/10.1 below, in quadrature
    reference = replace(cell(1, 10), samples_per_s=Figure(1000.0, 10.0, 10.0))
    got = _efficiency(_key(4), Figure(12.5 * MS, 0.5 * MS, 0.5 * MS), reference)
    assert got.value == pytest.approx(0.8)
    assert got.below == pytest.approx(0.8 * math.hypot(0.5 / 13, 0.1 / 9.9))
    assert got.above == pytest.approx(0.8 * math.hypot(0.5 / 12, 0.1 / 10.1))


def test_with_no_cell_as_sparse_as_the_target_the_fewest_ranks_per_host_say_so() -> None:
    # measured 2 and 4 ranks on one host; the target runs 1 rank per host (2 over 2 nodes):
    # the 2-rank cell (fewest per host), not the most crowded 4, and a line naming it
    cells = [cell(2, 10), cell(4, 14)]
    got = forecast_compute(cells, 1.0, "cpu")
    assert got.reference.world_size == 2
    assert say(got.assumptions[0]).startswith("no measured cell ran as few as 1 rank(s) per host")
    assert "m__w2, the fewest (2 per host)" in say(got.assumptions[0])
    # one as sparse as the target: that one, nothing to say
    fine = forecast_compute([cell(1, 9), *cells], 1.0, "cpu")
    assert fine.reference.world_size == 1
    assert not any("as few as" in line for line in said(fine.assumptions))


def test_the_overlap_is_read_at_the_references_ranks_per_host() -> None:
    # 2 ranks exposed 0.6 ms (H = 1.01 - 0.5 = 0.51 ms); 4 ranks on the same host, past the
    # cores, exposed 5.1 ms of turns taken (H = 1.51 - 5.0 = -3.49): with the reference at 2
    # per host H is 0.51 alone, so at 8 (T = 1.76 ms): 0.1 + (1.76 - 0.51) = 1.35 ms, not
    # the average of both
    fit = fit_alpha_beta(_comm(5e-6, 1e-9), "all_reduce")
    assert fit is not None
    cells = [cell(1, 10, 0.1), cell(2, 10, 0.6), cell(4, 10, 5.1)]
    got = exposed_from_comm(cells, {"all_reduce": [fit]}, "ddp", 8, 1 << 30, 2.0)
    assert got is not None
    assert got.seconds.value == pytest.approx(0.1 * MS + (14 * 5e-6 + 1e6 * 1.75e-9) - 0.51 * MS)
    assert "(from m__w2)" in say(got.how)
    at_4 = exposed_from_comm(cells, {"all_reduce": [fit]}, "ddp", 8, 1 << 30, 4.0)
    assert at_4 is not None and "(from m__w4)" in say(at_4.how)


def test_a_cell_without_its_busy_cores_is_held_to_the_cores_by_its_threads() -> None:
    """Every model alike: a model whose cells ran with telemetry off took
    no turns past the cores, and its 4-rank forecast on 2 cores read 1.7x the 2-rank one."""
    recorded = forecast_compute([cell(2, 10.0, busy=1.0)], 4, "cpu")
    unrecorded = forecast_compute([cell(2, 10.0, busy=None)], 4, "cpu")
    assert unrecorded.contention.value == pytest.approx(recorded.contention.value)
    assert unrecorded.contention.value > 0
    assert any("taken as its 1 thread(s)" in note for note in said(unrecorded.assumptions))
