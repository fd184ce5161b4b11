"""The CPUs a Slurm step's ranks get, as data: what sbatch and srun ask,
the threads each rank is given, and the warning when a node's ranks outnumber its CPUs.

Without a request, Slurm gives one CPU per task, and there is one task per node: torchrun and
all its ranks would share one CPU. No Slurm needed here.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.forecast_samples import fixture_cell, fixture_copy, forecast_of
from torchscale.contracts.schema.forecast import ForecastKey
from torchscale.contracts.wording.cell_warnings import warning_words
from torchscale.contracts.wording.spell import error_pct as percent
from torchscale.offline.results.forecast_store import read_forecasts, write_forecast
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.launch.process import ProcessOutcome
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.orchestration.plan.planned import PlannedCell
from torchscale.orchestration.schedulers.slurm import cpus, driver, hostenv, node
from torchscale.orchestration.schedulers.slurm.allocation import (
    Allocation,
    build_allocation,
    sbatch_script,
)
from torchscale.orchestration.schedulers.slurm.cpus import AUTO_CPUS_PER_GPU
from torchscale.orchestration.schedulers.slurm.step import StepPlace, srun_command
from torchscale.orchestration.schedulers.slurm.submission import prepare_sweep


def config(gpu_counts: list[int], **launcher: Any) -> BenchConfig:
    return BenchConfig.model_validate(
        {
            "experiment_name": "cpus",
            "models": ["tiny-mlp"],
            "batch_sizes": [8],
            "gpu_counts": gpu_counts,
            "device": "cuda" if launcher.get("slurm", {}).get("gpus_per_node") else "cpu",
            "launcher": {"kind": "slurm", "nodes": [2], **launcher},
        }
    )


def allocation_of(cfg: BenchConfig, tmp_path: Path, login_cores: int = 4) -> Allocation:
    machine = Machine(gpu_count=cfg.launcher.slurm.gpus_per_node or 0, cpu_cores=login_cores)
    cells = list(build_plan(cfg, machine))
    store = ResultStore(tmp_path / "cpus")
    return build_allocation("s01-n2", 2, cells, store, cfg.launcher.slurm, None, cfg.comm)


def sbatch_lines(cfg: BenchConfig, tmp_path: Path) -> list[str]:
    return sbatch_script(allocation_of(cfg, tmp_path), cfg.launcher.slurm, "cpus").splitlines()


def cpus_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if "--cpus-per-task" in line]


# ------------------------------------------------------------------ what the job asks


def test_by_default_a_gpu_job_asks_cpus_for_every_gpu_not_one_per_node(tmp_path: Path) -> None:
    cfg = config([8], slurm={"gpus_per_node": 8})
    assert cfg.launcher.slurm.cpus_per_task is None
    assert cpus_lines(sbatch_lines(cfg, tmp_path)) == [
        f"#SBATCH --cpus-per-task={8 * AUTO_CPUS_PER_GPU}"
    ]


def test_by_default_a_cpu_job_asks_one_cpu_per_rank_of_its_widest_cell(tmp_path: Path) -> None:
    cfg = config([1, 3])
    assert cpus_lines(sbatch_lines(cfg, tmp_path)) == ["#SBATCH --cpus-per-task=3"]


def test_exclusive_nodes_bring_all_their_cpus_so_nothing_more_is_asked(tmp_path: Path) -> None:
    cfg = config([8], slurm={"gpus_per_node": 8, "exclusive": True})
    lines = sbatch_lines(cfg, tmp_path)
    assert "#SBATCH --exclusive" in lines
    assert cpus_lines(lines) == []


def test_a_count_in_the_config_is_asked_by_the_job_and_repeated_by_every_step(
    tmp_path: Path,
) -> None:
    cfg = config([8], slurm={"gpus_per_node": 8, "cpus_per_task": 96, "exclusive": True})
    allocation = allocation_of(cfg, tmp_path)
    assert cpus_lines(sbatch_script(allocation, cfg.launcher.slurm, "cpus").splitlines()) == [
        "#SBATCH --cpus-per-task=96"
    ]
    assert "--cpus-per-task=96" in srun_argv(allocation, tmp_path)
    assert not allocation.threads_from_cpus  # the plan counted those 96 already


def test_without_a_count_the_step_asks_none_and_so_uses_every_cpu_of_its_job(
    tmp_path: Path,
) -> None:
    """srun -c implies --exact; without it a step takes every CPU its job has on each node."""
    allocation = allocation_of(config([8], slurm={"gpus_per_node": 8}), tmp_path)
    argv = srun_argv(allocation, tmp_path)
    assert not [a for a in argv[: argv.index("--")] if a.startswith("--cpus-per-task")]


def srun_argv(allocation: Allocation, tmp_path: Path) -> list[str]:
    place = StepPlace(
        "7", "10.0.0.1", allocation.gpus_per_node, allocation.cpus_per_task, None, "py"
    )
    planned = allocation.cells[0].planned()
    return srun_command(planned, tmp_path / "s.json", tmp_path / "l", {}, place, 29500, 0).argv


# ------------------------------------------------------------------ threads and the warning


def test_threads_come_from_the_step_cpus_not_the_submitting_host(tmp_path: Path) -> None:
    cfg = config([8], slurm={"gpus_per_node": 8})
    allocation = allocation_of(cfg, tmp_path, login_cores=2)  # a small login node
    assert allocation.threads_from_cpus
    planned = driver.cell_as_run(allocation, allocation.cells[0], 64)
    assert planned.launch.omp_num_threads == 8
    assert planned.cell_warnings == allocation.cells[0].planned().cell_warnings


def test_a_node_with_fewer_cpus_than_ranks_is_a_cell_warning(tmp_path: Path) -> None:
    allocation = allocation_of(config([8], slurm={"gpus_per_node": 8}), tmp_path)
    planned = driver.cell_as_run(allocation, allocation.cells[0], 1)
    assert planned.launch.omp_num_threads == 1
    assert any(
        "1 CPU(s) on the first node for 8 rank(s)" in warning_words(w)
        and "cpus_per_task" in warning_words(w)
        for w in planned.cell_warnings
    ), planned.cell_warnings


def test_an_explicit_thread_count_is_kept(tmp_path: Path) -> None:
    cfg = config([8], omp_num_threads=3, slurm={"gpus_per_node": 8})
    plan = build_plan(cfg, Machine(gpu_count=8, cpu_cores=4))
    sweep = prepare_sweep(plan, ResultStore(tmp_path / "cpus"), {}, resume=False, write_skips=False)
    allocation = sweep.allocations[0]
    assert not allocation.threads_from_cpus
    assert driver.cell_as_run(allocation, allocation.cells[0], 64).launch.omp_num_threads == 3


def test_the_driver_launches_each_cell_with_the_threads_its_step_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole driver, Slurm's commands replaced: the cell's torchrun gets
    OMP_NUM_THREADS from the CPUs the step has (recorded with the result, as the launch
    record comes from this command), and the warning when they are too few."""
    cfg = config([4], slurm={"gpus_per_node": 4}, env={"PYTHONPATH": "x"})
    allocation = allocation_of(cfg, tmp_path, login_cores=1)
    launched: list[tuple[PlannedCell, Any]] = []

    def fake_run_cell(
        planned: PlannedCell, store: Any, env: Any, price: Any, build: Any, notes: Any
    ) -> None:
        launched.append((planned, build(planned, tmp_path / "s.json", tmp_path / "l", {})))

    monkeypatch.setattr(driver, "run_cell", fake_run_cell)
    monkeypatch.setattr(
        driver, "run_logged", lambda *a, **k: ProcessOutcome(0, False, 0.0, Path("srun.log"))
    )
    monkeypatch.setattr(cpus, "usable_cores", lambda: 40)
    assert driver.run_allocation(allocation, {"SLURM_JOB_ID": "9"}, 120) == 0
    planned, command = launched[0]
    assert command.env["OMP_NUM_THREADS"] == "10" and command.omp_num_threads == 10
    assert not [w for w in planned.cell_warnings if "CPU(s)" in warning_words(w)]
    monkeypatch.setattr(cpus, "usable_cores", lambda: 2)
    launched.clear()
    driver.run_allocation(allocation, {"SLURM_JOB_ID": "9"}, 120)
    assert launched[0][1].env["OMP_NUM_THREADS"] == "1"
    warned = launched[0][0].cell_warnings
    assert [w for w in warned if "2 CPU(s) on the first node" in warning_words(w)]


