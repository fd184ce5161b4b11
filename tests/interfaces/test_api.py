"""The library API drives whole jobs without the CLI: `run_benchmark` plans, runs
the sweep and the suites the config turns on (or hands the plan to the Slurm or Kubernetes
launcher), `run_profile` profiles one cell, `analyze_traces` reads any job's traces,
`build_report` writes a report; each prints nothing and returns typed results with the exit
code its command would set."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import torchscale.results
from torchscale.api import (
    BenchmarkEvents,
    ProfileOptions,
    analyze_traces,
    build_report,
    plan_benchmark,
    run_benchmark,
    run_profile,
)
from torchscale.contracts.errors import EXIT_NOT_JUDGED, UsageError
from torchscale.contracts.worker_spec import DelaySpec
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.schedulers import launcher_for


def config(**changes: object) -> BenchConfig:
    data: dict[str, object] = {
        "experiment_name": "api",
        "models": ["tiny-mlp"],
        "batch_sizes": [8],
        "gpu_counts": [1],
        "device": "cpu",
        "measurement": {"warmup_steps": 1, "steps": 3, "repeats": 2},
        "comm": {"enabled": True, "min_bytes": "1K", "max_bytes": "4K", "iters": 2},
    }
    data.update(changes)
    return BenchConfig.model_validate(data)


@pytest.mark.slow  # real torchrun cells
def test_a_whole_benchmark_from_python(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[str] = []
    events = BenchmarkEvents(
        on_cell_done=lambda result, reused: seen.append(f"cell {result.status.value}"),
        on_sweep_done=lambda run: seen.append(f"sweep {len(run.sweep.results)}"),
        on_comm_done=lambda result, stored: seen.append(f"comm {stored.exists()}"),
    )
    run = run_benchmark(config(), tmp_path, events=events)
    assert seen == ["cell ok", "sweep 1", "comm True"]
    assert run.exit_code == 0 and run.nothing_measured is None
    (result,) = run.sweep.results
    assert result.throughput is not None and result.throughput.samples_per_s > 0
    assert len(run.comm) == 1 and run.comm_ok
    # the same files the CLI writes, read back through the public reader
    experiment = torchscale.results.load(tmp_path / "api")
    assert list(experiment.cells["status"]) == ["ok"]
    assert (tmp_path / "api" / "env.json").exists()
    assert capsys.readouterr().out == ""  # the library prints nothing


def test_nothing_measured_is_exit_code_one(tmp_path: Path) -> None:
    # batch 8 cannot be split into 3 micro-batches: every cell skipped before launch
    cfg = config(
        gpu_counts=[2],
        training={"strategy": "pp", "parallel": {"microbatches": [3]}},
        comm={"enabled": False},
    )
    plan = plan_benchmark(cfg)
    assert all(p.skip_reason is not None for p in plan.cells)
    run = run_benchmark(cfg, tmp_path, plan=plan)
    assert run.nothing_measured is not None and run.exit_code == 1


def test_kubernetes_through_the_same_call(tmp_path: Path) -> None:
    """Every launcher sits behind run_benchmark: k8s writes one manifest per cell (nothing is
    applied without launcher.k8s.apply) and runs nothing here."""
    cfg = config(
        gpu_counts=[1, 2],
        launcher={"kind": "k8s", "k8s": {"image": "registry.example/train:1"}},
    )
    written: list[int] = []
    warnings: list[str] = []
    events = BenchmarkEvents(
        on_launcher_event=lambda e: written.append(len(e.submission.files if e.submission else ())),
        on_warning=warnings.append,
    )
    run = run_benchmark(cfg, tmp_path, events=events)
    assert run.submission is not None and run.submission.launcher == "k8s"
    assert run.submission.record == ()  # what kubectl applied: nothing
    assert written == [2] and all(p.exists() for p in run.submission.files)
    assert run.submission.directory == tmp_path / "api" / "k8s"
    assert any("results_claim" in w for w in warnings)
    assert run.sweep.results == [] and run.exit_code == 0


def test_a_dry_run_runs_nothing(tmp_path: Path) -> None:
    run = run_benchmark(config(), tmp_path, dry_run=True)
    assert run.dry_run and run.sweep.results == [] and run.exit_code == 0
    assert not (tmp_path / "api").exists()


def test_an_unknown_launcher_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"unknown launcher\.kind 'lsf'"):
        launcher_for("lsf")


@pytest.mark.slow  # real torchrun cells
def test_a_profile_from_python(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chosen: list[str] = []
    options = ProfileOptions(gpus=2, model="tiny-mlp", batch_size=8, steps=4, profile_steps=3)
    run = run_profile(options, tmp_path, on_start=lambda plan: chosen.extend(plan.notes))
    assert any("no CUDA GPU visible" in note for note in chosen)  # this machine has none
    assert run.exit_code == 0, run.profiled.analysis_error
    assert run.profiled.analysis is not None and run.profiled.analysis.world_size == 2
    assert (run.profiled.directory / "analysis.json").exists()
    # the traces it wrote read back through the offline entry point too
    again = analyze_traces(run.profiled.directory, output=tmp_path / "again.json")
    assert again.saved == tmp_path / "again.json"
    assert again.analysis.world_size == 2
    assert capsys.readouterr().out == ""


def test_profile_options_that_cannot_run_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="exclude each other"):
        run_profile(ProfileOptions(duration_s=5, steps=3), tmp_path)
    with pytest.raises(UsageError, match="rank 3 does not exist in a 2-rank run"):
        delay = DelaySpec(rank=3, phase="forward", ms=5.0)
        run_profile(ProfileOptions(gpus=2, device="cpu", inject_delay=(delay,)), tmp_path)
    assert not any(tmp_path.iterdir())  # nothing written


def test_a_report_from_python(tmp_path: Path) -> None:
    results = tmp_path / "v3_fixture"  # real results of an earlier version, copied: written to
    shutil.copytree(
        Path(__file__).parents[1] / "fixtures" / "cpu_sweep_profile" / "v3_fixture", results
    )
    report = build_report(results, "md", baseline=results)
    assert report.outcome.path == results / "v3_fixture_report.md"
    assert report.outcome.path.read_bytes() == report.outcome.content
    assert report.gate is not None and report.gate.matched >= 2
    # 2 repeats a side: nothing judged, its own state (null, with a count), exit 0 without
    # the gate and EXIT_NOT_JUDGED with it
    assert report.report.regressions is None and report.gate.judged == 0
    assert report.report.not_judged is not None and report.report.not_judged >= 2
    assert report.exit_code == 0
    gated = build_report(results, "json", baseline=results, fail_on_regression=True)
    assert gated.exit_code == EXIT_NOT_JUDGED == 4
