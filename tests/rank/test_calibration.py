"""The fixed calibration every rank times after its windows (rank/worker/calibration.py): in one
process (a window's steps unchanged, the calibration timed beside them), and in real 2-rank
torchrun cells: a rank given more work reads "more work" (its calibration on par), and a rank
whose core busy processes share (the core made slower: pinned busy processes; this VM has no
cgroup cpu controller to set cpu.max, no SMT sibling and no cpufreq) never does.
`benchmarks/device_calibration.py` measures how often a balanced run reads "a slower device".
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path

import pytest
import torch

from tests.rank.test_phases import (  # noqa: F401 (process_group: a fixture)
    REPO_ROOT,
    SCHEDSTAT_READABLE,
    process_group,
    run_worker_cell,
    worker_spec,
)
from torchscale.contracts.cell_settings import ModelSpec
from torchscale.contracts.schema.cell_result import CellResult, RankCalibration
from torchscale.rank.worker.calibration import REPS, Calibration
from torchscale.rank.worker.measure import run_window
from torchscale.rank.worker.trainer import Trainer


@pytest.mark.usefixtures("process_group")
def test_a_window_times_the_calibration_beside_its_steps(tmp_path: Path) -> None:
    trainer = Trainer.build(worker_spec(tmp_path), torch.device("cpu"))
    trainer.step()
    window = run_window(trainer, 4, "perf_counter", calibration=Calibration(torch.device("cpu")))
    assert len(window.step_s) == 4 and window.phases is not None
    assert window.calibration_s is not None and window.calibration_wall_s is not None
    assert len(window.calibration_s) == len(window.calibration_wall_s) == REPS
    assert all(s > 0 for s in window.calibration_s)
    # the thread's CPU time lies inside the wall time of the same repetition
    for cpu, wall in zip(window.calibration_s, window.calibration_wall_s, strict=True):
        assert cpu <= wall + 1e-3
    assert window.calibration_cost_s is not None
    assert window.calibration_cost_s >= sum(window.calibration_wall_s)
    bare = run_window(trainer, 4, "perf_counter")
    assert bare.calibration_s is None and bare.calibration_cost_s is None


def run_cell(tmp: Path, model: str, options: dict[str, int | float | str | bool]) -> CellResult:
    """One 2-rank CPU torchrun cell of a tests/straggler_plugins model, 16 steps x 2 windows."""
    spec = worker_spec(tmp, world=2, steps=16, comm_overhead=False, telemetry=False)
    spec = spec.model_copy(
        update={
            "model": ModelSpec(name=f"tests.straggler_plugins:{model}", options=options),
            "measurement": spec.measurement.model_copy(update={"repeats": 2}),
            "cell": spec.cell.model_copy(update={"model": model, "label": model}),
        }
    )
    return run_worker_cell(tmp, spec)


def means(calibration: RankCalibration | None) -> tuple[float, float]:
    """(mean CPU seconds, mean wall seconds) of a rank's calibration repetitions: the mean, as
    a wait for the core falls on one repetition in several (each is shorter than a slice)."""
    assert calibration is not None and calibration.timer == "thread_time"
    return (
        statistics.fmean(s for reps in calibration.device_s for s in reps),
        statistics.fmean(s for reps in calibration.wall_s for s in reps),
    )


@pytest.mark.slow  # a real 2-rank torchrun cell
def test_a_rank_given_more_work_reads_more_work(tmp_path: Path) -> None:
    """The last rank runs its forward 48 more times: compute, its core on par."""
    result = run_cell(tmp_path, "compute", {"repeat": 48})
    verdict = result.diagnosis.straggler if result.diagnosis else None
    assert verdict is not None and verdict.named and verdict.rank == 1, verdict
    assert verdict.kind == "compute"
    assert verdict.device is not None and verdict.device.code in (
        "straggler.more_work",
        "straggler.device_undecided",  # a loaded machine's calibration may not rule it out
        # beside other tests its core may also time slower after the window: still more work
        "straggler.device_partly",
    ), verdict.device
    assert verdict.device.code != "straggler.device_slower"
    assert all(r.calibration is not None for r in result.ranks)
    cost = [c for r in result.ranks if r.calibration for c in r.calibration.cost_s]
    assert len(cost) == 4 and all(c > 0 for c in cost)


@pytest.mark.slow  # a real 2-rank torchrun cell
@pytest.mark.skipif(
    not SCHEDSTAT_READABLE or len(os.sched_getaffinity(0)) < 2,
    reason="needs Linux schedstat and two cores to pin busy processes to the last rank's core",
)
def test_a_core_shared_with_busy_processes_never_reads_more_work(tmp_path: Path) -> None:
    """Three busy processes pinned to the last rank's core make it slower: its calibration's
    wall is slower (it waits for its core: a repetition in eight waited 5-13 ms), its CPU time
    on par or slower (the same instructions refill the caches the busy processes took: 1.5x
    in one run on this VM, on par in the next). The rank is `host` (held off the CPU) or,
    where its CPU time decides, compute on a slower core: never "more work"."""
    result = run_cell(tmp_path, "host", {"hogs": 3})
    (cpu0, wall0), (cpu1, wall1) = (means(r.calibration) for r in result.ranks)
    # its core's wait shows in the wall time; by how much depends on what else the machine runs
    # (other tests' ranks slow rank 0's core too: 1.15x once at load 6, over 1.2x when quiet)
    assert wall1 > wall0 and wall1 >= cpu1, (cpu0, wall0, cpu1, wall1)
    verdict = result.diagnosis.straggler if result.diagnosis else None
    assert verdict is not None and verdict.named and verdict.rank == 1, verdict
    assert verdict.kind in ("host", "compute"), verdict
    device = verdict.device.code if verdict.device is not None else None
    if verdict.kind == "host":
        assert device is None  # the host's: no device reading
    else:
        assert device in ("straggler.device_slower", "straggler.device_partly"), verdict