def test_the_driver_scores_the_forecasts_of_each_cell_it_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A forecast made before the job (torchscale predict on the login node) is scored by the
    allocation that measures its cell, as a local sweep scores it, and said in the job log."""
    allocation = allocation_of(config([4], slurm={"gpus_per_node": 4}), tmp_path)
    root = Path(allocation.experiment_root)
    measured = fixture_cell(fixture_copy(tmp_path / "fixture"), "tiny-gpt2__b16__w2")
    key = ForecastKey.of_cell(measured.cell)
    write_forecast(root, forecast_of(key, 0.03, 0.02, 0.04, forecast_id="before-the-job"))
    monkeypatch.setattr(driver, "run_cell", lambda *args, **kwargs: measured)
    monkeypatch.setattr(
        driver, "run_logged", lambda *a, **k: ProcessOutcome(0, False, 0.0, Path("srun.log"))
    )
    assert driver.run_allocation(allocation, {"SLURM_JOB_ID": "9"}, 120) == 0
    (score,) = read_forecasts(root).scores
    assert score.forecast_id == "before-the-job" and score.forecast_step_s == 0.03
    said = [line for line in capsys.readouterr().out.splitlines() if "before-the-job" in line]
    assert said == [
        f"torchscale: forecast before-the-job of {measured.cell.id}: 30 ms [20, 40] predicted, "
        f"measured {score.measured_step_s * 1e3:.3g} ms: "
        f"{'inside' if score.inside else 'outside'}, error {percent(score.error, signed=True)}"
    ]


def test_threads_stay_within_what_slurm_allocated_when_there_is_no_cpuset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without task/cgroup or task/affinity a step's affinity is the whole node (seen on the
    emulated cluster: 2 usable, SLURM_CPUS_ON_NODE=1); threads past the allocation would take
    other jobs' CPUs."""
    monkeypatch.setattr(cpus, "usable_cores", lambda: 64)
    assert cpus.step_cpus({"SLURM_CPUS_ON_NODE": "16"}) == 16
    assert cpus.step_cpus({}) == 64
    monkeypatch.setattr(cpus, "usable_cores", lambda: 8)
    assert cpus.step_cpus({"SLURM_CPUS_ON_NODE": "16"}) == 8  # a cpuset narrower still


