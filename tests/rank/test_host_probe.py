"""The clean window edge, the GPU busy probe's arithmetic and the itemised fixed costs, in one
process on CPU: the edge step's order against the window's clocks, the probe's validity rule and
share with made-up event times (its CUDA side needs a GPU: the `gpu` test), the fixed costs'
slowest-rank rule and their reasons."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist

from tests.rank.test_aggregate import make_rank, run
from tests.rank.test_phases import worker_spec
from torchscale.contracts.schema.cell_result import HOST_BOUND_CPU
from torchscale.contracts.thresholds import HOST_BOUND_SHARE
from torchscale.rank.worker import measure as measure_module
from torchscale.rank.worker.fixed_costs import (
    CPU_DEVICE_INIT,
    RankFixedCosts,
    fixed_costs_record,
    process_start_seconds,
)
from torchscale.rank.worker.host_probe import (
    ISSUE_MARGIN,
    NOT_RUN_METHOD,
    PIPELINE_REASON,
    ProbeReading,
    host_bound_record,
    judge_reading,
    probe_rank,
    probe_steps,
    sleep_ms_for,
)
from torchscale.rank.worker.measure import WINDOW_EDGE_STEPS, run_window
from torchscale.rank.worker.trainer import Trainer


@pytest.fixture(scope="module")
def process_group(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A 1-rank gloo group, as torchrun gives a world-size-1 cell."""
    store = f"file://{tmp_path_factory.mktemp('pg') / 'store'}"
    dist.init_process_group("gloo", init_method=store, rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


# ==================================================================== the window's clean edge


class LoggingTimer:
    def __init__(self, steps: int, log: list[str]) -> None:
        self.log = log
        self.steps = steps

    def start(self, step: int) -> None:
        self.log.append(f"start {step}")

    def stop(self, step: int) -> None:
        self.log.append(f"stop {step}")

    def seconds(self) -> list[float]:
        return [0.001] * self.steps


def logged_window(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, skip_sync: bool
) -> tuple[list[str], Any]:
    """A real 3-step window of tiny-mlp with every step, synchronize, barrier and timer edge
    logged in order."""
    trainer = Trainer.build(worker_spec(tmp_path), torch.device("cpu"))
    log: list[str] = []
    step = trainer.step

    def logged_step(skip_gradient_sync: bool = False, phases: Any = None) -> None:
        timed = "timed" if phases is not None else "untimed"
        log.append(f"step {timed} skip_sync={skip_gradient_sync}")
        step(skip_gradient_sync=skip_gradient_sync, phases=phases)

    monkeypatch.setattr(trainer, "step", logged_step)
    monkeypatch.setattr(measure_module, "synchronize", lambda _device: log.append("sync"))
    monkeypatch.setattr(dist, "barrier", lambda: log.append("barrier"))
    monkeypatch.setattr(
        measure_module, "make_timer", lambda _mode, steps, _device: LoggingTimer(steps, log)
    )
    window = run_window(trainer, 3, "perf_counter", skip_sync=skip_sync)
    return log, window


@pytest.mark.usefixtures("process_group")
@pytest.mark.parametrize("skip_sync", [False, True])
def test_the_step_after_the_window_edge_is_run_untimed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, skip_sync: bool
) -> None:
    """After the opening edge (synchronize, barrier) one step runs with no timer and no phase
    recorder, the same skip_sync as the window's, then a synchronize; only then the timers
    start, on the steps that are kept."""
    log, window = logged_window(monkeypatch, tmp_path, skip_sync)
    untimed = f"step untimed skip_sync={skip_sync}"
    timed = f"step timed skip_sync={skip_sync}"
    assert WINDOW_EDGE_STEPS == 1
    assert log == [
        "sync",
        "barrier",
        untimed,
        "sync",
        *[entry for i in range(3) for entry in (f"start {i}", timed, f"stop {i}")],
        "sync",
        "barrier",
    ]
    assert len(window.step_s) == 3
    assert window.phases is not None and all(len(v) == 3 for v in window.phases.values())


