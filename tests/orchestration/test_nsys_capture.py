"""Nsight Systems captures only the profiled steps: the `nsys profile` argv
as data, the trigger each rank fires and where in its steps, the launcher and the ranks agreeing
on the trigger, and the capture overhead against the measured windows.

The real captures (nsys on CPU ranks, where it is installed) are in tests/e2e/test_profile_run.py.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import torch.distributed as dist

from torchscale.contracts.schema.cell_result import CellResult, StepTimeStats
from torchscale.contracts.wording import say
from torchscale.contracts.wording.profile import note
from torchscale.contracts.worker_spec import CAPTURE_ENV, NVTX_CAPTURE, ProfileSpec, capture_range
from torchscale.orchestration.config import parse_config
from torchscale.orchestration.launch.torchrun import torchrun_command
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.orchestration.profiling import nsys as nsys_mod
from torchscale.orchestration.profiling import session
from torchscale.orchestration.profiling.nsys import (
    NsysInstall,
    capture_argv,
    default_capture,
    nsys_profile_argv,
    wrap_launch,
)
from torchscale.orchestration.profiling.overhead import capture_overhead
from torchscale.rank.worker import capture as capture_mod
from torchscale.rank.worker import markers
from torchscale.rank.worker.capture import Trigger, capture, nsys_trigger

INNER = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=8", "-m", "w"]
NSYS = NsysInstall(Path("/opt/nsys"), "2022.4.2.1", "PATH")


def flag(argv: list[str], name: str) -> str | None:
    """The value of `--name=value` in an argv, None when absent."""
    values = [a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")]
    assert len(values) <= 1, argv
    return values[0] if values else None


def nsys_part(argv: list[str]) -> list[str]:
    return argv[: argv.index(INNER[0])]


# ------------------------------------------------------------------------ argv as data


def test_gpu_capture_is_the_cuda_profiler_range_without_osrt(tmp_path: Path) -> None:
    """An 8-rank GPU launch: only what cudaProfilerStart/Stop enclose, and no OS runtime
    trace (before: the whole run, with every rank's OS calls)."""
    argv = nsys_part(nsys_profile_argv(NSYS, INNER, tmp_path / "cap", gpu=True))
    assert flag(argv, "trace") == "cuda,nvtx"
    assert flag(argv, "capture-range") == "cudaProfilerApi"
    assert flag(argv, "capture-range-end") == "stop"  # the ranks go on to write the result
    assert flag(argv, "nvtx-capture") is None
    assert flag(argv, "kill") is None  # the application is never killed at the range end


def test_cpu_capture_is_an_nvtx_range_and_keeps_osrt(tmp_path: Path) -> None:
    argv = nsys_part(nsys_profile_argv(NSYS, INNER, tmp_path / "cap"))
    assert flag(argv, "trace") == "nvtx,osrt"
    assert flag(argv, "capture-range") == "nvtx"
    assert flag(argv, "nvtx-capture") == f"{NVTX_CAPTURE}@*"  # either backend's domain
    # the trigger is an empty range before the steps: its end must not end the collection
    assert flag(argv, "capture-range-end") == "none"


def test_no_capture_range_captures_the_whole_run(tmp_path: Path) -> None:
    argv = nsys_part(nsys_profile_argv(NSYS, INNER, tmp_path / "cap", capture="none"))
    assert not [a for a in argv if a.startswith("--capture-range")]
    assert capture_argv("none") == []


@pytest.mark.parametrize(
    ("trace", "capture"), [(["nvtx", "osrt"], "cudaProfilerApi"), (["cuda"], "nvtx")]
)
def test_a_capture_range_needs_its_api_traced(
    tmp_path: Path, trace: list[str], capture: Any
) -> None:
    with pytest.raises(ValueError, match="needs"):
        nsys_profile_argv(NSYS, INNER, tmp_path / "cap", trace=trace, capture=capture)


def test_default_capture() -> None:
    assert default_capture(gpu=True) == "cudaProfilerApi"
    assert default_capture(gpu=True, nvtx_records=False) == "cudaProfilerApi"
    assert default_capture(gpu=False) == "nvtx"
    assert default_capture(gpu=False, nvtx_records=False) == "none"


# ------------------------------------------------------- the launcher and the ranks agree


def launch(tmp_path: Path, device: str) -> Any:
    return torchrun_command(
        "w",
        [],
        nproc=2,
        device=device,  # type: ignore[arg-type]
        log_dir=tmp_path / "logs",
        base_env={"PATH": "/usr/bin"},
        omp_num_threads=1,
    )


@pytest.mark.parametrize(
    ("gpu", "device", "mode"), [(True, "cuda", "cudaProfilerApi"), (False, "cpu", "nvtx")]
)
def test_wrap_launch_tells_the_ranks_the_trigger_its_argv_waits_for(
    tmp_path: Path, gpu: bool, device: str, mode: str
) -> None:
    wrapped = wrap_launch(launch(tmp_path, device), NSYS, tmp_path / "cap", gpu=gpu)
    assert flag(wrapped.argv, "capture-range") == mode
    assert wrapped.env_overrides[CAPTURE_ENV] == mode  # recorded with the run's launch
    assert capture_range(wrapped.env) == mode
    trigger, why_not = nsys_trigger(capture_range(wrapped.env), device, FakeNvtx([]))
    assert trigger is not None and why_not is None
    if mode == "nvtx":  # torch.cuda.nvtx registers no string: nsys must match any
        assert wrapped.env["NSYS_NVTX_PROFILER_REGISTER_ONLY"] == "0"


def test_without_the_environment_a_rank_fires_nothing() -> None:
    assert capture_range({}) == "none"
    assert capture_range({CAPTURE_ENV: "bogus"}) == "none"
    assert nsys_trigger("none", "cuda", FakeNvtx([])) == (None, None)


def test_a_trigger_the_rank_cannot_fire_says_why() -> None:
    trigger, why = nsys_trigger("cudaProfilerApi", "cpu", FakeNvtx([]))
    assert trigger is None and why == note("profile.trigger_cpu")
    trigger, why = nsys_trigger("nvtx", "cpu", None)
    assert trigger is None and why == note("profile.trigger_no_nvtx", range=NVTX_CAPTURE)


def test_cuda_trigger_is_cuda_profiler_start_and_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch.cuda.profiler as cuda_profiler

    calls: list[str] = []
    monkeypatch.setattr(cuda_profiler, "start", lambda: calls.append("cudaProfilerStart"))
    monkeypatch.setattr(cuda_profiler, "stop", lambda: calls.append("cudaProfilerStop"))
    trigger, _ = nsys_trigger("cudaProfilerApi", "cuda", None)
    assert trigger is not None
    trigger.start()
    trigger.stop()
    assert calls == ["cudaProfilerStart", "cudaProfilerStop"]


def test_nvtx_trigger_is_an_empty_range(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    trigger, _ = nsys_trigger("nvtx", "cpu", FakeNvtx(events))
    assert trigger is not None
    trigger.start()
    trigger.stop()
    # pushed and popped at once: a range around the steps would read as one op covering them
    assert events == [f"push {NVTX_CAPTURE}", "pop"]


@pytest.mark.parametrize(
    ("gpu", "records", "expected", "noted"),
    [
        (True, False, "cudaProfilerApi", False),
        (False, True, "nvtx", False),
        (False, False, "none", True),
    ],
)
def test_profile_session_wraps_with_the_capture_range(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    gpu: bool,
    records: bool,
    expected: str,
    noted: bool,
) -> None:
    monkeypatch.setattr(nsys_mod, "find_nsys", lambda *a, **k: NSYS)
    monkeypatch.setattr(
        nsys_mod, "cpu_nvtx_records", lambda: (records, note("profile.nvtx_missing"))
    )
    command, whole = session._nsys_wrap(launch(tmp_path, "cuda" if gpu else "cpu"), tmp_path)
    assert command.env_overrides[CAPTURE_ENV] == expected
    assert (flag(command.argv, "capture-range") or "none") == expected
    assert (whole is not None) == noted
    if whole:
        assert whole == note("profile.whole_run", why=note("profile.nvtx_missing").model_dump())


# ------------------------------------------------------------- where the rank fires it


class FakeNvtx:
    """An NVTX backend that records its calls in a shared list."""

    name = "fake"

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def push(self, message: str) -> None:
        self.events.append(f"push {message}")

    def pop(self) -> None:
        self.events.append("pop")

    def start(self, message: str) -> str:
        self.events.append(f"start {message}")
        return message

    def end(self, handle: Any) -> None:
        self.events.append(f"end {handle}")

    def mark(self, message: str) -> None:
        self.events.append(f"mark {message}")


class FakeTrainer:
    """What capture() uses of a Trainer; `runner` set: no phase recorder (pipeline path)."""

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.device = torch.device("cpu")
        self.runner = object()
        self.spec = SimpleNamespace(measurement=SimpleNamespace(timing="auto"))
        self.steps = 0

    def step(self, phases: Any = None) -> None:
        self.events.append(f"step {self.steps}")
        self.steps += 1


@pytest.fixture(scope="module")
def process_group(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A 1-rank gloo group: capture() synchronises the ranks with barriers."""
    store = f"file://{tmp_path_factory.mktemp('pg') / 'store'}"
    dist.init_process_group("gloo", init_method=store, rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def run_capture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, events: list[str]
) -> dict[str, Any]:
    """capture() on a fake trainer with a fake NVTX backend, the trigger's calls recorded as
    START and STOP among the steps and NVTX calls; returns rank 0's phases.json."""
    monkeypatch.setenv(CAPTURE_ENV, mode)
    monkeypatch.setattr(markers, "nvtx_backend", lambda: (FakeNvtx(events), None))
    real = capture_mod.nsys_trigger

    def recorded(label: str, action: Callable[[], None]) -> Callable[[], None]:
        def call() -> None:
            events.append(label)
            action()

        return call

    def recording(mode: Any, device_type: str, backend: Any) -> Any:
        trigger, why = real(mode, device_type, backend)
        if trigger is None:
            return trigger, why
        start, stop = recorded("START", trigger.start), recorded("STOP", trigger.stop)
        return Trigger(trigger.mode, start, stop), why

    monkeypatch.setattr(capture_mod, "nsys_trigger", recording)
    spec = ProfileSpec(tool="nsys", wait=1, warmup=2, active=3, trace_dir=str(tmp_path))
    outcome = capture(FakeTrainer(events), spec, rank=0)  # type: ignore[arg-type]
    assert outcome.files == ["rank0.phases.json"]
    record: dict[str, Any] = json.loads((tmp_path / "rank0.phases.json").read_text())
    return record


def test_the_rank_starts_the_capture_after_the_untraced_steps_and_marks_inside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, process_group: None
) -> None:
    events: list[str] = []
    record = run_capture(tmp_path, monkeypatch, "nvtx", events)
    traced = [
        "mark torchscale:rank=0",
        *[
            e
            for n in (3, 4, 5)
            for e in (f"start ProfilerStep#{n}", f"step {n}", f"end ProfilerStep#{n}")
        ],
    ]
    # wait + warm-up unmarked and before the trigger; the rank mark inside the capture (the
    # reader maps processes to ranks by it); no range left open around the traced steps
    assert events == [
        "step 0",
        "step 1",
        "step 2",
        "START",
        f"push {NVTX_CAPTURE}",
        "pop",
        *traced,
        "STOP",
    ]
    assert record["steps"] == [3, 4, 5]
    assert len(record["step_s"]) == 3 and all(t >= 0 for t in record["step_s"])
    assert record["timing"] == "perf_counter"
    # why the pipeline's phases are not split: its code, never a sentence
    assert record["notes"] == {"phases": {"code": "unavailable.pipeline_phases", "figures": {}}}


def test_no_capture_range_fires_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, process_group: None
) -> None:
    events: list[str] = []
    run_capture(tmp_path, monkeypatch, "none", events)
    assert "START" not in events and "STOP" not in events
    assert events[3] == "mark torchscale:rank=0"


class BrokenNvtx(FakeNvtx):
    def push(self, message: str) -> None:
        raise RuntimeError(f"cannot push {message}")


def test_a_failing_trigger_costs_the_trace_not_the_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, process_group: None
) -> None:
    events: list[str] = []
    monkeypatch.setenv(CAPTURE_ENV, "nvtx")
    monkeypatch.setattr(markers, "nvtx_backend", lambda: (BrokenNvtx(events), None))
    spec = ProfileSpec(tool="nsys", wait=0, warmup=1, active=2, trace_dir=str(tmp_path))
    outcome = capture(FakeTrainer(events), spec, rank=0)  # type: ignore[arg-type]
    error = f"cannot push {NVTX_CAPTURE}"
    assert outcome.notes == [note("profile.capture_failed", on_rank=0, what="start", error=error)]
    assert [e for e in events if e.startswith("step")] == ["step 0", "step 1", "step 2"]
    assert outcome.files == ["rank0.phases.json"]


