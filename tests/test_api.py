"""The library API drives a whole benchmark without the CLI (issue 23): `run_benchmark` plans,
runs the sweep and the suites the config turns on, prints nothing and returns typed results
with the exit code `torchscale benchmark` would set."""

from __future__ import annotations

from pathlib import Path

import pytest

import torchscale.results
from torchscale.api import BenchmarkEvents, plan_benchmark, run_benchmark
from torchscale.config.schema import BenchConfig
from torchscale.errors import UsageError


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


def test_other_launchers_are_the_clis(tmp_path: Path) -> None:
    cfg = config(launcher={"kind": "k8s", "k8s": {"image": "registry.example/train:1"}})
    with pytest.raises(UsageError, match=r"launcher\.kind local"):
        run_benchmark(cfg, tmp_path)