@pytest.mark.usefixtures("process_group")
def test_the_overhead_benchmarks_control_window_has_the_same_edge(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """phases=False (benchmarks/phase_timing_overhead.py's control): the same untimed step."""
    trainer = Trainer.build(worker_spec(tmp_path), torch.device("cpu"))
    calls: list[Any] = []
    step = trainer.step

    def counted(skip_gradient_sync: bool = False, phases: Any = None) -> None:
        calls.append(phases)
        step(skip_gradient_sync=skip_gradient_sync, phases=phases)

    monkeypatch.setattr(trainer, "step", counted)
    window = run_window(trainer, 2, "perf_counter", phases=False)
    assert len(calls) == 2 + WINDOW_EDGE_STEPS
    assert len(window.step_s) == 2


def test_result_counts_its_edge_steps_and_says_why_a_cpu_cell_has_no_probe() -> None:
    result = run([make_rank(0, [0.04, 0.04])])
    assert result.window_edge_steps == 1
    assert result.host_bound is None
    assert result.unavailable["host_bound"] == HOST_BOUND_CPU


# ======================================================================= the busy probe's rule


def reading(
    issue_ms: float, sleep_ms: float = 30.0, steps_ms: tuple[float, ...] = (2.0, 1.0, 1.0)
) -> ProbeReading:
    return ProbeReading(
        rank=0,
        steps=len(steps_ms),
        sleep_ms=sleep_ms,
        sleep_s=sleep_ms / 1e3,
        issue_s=issue_ms / 1e3,
        step_gpu_s=[s / 1e3 for s in steps_ms],
    )


def test_a_probe_whose_host_finished_before_the_sleep_ended_gives_the_median_step() -> None:
    """The first step absorbs the ranks' skew: the median of the K steps is the busy time."""
    busy, why = judge_reading(reading(issue_ms=12.0))
    assert why is None
    assert busy == pytest.approx(0.001)


def test_a_probe_whose_host_waited_for_the_gpu_is_not_measurable() -> None:
    """Issuing took longer than the sleep's span (less the margin): a host sync or a full
    launch queue held the host, so the GPU may have waited for it inside the steps."""
    at_margin = reading(issue_ms=30.0 * ISSUE_MARGIN)
    assert judge_reading(at_margin)[1] is None
    busy, why = judge_reading(reading(issue_ms=30.0 * ISSUE_MARGIN + 0.1))
    assert busy is None
    assert why is not None and "host waited for the GPU" in why and "rank 0" in why


def test_the_share_is_the_busiest_ranks_against_the_median_step() -> None:
    """1 ms of GPU per step against a 4 ms step: 25 % busy, host-bound; the busiest rank
    (rank 1's 3 ms) decides for the cell."""
    record = host_bound_record([reading(5.0)], step_s=0.004)
    assert record.gpu_busy_s == pytest.approx(0.001)
    assert record.gpu_busy_share == pytest.approx(0.25)
    assert record.host_bound is True
    assert record.reason is None and record.note is None
    assert record.method == "sleep probe: 3 steps issued behind a 30 ms GPU sleep"
    busy_rank = ProbeReading(1, 3, 30.0, 0.03, 0.005, [0.003, 0.003, 0.003])
    both = host_bound_record([reading(5.0), busy_rank], step_s=0.004)
    assert both.gpu_busy_s == pytest.approx(0.003)
    assert both.gpu_busy_share == pytest.approx(0.75)
    assert both.host_bound is False
    assert HOST_BOUND_SHARE == 0.5


def test_a_busy_time_beyond_the_step_is_clamped_and_said() -> None:
    within_noise = host_bound_record([reading(5.0, steps_ms=(4.1, 4.1, 4.1))], step_s=0.004)
    assert within_noise.gpu_busy_share == 1.0 and within_noise.note is None
    beyond = host_bound_record([reading(5.0, steps_ms=(5.0, 5.0, 5.0))], step_s=0.004)
    assert beyond.gpu_busy_share == 1.0 and beyond.host_bound is False
    assert beyond.note is not None and "25 % more than the measured median step" in beyond.note
    noisy = host_bound_record([reading(5.0, steps_ms=(5.0,) * 3)], step_s=0.004, step_cv=0.3)
    assert noisy.note is None  # inside the steps' own noise


def test_one_rank_not_measurable_leaves_the_cell_share_null_with_its_reason() -> None:
    late = ProbeReading(1, 3, 30.0, 0.03, 0.05, [0.003, 0.003, 0.003])
    record = host_bound_record([reading(5.0), late], step_s=0.004)
    assert record.gpu_busy_s is None and record.gpu_busy_share is None
    assert record.host_bound is None
    assert record.reason is not None and record.reason.startswith("rank 1: ")


def test_a_pipeline_cell_is_not_probed_and_says_why() -> None:
    record = host_bound_record([ProbeReading(0, reason=PIPELINE_REASON)], step_s=0.004)
    assert record.host_bound is None and record.reason == PIPELINE_REASON
    assert record.method == NOT_RUN_METHOD


@pytest.mark.usefixtures("process_group")
def test_no_probe_on_cpu(tmp_path: Path) -> None:
    trainer = Trainer.build(worker_spec(tmp_path), torch.device("cpu"))
    assert probe_rank(trainer, 0.01) is None


def test_the_sleep_outlasts_issuing_the_steps() -> None:
    assert probe_steps(0.002) == 3 and probe_steps(0.8) == 2
    assert sleep_ms_for(0.002, 3) == pytest.approx(2 * 3 * 2.0 + 20.0)


@pytest.mark.gpu
def test_the_probe_measures_a_gpu_step(tmp_path: Path) -> None:
    """On a GPU: a 1-rank nccl group, tiny-mlp's step probed for real (torch.cuda API)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    store = f"file://{tmp_path / 'store'}"
    dist.init_process_group("nccl", init_method=store, rank=0, world_size=1)
    try:
        spec = worker_spec(tmp_path)
        cell = spec.cell.model_copy(update={"device": "cuda", "backend": "nccl"})
        spec = spec.model_copy(update={"cell": cell})
        trainer = Trainer.build(spec, torch.device("cuda", 0))
        for _ in range(3):
            trainer.step()
        probe = probe_rank(trainer, 0.005)
    finally:
        dist.destroy_process_group()
    assert probe is not None and probe.reason is None
    assert probe.steps == 3 and len(probe.step_gpu_s) == 3
    # the calibrated sleep lasts about as planned (the GPU's clock may move between them)
    assert 0.5 < probe.sleep_s / (probe.sleep_ms / 1e3) < 2.0
    busy, why = judge_reading(probe)
    assert why is None and busy is not None and 0 < busy < probe.sleep_s


# ======================================================================== fixed costs


def test_fixed_costs_take_the_slowest_rank_and_say_why_a_stage_is_missing() -> None:
    fast = RankFixedCosts(1.0, None, 0.5, 0.2, 3.0, {"device_init_s": CPU_DEVICE_INIT})
    slow = RankFixedCosts(2.0, None, 0.4, 0.3, 4.0, {"device_init_s": CPU_DEVICE_INIT})
    costs, unavailable = fixed_costs_record([fast, slow])
    assert costs.process_start_s == 2.0 and costs.process_group_init_s == 0.5
    assert costs.model_build_s == 0.3 and costs.warmup_s == 4.0
    assert costs.device_init_s is None
    assert unavailable == {"fixed_costs.device_init_s": CPU_DEVICE_INIT}


def test_process_start_is_not_measured_outside_torchrun() -> None:
    seconds, why = process_start_seconds()
    assert seconds is None
    assert why is not None and "not torchrun" in why