def test_the_hosts_step_asks_the_cpus_a_cell_step_asks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """So the recorded hosts/node<k>.json counts the CPUs the cells had."""
    cfg = config([8], slurm={"gpus_per_node": 8, "cpus_per_task": 48})
    allocation = allocation_of(cfg, tmp_path)
    seen: list[list[str]] = []

    def fake_run_logged(argv: list[str], *args: Any, **kwargs: Any) -> ProcessOutcome:
        seen.append(list(argv))
        return ProcessOutcome(0, False, 0.0, Path("srun.log"))

    monkeypatch.setattr(driver, "run_logged", fake_run_logged)
    driver.record_hosts(allocation, {})
    assert "--cpus-per-task=48" in seen[0]
    assert seen[0][seen[0].index("-m") + 1] == "torchscale.orchestration.schedulers.slurm.hostenv"


# ------------------------------------------------------------------ on each node


def test_each_node_logs_its_cpus_and_warns_when_ranks_outnumber_them(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    execs: list[tuple[str, list[str], dict[str, str]]] = []
    monkeypatch.setattr(os, "execvpe", lambda f, argv, env: execs.append((f, argv, env)))
    monkeypatch.setattr(cpus, "usable_cores", lambda: 1)
    monkeypatch.setenv("SLURM_NODEID", "1")
    monkeypatch.delenv("SLURM_CPUS_ON_NODE", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    argv = ["python", "-m", "torch.distributed.run", "--nproc-per-node=8", "-m", "w"]
    monkeypatch.setattr(sys, "argv", ["node", "--", *argv])
    node.main()
    err = capsys.readouterr().err
    assert "node 1 (" in err and "1 CPU(s) for 8 rank(s), OMP_NUM_THREADS=8" in err
    assert "torchscale: warning: the Slurm step has 1 CPU(s) on node 1" in err
    assert execs and execs[0][0] == "python"
    monkeypatch.setattr(cpus, "usable_cores", lambda: 64)
    node.main()
    assert "warning" not in capsys.readouterr().err


def test_each_node_records_the_cpus_slurm_gave_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLURM_NODEID", "1")
    monkeypatch.setenv("SLURM_CPUS_ON_NODE", "64")
    monkeypatch.setenv("SLURM_JOB_CPUS_PER_NODE", "64(x2)")
    monkeypatch.setattr(sys, "argv", ["hostenv", str(tmp_path)])
    hostenv.main()
    record = json.loads((tmp_path / "node1.json").read_text())
    assert record["slurm"]["SLURM_CPUS_ON_NODE"] == "64"
    assert record["slurm"]["SLURM_JOB_CPUS_PER_NODE"] == "64(x2)"
    assert record["usable_cores"] >= 1  # the step's cpuset