# ------------------------------------------------------------------ the capture overhead


def cell_result(p50: float, world: int = 2, std: float = 0.0) -> CellResult:
    config = parse_config(
        f"experiment_name: o\nmodels: [tiny-mlp]\nbatch_sizes: [8]\ngpu_counts: [{world}]\n"
        "device: cpu\n",
        "o.yaml",
    )
    cell = build_plan(config, Machine(gpu_count=0, cpu_cores=8)).cells[0].cell
    stats = StepTimeStats(
        count=10, mean=p50, p50=p50, p95=p50, p99=p50, min=p50, max=p50, std=std, cv=std / p50
    )
    return CellResult(cell=cell, status="ok", step_time=stats)  # type: ignore[arg-type]


def write_phases(directory: Path, rank: int, step_s: list[float]) -> None:
    record = {"rank": rank, "step_s": step_s, "timing": "perf_counter", "phases": {}}
    (directory / f"rank{rank}.phases.json").write_text(json.dumps(record))


def test_overhead_is_traced_against_measured_mean_step(tmp_path: Path) -> None:
    write_phases(tmp_path, 0, [0.110, 0.112, 0.113])
    write_phases(tmp_path, 1, [0.111, 0.109, 0.114])
    overhead, why = capture_overhead(cell_result(0.100), tmp_path, "nsys")
    assert why is None and overhead is not None
    inflation = overhead.inflation
    assert inflation.traced_s == pytest.approx(0.1115)  # mean of all 6
    assert inflation.untraced_s == pytest.approx(0.100)
    assert inflation.share == pytest.approx(0.115)
    assert (inflation.traced_steps, overhead.ranks, overhead.timing) == (6, 2, "perf_counter")
    line = say(overhead.note())
    assert line.startswith("capture overhead (nsys): traced steps 112 ms mean against 100 ms")
    assert "+11.5 % ±" in line and "Welch's t" in line  # spelled as every figure is
    (tmp_path / "rank1.phases.json").unlink()
    write_phases(tmp_path, 0, [0.1115])  # one traced step: no interval
    assert "+11.5 %, no interval" in say(
        capture_overhead(cell_result(0.1), tmp_path, "nsys")[0].note()
    )


