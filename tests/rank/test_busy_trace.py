"""The clean window edge, the GPU busy trace's rule and the itemised fixed costs, in one
process on CPU: the edge step's order against the window's clocks, the cell's share and verdict
from made-up readings and a capture that fails open (its CUDA side needs a GPU: the `gpu`
test), the fixed costs' slowest-rank rule and their reasons."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import torch
import torch.distributed as dist

from tests.rank.test_aggregate import make_rank, run
from tests.rank.test_phases import worker_spec
from torchscale.contracts.finding import Finding
from torchscale.contracts.thresholds import HOST_BOUND_SHARE
from torchscale.contracts.wording import say
from torchscale.contracts.wording.cell_reasons import coded
from torchscale.offline.analysis.trace import gpu_busy
from torchscale.rank.worker import busy_trace
from torchscale.rank.worker import measure as measure_module
from torchscale.rank.worker.busy_trace import (
    PEER_FAILED,
    PIPELINE_REASON,
    BusyReading,
    host_bound_record,
    trace_rank,
)
from torchscale.rank.worker.fixed_costs import (
    CPU_DEVICE_INIT,
    RankFixedCosts,
    fixed_costs_record,
    process_start_seconds,
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
@pytest.mark.slow  # over 2 s on 2 cores
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
    assert result.unavailable["host_bound"] == coded("unavailable.host_bound_cpu")


def test_a_users_job_on_a_gpu_is_told_its_busy_share_unmeasured_not_a_cpu() -> None:
    """Every CUDA rank of a cell traces; a user's job on a GPU takes no busy trace, so its
    null share says that, never "CPU device"."""
    from torchscale.rank.worker.aggregate import host_bound_block

    ranks = [make_rank(0, [0.04, 0.04]), make_rank(1, [0.04, 0.04])]
    record, why = host_bound_block(ranks, device="cuda")
    assert record is None and why == {"host_bound": coded("unavailable.host_bound_own_job")}
    assert "CPU" not in say(why["host_bound"])
    assert host_bound_block(ranks)[1] == {"host_bound": coded("unavailable.host_bound_cpu")}


# ===================================================================== the busy trace's rule


def test_the_cell_takes_the_busiest_ranks_share_and_stores_its_verdict() -> None:
    idle = BusyReading(0, 3, busy_s=0.003, wall_s=0.012)  # 25 % busy
    busy = BusyReading(1, 3, busy_s=0.009, wall_s=0.012)  # 75 % busy
    record = host_bound_record([idle])
    assert record.gpu_busy_share == pytest.approx(0.25) and record.host_bound is True
    assert record.steps == 3 and record.step_s == pytest.approx(0.004)
    assert record.gpu_busy_s == pytest.approx(0.001)
    assert record.method == "cuda_trace"
    assert record.verdict is not None and record.verdict.code == "host_bound.launch_time"
    assert record.verdict.figures["threshold"] == HOST_BOUND_SHARE
    both = host_bound_record([idle, busy])
    assert both.gpu_busy_share == pytest.approx(0.75) and both.host_bound is False
    assert both.verdict is not None and both.verdict.code == "host_bound.gpu_busy"


def test_the_record_is_host_bound_by_the_verdicts_code_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another code that ends like the launch-time one (the retired sleep probe's) is not it."""
    probe = Finding(
        code="host_bound.probe_launch_time", figures={"gpu_busy_s": 0.001, "step_s": 0.004}
    )
    monkeypatch.setattr(gpu_busy, "host_bound_verdict", lambda _busy: probe)
    record = host_bound_record([BusyReading(0, 3, busy_s=0.003, wall_s=0.012)])
    assert record.host_bound is False


def test_one_rank_without_a_share_leaves_the_cell_null_with_its_reason() -> None:
    cupti = Finding(code="host_bound.trace_failed", figures={"error": "RuntimeError: CUPTI"})
    failed = BusyReading(1, 3, reason=cupti)
    record = host_bound_record([BusyReading(0, 3, 0.003, 0.012), failed])
    assert record.gpu_busy_share is None and record.host_bound is None
    assert record.verdict is None and record.reason == failed.reason


def test_a_pipeline_cell_is_not_traced_and_says_why() -> None:
    record = host_bound_record([BusyReading(0, reason=PIPELINE_REASON)])
    assert record.host_bound is None and record.reason == PIPELINE_REASON
    assert record.method == "cuda_trace" and record.steps is None


@pytest.mark.usefixtures("process_group")
def test_no_trace_on_cpu(tmp_path: Path) -> None:
    trainer = Trainer.build(worker_spec(tmp_path), torch.device("cpu"))
    assert trace_rank(trainer) is None


class FakeProfiler:
    """torch.profiler's started profile as trace_rank drives it, its calls logged."""

    def __init__(self, log: list[str], fail_export: bool = False) -> None:
        self.log = log
        self.fail_export = fail_export

    def step(self) -> None:
        self.log.append("record")

    def stop(self) -> None:
        self.log.append("stop")

    def export_chrome_trace(self, _path: str) -> None:
        if self.fail_export:
            raise OSError("disk full")
        self.log.append("export")


