"""What else ran on the machine during a cell's measured windows (docs/telemetry.md): the
summary math on synthetic readings (other processes' cores per host, the busy rule and its
warning, GPU processes that are not the cell's, PIDs of another namespace, what is null and
why), the edge readings of the sampler (psutil's busy time, the rank's process tree, NVML's
compute processes on a fake pynvml), the table columns, and one real CPU-burning process seen
by the sampler.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import namedtuple
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fake_nvml import NOT_SUPPORTED, FakeGpu, FakeNvml, NVMLError_Unknown
from tests.rank.test_telemetry import UUID, quiet_load, rank_telemetry
from torchscale.contracts.busy_machine import busy_cpu_seconds
from torchscale.contracts.cell import CellIdentity, Status
from torchscale.contracts.finding import Finding
from torchscale.contracts.gpu_clocks import judge_clocks
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.cell_telemetry import RankTelemetry
from torchscale.contracts.wording import why
from torchscale.contracts.wording.cell_telemetry import said
from torchscale.contracts.wording.cell_warnings import warning_words
from torchscale.offline.results.frame import cells_table
from torchscale.rank.telemetry.host_source import HostSource
from torchscale.rank.telemetry.nvml_source import NvmlSource
from torchscale.rank.telemetry.sampler import Sampler
from torchscale.rank.telemetry.samples import EdgeReading, SamplerReport, WindowSamples
from torchscale.rank.telemetry.window_figures import (
    CLOCK_TICK_S,
    busy_warnings,
    combine,
    host_load,
    host_loads,
    rank_load,
    summarise_rank,
    tick_cores,
)

# ============================================================================== the rule


def ranks_on(host: str, first: int, count: int, **load: Any) -> list[RankTelemetry]:
    return [
        rank_telemetry(r, host=host, load=quiet_load(r, **load))
        for r in range(first, first + count)
    ]


def test_other_cores_are_the_host_less_the_cells_own() -> None:
    """2 ranks on a 2-core host, 2 s of windows: the host was busy all the time (4 CPU s per
    rank's window), each rank used 0.55 core: the others used 2 - 1.1 = 0.9 core."""
    ranks = ranks_on("h", 0, 2, cores=2, busy_cpu_s=4.0, own_cpu_s=1.1, load_avg_1m=[2.5, 2.7])
    load = host_load("h", ranks)
    assert load.ranks == [0, 1] and load.cores == 2
    assert load.busy_cores == pytest.approx(2.0)
    assert load.cell_cores == pytest.approx(1.1)
    assert load.other_cores == pytest.approx(0.9)
    assert load.load_avg_1m is not None
    assert (load.load_avg_1m.mean, load.load_avg_1m.max) == (pytest.approx(2.6), 2.7)
    assert load.busy is True
    assert load.finding is not None and load.finding.code == "busy.contended"
    (warning,) = busy_warnings([load])
    assert warning.kind == "busy machine"
    assert warning_words(warning) == (
        "busy machine: on h, other processes used 0.90 of 2 cores, the cell's 2 rank(s) 1.1 "
        "(0.90 free): busy from 0.11, enough to slow it by 82 % or more; load average up to 2.7 "
        "during the measured windows; timings may be slowed or noisy"
    )


def test_a_quiet_host_is_judged_quiet_and_warns_nothing() -> None:
    quiet = host_load("h", ranks_on("h", 0, 2))  # 64 cores, the cell 2, others 0.1
    assert quiet.other_cores == pytest.approx(0.1) and quiet.busy is False
    assert quiet.finding is not None and quiet.finding.code == "busy.quiet"
    assert busy_warnings([quiet]) == []


def test_ranks_that_outnumber_the_cores_are_busy_beside_a_core_of_others() -> None:
    """Measured: 4 ranks on 2 cores beside two CPU hogs, others used 0.83-0.94 core: the cell
    leaves no core free, so all of it comes out of the ranks' share."""
    ranks = ranks_on("h", 0, 4, cores=2, busy_cpu_s=4.0, own_cpu_s=0.55)
    load = host_load("h", ranks)
    assert load.other_cores == pytest.approx(0.9) and load.busy is True
    (warning,) = busy_warnings([load])
    assert warning_words(warning).startswith(
        "busy machine: on h, other processes used 0.90 of 2 cores"
    )
    assert "the cell's 4 rank(s) 1.1 (0.90 free)" in warning_words(warning)


def test_rounding_below_zero_is_clamped() -> None:
    """The kernel counts CPU time in 10 ms ticks: the cell's own may exceed the host's by a
    tick; other processes never use less than nothing."""
    load = host_load("h", ranks_on("h", 0, 1, busy_cpu_s=2.0, own_cpu_s=2.01))
    assert load.other_cores == 0.0 and load.busy is False


def _between(finding: Finding) -> dict[str, float]:
    return {k: finding.figures[k] for k in ("other_cores", "threshold")}


def test_windows_too_short_for_the_kernels_ticks_judge_nothing() -> None:
    """Measured: a tiny model's 1-rank cell, 60 steps of 0.4 ms, 24 ms of windows; one stray
    10 ms tick of another process read as 0.4 core and marked the host busy. Where one tick
    reads as more than lies between the others' cores and the threshold, neither the others'
    cores nor the verdict are measurable, with the reason, and the cell is not called busy."""
    short = ranks_on("h", 0, 1, cores=2, busy_cpu_s=0.034, own_cpu_s=0.024, window_s=0.024)
    load = host_load("h", short)
    assert load.other_cores is None and load.busy is None
    assert load.finding is not None and load.finding.code == "busy.unresolved"
    reason = load.unavailable["busy"]
    assert isinstance(reason, Finding) and reason.code == "unavailable.busy_windows_too_short"
    assert reason.figures == {"window_s": 0.024, "tick_s": CLOCK_TICK_S, **_between(load.finding)}
    assert str(why(reason)).startswith("not measurable: the measured windows last 24 ms")
    assert "run more steps" in str(why(load.unavailable["other_cores"]))
    assert load.busy_cores is not None  # the readings themselves are kept
    assert busy_warnings([load]) == []
    assert tick_cores([short[0].load], tick_s=0.01) == pytest.approx(0.01 / 0.024)  # type: ignore[list-item]
    # 0.16 s: a tick reads as 0.0625 core, less than the 0.1 between none and the threshold
    enough = ranks_on("h", 0, 1, cores=2, busy_cpu_s=0.16, own_cpu_s=0.16, window_s=0.16)
    assert host_load("h", enough).busy is False


def test_each_host_has_its_own_figures_and_pids() -> None:
    """Ranks 0-1 on a (busy), 2-3 on b (quiet). PIDs are per host: rank 2 on b has the PID
    of rank 0 on a, and it is still the cell's own there."""
    a = ranks_on("a", 0, 2, cores=2, busy_cpu_s=4.0, own_cpu_s=1.0)
    b = [
        rank_telemetry(2, host="b", load=quiet_load(2, pid=1000, gpu_pids=[1000, 77])),
        rank_telemetry(3, host="b", load=quiet_load(3)),
    ]
    hosts = host_loads([b[1], a[1], b[0], a[0]])
    assert hosts is not None
    assert [(h.host, h.ranks) for h in hosts] == [("a", [0, 1]), ("b", [2, 3])]
    assert [h.busy for h in hosts] == [True, False]
    assert hosts[1].other_gpu_processes == 1 and hosts[1].other_gpu_pids == [77]
    assert hosts[0].other_gpu_processes == 0
    warnings = busy_warnings(hosts)
    assert warning_words(warnings[0]).startswith(
        "busy machine: on a, other processes used 1.0 of 2 cores"
    )
    assert " on b " not in warning_words(warnings[0])
    assert warning_words(warnings[1]) == (
        "GPU shared: 1 other compute process(es) on the cell's GPUs during the measured windows "
        "(b: 1 (PID 77)); their kernels time-share the GPU with the cell's: timings may be "
        "slowed or noisy"
    )


def test_other_gpu_processes_leave_out_every_rank_of_the_cell_on_the_host() -> None:
    """Rank 1 opened a stray context on rank 0's GPU: it is the cell's, not another's."""
    ranks = [
        rank_telemetry(0, load=quiet_load(0, gpu_pids=[1000, 1001, 4242], gpu_processes_max=3)),
        rank_telemetry(1, load=quiet_load(1)),
    ]
    load = host_load("h", ranks)
    assert (load.other_gpu_processes, load.other_gpu_pids) == (1, [4242])
    assert "other_gpu_pids" not in load.unavailable


def test_pids_of_another_namespace_are_counted_not_named() -> None:
    """In a container NVML may list host PIDs: no rank finds its own. Each GPU then counts the
    processes beyond the cell's ranks on it (at most at one edge)."""
    ranks = [
        rank_telemetry(0, load=quiet_load(0, gpu_pids=[51000, 51999], gpu_processes_max=2)),
        rank_telemetry(1, load=quiet_load(1, gpu_pids=[51001], gpu_processes_max=1)),
    ]
    load = host_load("h", ranks)
    assert load.other_gpu_processes == 1 and load.other_gpu_pids == []
    assert load.unavailable["other_gpu_pids"] == said("telemetry.namespace_pids")
    (warning,) = busy_warnings([load])
    assert "(h: 1 (PIDs of another PID namespace))" in warning_words(warning)


def test_what_is_missing_is_null_with_the_reason() -> None:
    cpu = [
        rank_telemetry(
            r,
            device="cpu",
            load=quiet_load(
                r,
                gpu_pids=None,
                gpu_processes_max=None,
                unavailable={"gpu_pids": said("telemetry.cpu_no_gpu")},
            ),
        )
        for r in (0, 1)
    ]
    load = host_load("h", cpu)
    assert load.other_gpu_processes is None
    assert load.unavailable["other_gpu_processes"] == said("telemetry.cpu_no_gpu")
    assert load.other_cores is not None  # the CPU figures stand on their own
    gone = {"busy_cpu_s": said("telemetry.psutil_failed", error="gone")}
    broken = rank_telemetry(1, load=quiet_load(1, busy_cpu_s=None, unavailable=gone))
    load = host_load("h", [rank_telemetry(0), broken])
    assert load.busy_cores is None and load.other_cores is None and load.busy is None
    assert str(why(load.unavailable["other_cores"])) == "rank 1: psutil: gone"
    assert load.unavailable["busy"] == load.unavailable["other_cores"]
    assert load.cell_cores == pytest.approx(2.0)  # what every rank has is still there
    telemetry, unavailable, _ = combine([rank_telemetry(0, load=None)], 100, 1, 10, None)
    assert telemetry.hosts is None
    assert why(unavailable["telemetry.hosts"]) == "no host readings from any rank"


def test_combine_carries_the_hosts_and_the_busy_warning_after_throttling() -> None:
    ranks = ranks_on("h", 0, 2, cores=2, busy_cpu_s=4.0, own_cpu_s=1.0)
    ranks[1] = ranks[1].model_copy(
        update={
            "throttle_reasons": ["HwThermalSlowdown"],
            "throttled_fraction": 0.5,
            "clock_verdict": "throttled",
            "clock_finding": judge_clocks(
                {"HwThermalSlowdown": 5}, 10, None, 1980.0, None, None
            ).finding,
        }
    )
    telemetry, unavailable, warnings = combine(ranks, 100, 2, 100, None)
    assert telemetry.hosts is not None and telemetry.hosts[0].busy is True
    assert "telemetry.hosts" not in unavailable
    assert [warning_words(w).split(":")[0] for w in warnings] == [
        "GPU clocks throttled during the measured windows",
        "busy machine",
    ]


# ======================================================================== rank side: edges


def edge(
    t: float, busy: float | None, own: float | None, load: float, pids: Any = None
) -> EdgeReading:
    values = {"busy_cpu_s": busy, "own_cpu_s": own, "load_avg_1m": load}
    return EdgeReading(t=t, values=values, gpu_pids=pids)


def report(*windows: WindowSamples, **fields: Any) -> SamplerReport:
    defaults: dict[str, Any] = {"pid": 42, "cores": 2, "usable_cores": 2}
    return SamplerReport(device="cpu", interval_s=0.1, windows=list(windows), **(defaults | fields))


def window(*edges: EdgeReading, complete: bool = True, failure: str | None = None) -> WindowSamples:
    return WindowSamples(
        t=[e.t for e in edges], complete=complete, failure=failure, edges=list(edges)
    )


def test_rank_load_sums_the_deltas_between_each_windows_edges() -> None:
    """Two windows of 1 s and 2 s; the CPU counters also moved between them (not counted)."""
    first = window(edge(10.0, 100.0, 50.0, 1.0, [42]), edge(11.0, 101.5, 50.9, 1.2, [42, 7]))
    second = window(edge(20.0, 130.0, 60.0, 1.4, [42]), edge(22.0, 133.0, 61.8, 1.5, [42]))
    load = rank_load(report(first, second))
    assert load.window_s == pytest.approx(3.0)
    assert load.busy_cpu_s == pytest.approx(1.5 + 3.0)
    assert load.own_cpu_s == pytest.approx(0.9 + 1.8)
    assert load.load_avg_1m == [1.0, 1.2, 1.4, 1.5]
    assert load.gpu_pids == [7, 42] and load.gpu_processes_max == 2
    assert (load.pid, load.cores, load.usable_cores) == (42, 2, 2)
    assert load.unavailable == {}


def test_rank_load_of_a_window_not_fully_sampled_is_null_with_the_reason() -> None:
    whole = window(edge(0.0, 1.0, 1.0, 1.0), edge(1.0, 2.0, 1.5, 1.0))
    hung = said("telemetry.read_failed", error="it hung")
    broken = window(edge(5.0, 3.0, 2.0, 1.0), complete=False, failure=hung)
    load = rank_load(report(whole, broken, unavailable={"gpu_pids": said("telemetry.cpu_no_gpu")}))
    assert load.busy_cpu_s is None and load.own_cpu_s is None
    assert str(why(load.unavailable["busy_cpu_s"])) == "a window was not fully sampled: it hung"
    assert load.load_avg_1m == [1.0, 1.0, 1.0]  # the levels read are still levels
    assert load.gpu_pids is None and load.unavailable["gpu_pids"] == said("telemetry.cpu_no_gpu")
    unread = window(edge(0.0, None, 1.0, 1.0), edge(1.0, None, 2.0, 1.0))
    denied = said("telemetry.read_failed", error="PermissionError: /proc/stat")
    load = rank_load(report(unread, errors={"busy_cpu_s": denied}))
    assert str(why(load.unavailable["busy_cpu_s"])) == "PermissionError: /proc/stat"
    assert load.own_cpu_s == pytest.approx(1.0)


def test_busy_time_leaves_out_idle_iowait_and_the_guest_time_inside_user() -> None:
    Times = namedtuple(
        "Times",
        "user nice system idle iowait irq softirq steal guest guest_nice",
    )
    times = Times(10.0, 1.0, 4.0, 100.0, 5.0, 0.5, 0.5, 2.0, 3.0, 0.5)
    # user (guest inside) + nice (guest_nice inside) + system + irq + softirq + steal
    assert busy_cpu_seconds(times) == pytest.approx(10 + 1 + 4 + 0.5 + 0.5 + 2)
    Mac = namedtuple("Mac", "user nice system idle")
    assert busy_cpu_seconds(Mac(1.0, 0.0, 1.0, 9.0)) == pytest.approx(2.0)


# ================================================================== NVML compute processes


def gpu_sampler(fake: FakeNvml) -> Sampler:
    return Sampler([NvmlSource(UUID, module=fake), HostSource()], 0.02, "cuda:0")


def sampled(sampler: Sampler, windows: int = 2) -> SamplerReport:
    for _ in range(windows):
        sampler.start()
        time.sleep(0.05)
        sampler.stop()
    return sampler.report()


def test_the_gpus_compute_processes_are_read_at_the_window_edges() -> None:
    me = os.getpid()
    answers = iter([[me], [me, 4242]])
    fake = FakeNvml([FakeGpu(uuid=f"GPU-{UUID}", compute_pids=lambda: next(answers, [me]))])
    rank = summarise_rank(0, "h", sampled(gpu_sampler(fake)))
    assert len(fake.called("nvmlDeviceGetComputeRunningProcesses")) == 4  # 2 windows x 2 edges
    assert rank.load is not None
    assert rank.load.gpu_pids == sorted([me, 4242]) and rank.load.gpu_processes_max == 2
    assert rank.load.pid == me
    load = host_load("h", [rank])
    assert (load.other_gpu_processes, load.other_gpu_pids) == (1, [4242])


def test_an_older_driver_answers_through_v2() -> None:
    me = os.getpid()
    fake = FakeNvml(
        [FakeGpu(uuid=f"GPU-{UUID}", compute_pids=[me])], driver_has_compute_processes_v3=False
    )
    rank = summarise_rank(0, "h", sampled(gpu_sampler(fake)))
    assert rank.load is not None and rank.load.gpu_pids == [me]
    assert len(fake.called("nvmlDeviceGetComputeRunningProcesses")) == 1  # found missing once
    assert len(fake.called("nvmlDeviceGetComputeRunningProcesses_v2")) == 4


def test_process_list_not_supported_is_null_with_the_reason_and_asked_once() -> None:
    fake = FakeNvml([FakeGpu(uuid=f"GPU-{UUID}", compute_pids=NOT_SUPPORTED)])
    rank = summarise_rank(0, "h", sampled(gpu_sampler(fake)), floor_s=0.0, counter_step_s=0.0)
    assert rank.load is not None and rank.load.gpu_pids is None
    assert "NVMLError_NotSupported" in str(why(rank.load.unavailable["gpu_pids"]))
    assert len(fake.called("nvmlDeviceGetComputeRunningProcesses")) == 1
    assert rank.power_w is not None  # the rest goes on


def test_a_transient_process_list_error_loses_one_edge() -> None:
    me = os.getpid()
    answers = iter([NVMLError_Unknown()])
    fake = FakeNvml([FakeGpu(uuid=f"GPU-{UUID}", compute_pids=lambda: next(answers, [me]))])
    rank = summarise_rank(0, "h", sampled(gpu_sampler(fake), windows=1))
    assert rank.load is not None and rank.load.gpu_pids == [me]
    assert len(fake.called("nvmlDeviceGetComputeRunningProcesses")) == 2


def test_an_unknown_gpu_leaves_the_process_list_null() -> None:
    fake = FakeNvml([FakeGpu(uuid="GPU-someone-else")])
    rank = summarise_rank(0, "h", sampled(gpu_sampler(fake), windows=1))
    assert rank.load is not None and rank.load.gpu_pids is None
    assert "no NVML device with torch's UUID" in str(why(rank.load.unavailable["gpu_pids"]))
    assert rank.load.busy_cpu_s is not None  # the host is still read


# ========================================================================= table columns


def cell_result(ranks: list[RankTelemetry]) -> CellResult:
    telemetry, unavailable, warnings = combine(ranks, 100, 2, 100, None)
    cell = CellIdentity(
        id="c",
        definition_sha256="0" * 64,
        model="tiny-mlp",
        label="tiny-mlp",
        batch_size=8,
        world_size=len(ranks),
        precision="fp32",
        strategy="ddp",
        device="cuda",
        backend="nccl",
    )
    return CellResult(
        cell=cell, status=Status.OK, telemetry=telemetry, unavailable=unavailable, warnings=warnings
    )


def test_columns_take_the_busiest_host_and_sum_the_gpu_processes() -> None:
    a = ranks_on("a", 0, 2, cores=2, busy_cpu_s=4.0, own_cpu_s=1.0, load_avg_1m=[3.0, 3.5])
    b = [
        rank_telemetry(2, host="b", load=quiet_load(2, gpu_pids=[1002, 9], gpu_processes_max=2)),
        rank_telemetry(3, host="b", load=quiet_load(3, gpu_pids=[1003, 8], gpu_processes_max=2)),
    ]
    row = cells_table([cell_result(a + b), cell_result(ranks_on("h", 0, 1))]).iloc
    assert row[0]["other_cpu_cores"] == pytest.approx(1.0)  # a: 2 - 2 x 0.5
    assert row[0]["load_avg_1m"] == pytest.approx(3.5)
    assert row[0]["other_gpu_processes"] == 2
    assert bool(row[0]["busy_machine"]) is True
    assert row[1]["other_cpu_cores"] == pytest.approx(1.1)  # alone on 64 cores: not busy
    assert bool(row[1]["busy_machine"]) is False and row[1]["other_gpu_processes"] == 0
    cpu_only = [rank_telemetry(0, load=quiet_load(0, gpu_pids=None))]
    row = cells_table([cell_result(cpu_only)]).iloc[0]
    assert row["other_gpu_processes"] is None and row["other_cpu_cores"] == pytest.approx(1.1)


# ================================================================ a real busy process


@pytest.fixture
def burner() -> Iterator[subprocess.Popen[bytes]]:
    """A process spinning one core for the test, always killed."""
    process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield process
    finally:
        process.kill()
        process.wait(10)


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process that stands for an idle rank (the burner is not its child), always killed."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield process
    finally:
        process.kill()
        process.wait(10)


@pytest.mark.slow  # starts a child process
def test_a_real_busy_process_is_seen_as_other_and_a_child_as_own(
    burner: subprocess.Popen[bytes], sleeper: subprocess.Popen[bytes]
) -> None:
    """Windows while a process burns a core. Seen from the idle `sleeper` as the rank, the
    burner is another process; seen from this test process as the rank, it is a child and so
    the rank's own. The bounds are relative to the CPU the burner really got, and the windows
    last until it got 0.3 s of it: on a shared machine at load 16 a burner may get a tenth of
    a core, and a fixed bound would test the machine, not the sampler."""
    import psutil

    deadline = time.monotonic() + 5
    while psutil.Process(sleeper.pid).status() != psutil.STATUS_SLEEPING:  # past its start-up
        assert time.monotonic() < deadline, "the sleeper never went to sleep"
        time.sleep(0.02)
    burning = psutil.Process(burner.pid)
    cpu_before = sum(burning.cpu_times()[:2])
    as_other = Sampler([HostSource(pid=sleeper.pid)], 0.1, "cpu")
    as_parent = Sampler([HostSource()], 0.1, "cpu")
    started = time.monotonic()
    for sampler in (as_other, as_parent):
        sampler.start()
    time.sleep(1.0)
    while sum(burning.cpu_times()[:2]) - cpu_before < 0.3 and time.monotonic() - started < 60:
        time.sleep(0.2)
    for sampler in (as_other, as_parent):
        sampler.stop()
    burner_cores = (sum(burning.cpu_times()[:2]) - cpu_before) / (time.monotonic() - started)
    assert burner_cores > 0.0
    other = host_load("h", [summarise_rank(0, "h", as_other.report())])
    assert other.other_cores is not None and other.other_cores >= 0.5 * burner_cores, other
    assert other.cell_cores is not None and other.cell_cores < 0.1, other
    assert other.load_avg_1m is not None and other.cores == (os.cpu_count() or 1)
    parent = host_load("h", [summarise_rank(0, "h", as_parent.report())])
    assert parent.cell_cores is not None and parent.cell_cores >= 0.5 * burner_cores, parent