def test_overhead_carries_an_interval_and_is_not_measurable_inside_it(tmp_path: Path) -> None:
    steps = [0.110, 0.112, 0.111, 0.109, 0.113, 0.111, 0.110, 0.112]
    write_phases(tmp_path, 0, steps)
    clear = capture_overhead(cell_result(0.1, std=0.001), tmp_path, "nsys")
    overhead = clear[0]
    assert overhead is not None
    low, high = overhead.inflation.low, overhead.inflation.high
    assert low is not None and high is not None
    assert 0 < low < overhead.inflation.share < high
    assert "(+11.0 % ±1.2 %, Welch's t" in say(overhead.note())
    # measured windows as noisy as the difference: the figure is not a figure
    noisy = capture_overhead(cell_result(0.1, std=0.05), tmp_path, "nsys")
    overhead = noisy[0]
    assert overhead is not None
    low, high = overhead.inflation.low, overhead.inflation.high
    assert low is not None and high is not None and low <= 0.0 <= high
    assert "not measurable: its interval [-" in say(overhead.note())
    assert "+11" not in say(overhead.note())


def test_overhead_unknown_says_why(tmp_path: Path) -> None:
    overhead, why = capture_overhead(cell_result(0.1), tmp_path, "torch")
    assert overhead is None and why == note("profile.no_traced_step_times")
    (tmp_path / "rank0.phases.json").write_text("{not json")
    assert capture_overhead(cell_result(0.1), tmp_path, "torch")[0] is None