class FakeTrainer:
    """What trace_rank reads of a trainer: a CUDA device, no pipeline runner, its steps."""

    def __init__(self, log: list[str], error: Exception | None = None) -> None:
        self.device = torch.device("cuda", 0)
        self.runner = None
        self.log = log
        self.error = error

    def step(self) -> None:
        self.log.append("step")
        if self.error is not None:
            raise self.error


def refuse_to_start() -> Any:
    raise RuntimeError("CUPTI unavailable")


@pytest.fixture
def no_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """trace_rank's CUDA edges on a CPU machine: no synchronize, one rank."""
    monkeypatch.setattr(busy_trace, "synchronize", lambda _device: None)
    monkeypatch.setattr(dist, "get_rank", lambda: 0)


@pytest.mark.usefixtures("no_cuda")
def test_a_step_error_propagates_with_the_profiler_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An OOM in a traced step is the cell's root cause, never 'capture failed'."""
    log: list[str] = []
    monkeypatch.setattr(busy_trace, "start_profiler", lambda: FakeProfiler(log))
    monkeypatch.setattr(busy_trace, "agree_any", lambda flag, _device: flag)
    oom = torch.cuda.OutOfMemoryError("CUDA out of memory")
    with pytest.raises(torch.cuda.OutOfMemoryError, match="CUDA out of memory"):
        trace_rank(cast(Trainer, FakeTrainer(log, error=oom)))
    assert log == ["record", "step", "stop"]


def ranks_tracing(
    monkeypatch: pytest.MonkeyPatch, starts: list[Callable[[], Any]], log: list[str]
) -> list[BusyReading | None]:
    """trace_rank on len(starts) ranks in threads, rank r's profiler started by starts[r];
    the ranks' agreement a MAX all_reduce over the threads, as over the cell's group."""
    world = len(starts)
    flags: list[float] = [0.0] * world
    meet = threading.Barrier(world, timeout=10)
    me = threading.local()

    def all_reduce_any(flag: bool, _device: torch.device) -> bool:
        flags[me.rank] = float(flag)
        meet.wait()
        return max(flags) > 0

    monkeypatch.setattr(busy_trace, "agree_any", all_reduce_any)
    monkeypatch.setattr(dist, "get_rank", lambda: me.rank)
    monkeypatch.setattr(busy_trace, "start_profiler", lambda: starts[me.rank]())
    readings: list[BusyReading | None] = [None] * world

    def rank_main(rank: int) -> None:
        me.rank = rank
        readings[rank] = trace_rank(cast(Trainer, FakeTrainer(log)))

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(world)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    return readings


def test_a_profiler_failing_on_one_rank_leaves_every_rank_untraced_and_unstepped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rank 1's profiler refuses to start: rank 0, whose profiler started, stops it and takes
    no step (stepping alone it would wait in the steps' collectives until the timeout); the
    cell's figure is null with rank 1's own reason."""
    monkeypatch.setattr(busy_trace, "synchronize", lambda _device: None)
    log: list[str] = []
    readings = ranks_tracing(monkeypatch, [lambda: FakeProfiler(log), refuse_to_start], log)
    assert "step" not in log and "record" not in log
    assert log == ["stop"]  # rank 0's started profiler, stopped untraced
    own = Finding(
        code="host_bound.trace_failed", figures={"error": "RuntimeError: CUPTI unavailable"}
    )
    assert [r.reason if r else None for r in readings] == [PEER_FAILED, own]
    assert all(r is not None and r.steps == 0 for r in readings)
    record = host_bound_record([r for r in readings if r is not None])
    assert record.host_bound is None and record.reason == own


@pytest.mark.usefixtures("no_cuda")
def test_the_profilers_own_failures_fail_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """The profiler refusing to start, or its export failing, gives a reason, never an
    exception: the cell goes on."""
    monkeypatch.setattr(busy_trace, "agree_any", lambda flag, _device: flag)
    log: list[str] = []
    monkeypatch.setattr(busy_trace, "start_profiler", refuse_to_start)
    refused = trace_rank(cast(Trainer, FakeTrainer(log)))
    assert refused is not None and refused.steps == 0 and log == []
    assert refused.reason == Finding(
        code="host_bound.trace_failed", figures={"error": "RuntimeError: CUPTI unavailable"}
    )
    monkeypatch.setattr(busy_trace, "start_profiler", lambda: FakeProfiler(log, True))
    unexported = trace_rank(cast(Trainer, FakeTrainer(log)))
    assert log == ["record", "step", "step", "step", "stop"]
    assert unexported is not None and unexported.steps == 3
    assert unexported.reason == Finding(
        code="host_bound.trace_failed", figures={"error": "OSError: disk full"}
    )
    assert say(unexported.reason) == "the CUDA trace of the busy share failed (OSError: disk full)"


@pytest.mark.gpu
def test_the_trace_measures_a_gpu_step(tmp_path: Path) -> None:
    """On a GPU: a 1-rank nccl group, tiny-mlp's steps traced for real (torch.profiler)."""
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
        reading = trace_rank(trainer)
    finally:
        dist.destroy_process_group()
    assert reading is not None and reading.reason is None, reading
    assert reading.steps == 3 and 0 < reading.busy_s <= reading.wall_s * 1.01
    record = host_bound_record([reading])
    assert record.gpu_busy_share is not None and record.verdict is not None


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
    assert why == coded("unavailable.parent_not_torchrun")
