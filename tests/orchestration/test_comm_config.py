"""The config's `comm:` and `cost:` sections inside `torchscale benchmark`: sizes read as
nccl-tests reads them, one comm run per world size after the cells (shown by --dry-run), the
cells priced per million samples; one real 2-rank gloo sweep through the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner, Result

from tests.processes import processes_mentioning
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.comm_result import CommResult
from torchscale.interfaces.cli.app import app
from torchscale.offline.analysis.cost import NO_PRICE, NO_TOKENS, cell_cost
from torchscale.orchestration.comm.from_config import comm_requests
from torchscale.orchestration.config.schema import BenchConfig, CommConfig, CostConfig
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, ["benchmark", *map(str, args)])


def config(**extra: Any) -> BenchConfig:
    data: dict[str, Any] = {
        "experiment_name": "cc",
        "models": ["tiny-mlp"],
        "batch_sizes": [8],
        "gpu_counts": [1, 2],
        "device": "cpu",
    }
    return BenchConfig.model_validate(data | extra)


# --- config ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("8", 8), ("64K", 2**16), ("1M", 2**20), ("1G", 2**30), ("1GiB", 2**30), ("1GB", 10**9)],
)
def test_config_sizes_mean_what_nccl_tests_means(text: str, expected: int) -> None:
    assert CommConfig.model_validate({"min_bytes": 1, "max_bytes": text}).max_bytes == expected


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("8X", "expected a whole number"),
        ("0", "must be positive"),
        (0, "greater than 0"),
        ("2T", "<= 1TiB"),
    ],
)
def test_bad_config_sizes_are_refused(value: Any, fragment: str) -> None:
    with pytest.raises(ValidationError) as caught:
        CommConfig.model_validate({"min_bytes": value, "max_bytes": value})
    assert fragment in str(caught.value)


def test_min_above_max_is_refused() -> None:
    with pytest.raises(ValidationError, match="larger than max_bytes"):
        CommConfig.model_validate({"min_bytes": "1M", "max_bytes": "1K"})


def test_price_must_be_a_price() -> None:
    assert CostConfig.model_validate({"per_gpu_hour": 2.5}).per_gpu_hour == 2.5
    for bad in (-1.0, 1e6, "2.5"):
        with pytest.raises(ValidationError):
            CostConfig.model_validate({"per_gpu_hour": bad})


# --- requests from the config ------------------------------------------------------------------


def test_no_comm_request_unless_enabled() -> None:
    plan = build_plan(config(), Machine(gpu_count=0, cpu_cores=2))
    assert comm_requests(plan) == []


def test_one_comm_request_per_launchable_world_size() -> None:
    section = {"enabled": True, "collectives": ["all_gather", "broadcast"], "max_bytes": "4K"}
    plan = build_plan(
        config(comm=section, gpu_counts=[1, 2, 4], batch_sizes=[4, 8], device="cuda"),
        Machine(gpu_count=2, cpu_cores=16),
    )
    requests = comm_requests(plan)
    assert [r.ranks for r in requests] == [1, 2]  # 4 GPUs are not there: skipped like its cells
    first = requests[0]
    assert first.ops == ("all_gather", "broadcast")
    assert (first.min_bytes, first.max_bytes) == (1024, 4096)
    assert (first.device, first.backend) == ("cuda", "nccl")
    assert first.timeout_s == plan.launcher.cell_timeout_s


# --- cost --------------------------------------------------------------------------------------


def test_cost_per_million_from_throughput_and_price() -> None:
    # 2 GPUs at 1000 samples/s: 1e6 samples take 1000 s = 2000 GPU-seconds = 5/9 GPU-hour
    fields, why = cell_cost(1000.0, 64_000.0, 2, 3.6)
    assert fields["gpu_hours_per_m_samples"] == pytest.approx(2000 / 3600)
    assert fields["cost_per_m_samples"] == pytest.approx(2.0)
    assert fields["cost_per_m_tokens"] == pytest.approx(2.0 / 64)
    assert why == {}


def test_cost_without_price_or_tokens_says_why() -> None:
    fields, why = cell_cost(1000.0, None, 1, None)
    assert fields["gpu_hours_per_m_samples"] == pytest.approx(1e3 / 3600)
    assert fields["cost_per_m_samples"] is None
    assert why["cost.cost_per_m_samples"] == NO_PRICE
    fields, why = cell_cost(1000.0, None, 1, 2.0)
    assert fields["cost_per_m_samples"] == pytest.approx(2e3 / 3600)
    assert fields["cost_per_m_tokens"] is None and why["cost.cost_per_m_tokens"] == NO_TOKENS


# --- one real sweep ----------------------------------------------------------------------------


@pytest.mark.slow  # a real sweep with its comm section
def test_benchmark_runs_the_comm_section_and_prices_cells(tmp_path: Path) -> None:
    name = "commcfg"
    cfg = tmp_path / "c.yaml"
    data = {
        "experiment_name": name,
        "models": ["tiny-mlp"],
        "batch_sizes": [8],
        "gpu_counts": [2],
        "device": "cpu",
        "measurement": {"warmup_steps": 1, "steps": 2, "repeats": 1, "comm_overhead": False},
        "comm": {"enabled": True, "min_bytes": "1K", "max_bytes": "4K", "iters": 3},
        "cost": {"per_gpu_hour": 3.6},
    }
    cfg.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "results"

    dry = invoke("-c", cfg, "-o", out, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "after the cells: all_reduce on 2 rank(s), 3 size(s) into comm/" in dry.output
    assert not (out / name).exists()

    result = invoke("-c", cfg, "-o", out)
    exp = out / name
    assert result.exit_code == 0, result.output
    assert "[COMM] stored:" in result.output and "Avg bus bandwidth" in result.output
    runs = [CommResult.model_validate_json(p.read_text()) for p in (exp / "comm").glob("*.json")]
    assert len(runs) == 1
    run = runs[0]
    assert run.world_size == 2 and run.wrong_total == 0
    assert [r.size_bytes for r in run.rows] == [1024, 2048, 4096]

    (cell_file,) = (exp / "cells").glob("*.json")
    cell = CellResult.model_validate_json(cell_file.read_text())
    assert cell.cost is not None and cell.throughput is not None
    expected = 1e6 / cell.throughput.samples_per_s / 3600 * 2 * 3.6
    assert cell.cost.per_gpu_hour == 3.6
    assert cell.cost.cost_per_m_samples is not None
    assert math.isclose(cell.cost.cost_per_m_samples, expected, rel_tol=1e-9)
    assert cell.unavailable.get("cost.cost_per_m_tokens")  # tiny-mlp has no tokens
    assert processes_mentioning(str(exp)) == []
