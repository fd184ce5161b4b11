"""A rank that raises leaves its process group without waiting for its peers, and the measured
windows run under a collective timeout the warm-up justifies.

Destroying the group waits for the rank's outstanding collectives, which its peers, waiting in a
collective for that rank, never complete. On 8 GPUs one rank's OOM would read as a peer's NCCL
watchdog SIGABRT 10 minutes later. A real 2-rank gloo run shows the same deadlock (the raising
rank's async all_reduce is outstanding, its peer waits in another group's all_reduce: destroy
blocks until the cell timeout) and that the error path ends it in seconds, naming the rank. On
gloo it is the recorded error and the bounded exit that end it (gloo's abort waits as its
destroy does); on NCCL the abort itself does not wait: that the error path aborts and never
destroys is checked with the group replaced, as no GPU runs these tests.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d

from tests.processes import REPO_ROOT, kill_mentioning
from torchscale.contracts.cell import CellIdentity, Status
from torchscale.contracts.cell_settings import (
    DataConfig,
    MeasurementConfig,
    ModelSpec,
    TrainingConfig,
)
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.orchestration.launch.failure import classify_failure
from torchscale.orchestration.launch.process import run_launch
from torchscale.orchestration.launch.torchrun import torchrun_command
from torchscale.rank.worker import harness
from torchscale.rank.worker import measure as measure_module
from torchscale.rank.worker.measure import measure
from torchscale.rank.worker.steady_state import WarmUp, collective_timeout_s
from torchscale.rank.worker.trainer import Trainer

CELL_TIMEOUT_S = 90  # a rank waiting for its peers would hold the run until this timeout


# ====================================================================== a real gloo run


@pytest.mark.slow  # real torchrun with 2 gloo ranks
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="torchrun ranks, Linux /proc")
def test_a_rank_that_raises_with_work_outstanding_ends_in_seconds_and_is_named(
    tmp_path: Path,
) -> None:
    command = torchrun_command(
        "tests.rank_fault_worker",
        ["--raise-on", "1", "--outstanding", "--exit-grace-s", "3", "--marker", str(tmp_path)],
        nproc=2,
        device="cpu",
        log_dir=tmp_path / "logs",
        base_env=dict(os.environ),
        omp_num_threads=1,
        extra_env={"PYTHONPATH": str(REPO_ROOT)},
    )
    try:
        outcome = run_launch(command, CELL_TIMEOUT_S)
    finally:
        kill_mentioning(str(tmp_path))
    failure = classify_failure(outcome, command, CELL_TIMEOUT_S)
    # a rank left waiting for its peers would hold the run until the cell timeout
    assert not outcome.timed_out, command.log_path.read_text()
    assert failure.status == Status.OOM, failure.reason
    assert failure.root_cause_rank == 1
    assert "injected on rank 1" in failure.reason


# ====================================================================== the error path, unit


@pytest.fixture()
def fake_group(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """torch.distributed's group calls replaced by recorders (no group is joined); the error
    file torchrun would name is tmp_path/error.json, read back when the abort is called."""
    calls: list[str] = []
    error_file = tmp_path / "error.json"
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(error_file))

    def abort() -> None:
        recorded = error_file.read_text() if error_file.exists() else "nothing"
        calls.append(f"abort (error file: {json.loads(recorded)['message']['message']})")

    monkeypatch.setattr(dist, "init_process_group", lambda **_: calls.append("init"))
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "destroy_process_group", lambda: calls.append("destroy"))
    monkeypatch.setattr(c10d, "_abort_process_group", abort)
    # never arm the real watchdog in the test process: it would end pytest
    monkeypatch.setattr(harness, "exit_if_stuck", lambda s: calls.append(f"exit after {s:g} s"))
    return calls


def test_a_rank_that_raised_records_bounds_its_exit_and_aborts_never_destroys(
    fake_group: list[str],
) -> None:
    with (
        pytest.raises(torch.OutOfMemoryError, match="CUDA out of memory"),
        harness.process_group("gloo", torch.device("cpu")),
    ):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    assert fake_group == [
        "init",
        f"exit after {harness.ERROR_EXIT_GRACE.total_seconds():g} s",
        "abort (error file: OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB)",
    ]


def test_a_rank_that_succeeded_destroys_its_group(fake_group: list[str]) -> None:
    with harness.process_group("gloo", torch.device("cpu")):
        pass
    assert fake_group == ["init", "destroy"]


def test_a_failed_abort_does_not_hide_the_ranks_own_error(
    fake_group: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def abort() -> None:
        raise RuntimeError("abort is not supported")

    monkeypatch.setattr(c10d, "_abort_process_group", abort)
    with (
        pytest.raises(ValueError, match="the rank's own"),
        harness.process_group("gloo", torch.device("cpu")),
    ):
        raise ValueError("the rank's own")
    assert "destroy" not in fake_group


def test_an_interrupt_is_not_recorded_as_the_ranks_error(
    fake_group: list[str], tmp_path: Path
) -> None:
    """As torchelastic's @record: only an Exception is the rank's error."""
    with (
        pytest.raises(KeyboardInterrupt),
        harness.process_group("gloo", torch.device("cpu"), exit_grace=timedelta(seconds=5)),
    ):
        raise KeyboardInterrupt
    assert not (tmp_path / "error.json").exists()
    assert fake_group[:2] == ["init", "exit after 5 s"]
    assert "destroy" not in fake_group


# ====================================================================== the windows' timeout


@pytest.fixture()
def one_rank_group(tmp_path: Path) -> Iterator[None]:
    """A 1-rank gloo group, as torchrun would give a world-size-1 cell."""
    store = f"file://{tmp_path / 'store'}"
    dist.init_process_group(
        "gloo", init_method=store, rank=0, world_size=1, timeout=harness.INIT_TIMEOUT
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


def group_timeout() -> timedelta:
    backend: Any = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
    timeout: timedelta = backend.options._timeout
    return timeout


def tiny_spec() -> WorkerSpec:
    return WorkerSpec(
        cell=CellIdentity(
            id="cell",
            definition_sha256="0" * 64,
            model="tiny-mlp",
            label="tiny-mlp",
            batch_size=4,
            world_size=1,
            precision="fp32",
            strategy="ddp",
            device="cpu",
            backend="gloo",
        ),
        model=ModelSpec(name="tiny-mlp"),
        training=TrainingConfig(),
        measurement=MeasurementConfig(steps=2, repeats=2, warmup_steps=2, flops=False),
        data=DataConfig(),
        result_path="/nonexistent/result.json",
        steps_path="/nonexistent/steps.jsonl",
    )


@pytest.mark.parametrize(
    ("warmup", "expected"),
    [([0.5, 4.0, 1.0], 80.0), ([0.01, 0.02], 60.0), ([], None)],
    ids=["20x-slowest", "floor", "no-warm-up"],
)
@pytest.mark.usefixtures("one_rank_group")
def test_the_windows_timeout_is_20x_the_slowest_warm_up_step_at_least_60_s(
    warmup: list[float], expected: float | None
) -> None:
    eager = WarmUp(warmup, [False] * len(warmup))  # no step compiled: every one is steady
    assert collective_timeout_s(eager, torch.device("cpu")) == expected


@pytest.mark.usefixtures("one_rank_group")
@pytest.mark.slow  # over 2 s on 2 cores
def test_measure_cuts_the_timeout_for_its_windows_then_restores_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trainer = Trainer.build(tiny_spec(), torch.device("cpu"))
    real_warm_up, real_run_window = measure_module.warm_up, measure_module.run_window
    seen: list[timedelta] = []

    def slow_warm_up(trainer: Trainer, steps: int, watch_compile: bool = False) -> WarmUp:
        real_warm_up(trainer, steps, watch_compile)
        return WarmUp([0.5, 4.0], [False, False])  # as if the slowest warm-up step took 4 s

    def run_window(*args: Any, **kwargs: Any) -> Any:
        seen.append(group_timeout())
        return real_run_window(*args, **kwargs)

    monkeypatch.setattr(measure_module, "warm_up", slow_warm_up)
    monkeypatch.setattr(measure_module, "run_window", run_window)
    assert group_timeout() == timedelta(minutes=10)
    measure(trainer, "host")
    assert seen == [timedelta(seconds=80)] * 2
    assert group_timeout() == harness.INIT_TIMEOUT  # rank 0 aggregates after: long again
    assert trainer.settings["collective_timeout_s"] == 80.0
