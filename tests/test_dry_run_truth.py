"""`benchmark --dry-run` tells the truth about the real run: the tools the config needs are
checked before anything runs (and named by the config key that asks for them, not a flag the
user never passed), and a Slurm dry run works off the cluster, saying what it could not check.

(The output-directory probe is in tests/test_output_dir.py; the cells --resume would reuse in
tests/test_sweep.py, on real results.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from torchscale.cli.app import app

TINY: dict[str, Any] = {
    "experiment_name": "truth",
    "models": ["tiny-mlp"],
    "batch_sizes": [4],
    "gpu_counts": [1],
    "device": "cpu",
    "measurement": {"warmup_steps": 1, "steps": 3, "repeats": 1},
}


def write_config(tmp_path: Path, **extra: Any) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps({**TINY, **extra}), encoding="utf-8")
    return path


def invoke(*args: str | Path) -> Any:
    return CliRunner().invoke(app, ["benchmark", *map(str, args)])


@pytest.fixture
def no_nsys(monkeypatch: pytest.MonkeyPatch) -> None:
    import torchscale.profiling.nsys

    monkeypatch.setattr(torchscale.profiling.nsys, "find_nsys", lambda *a, **k: None)


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_a_config_asking_for_nsys_fails_before_any_cell(
    tmp_path: Path, no_nsys: None, dry_run: bool
) -> None:
    """Before: the whole sweep ran, then the profiles failed on '--tool nsys', a flag the user
    never passed; a dry run said nothing."""
    config = write_config(tmp_path, profiling={"enabled": True, "tool": "nsys"})
    out = tmp_path / "results"
    result = invoke("-c", config, "-o", out, *(["--dry-run"] if dry_run else []))
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: profiling.tool: nsys: Nsight Systems (nsys) was not found on PATH or in "
        "TORCHSCALE_NSYS; install it (docs/profiling.md) or use profiling.tool: torch"
    ]
    assert "Running" not in result.output
    assert not out.exists()


def test_auto_profiling_tool_needs_no_nsys(tmp_path: Path, no_nsys: None) -> None:
    config = write_config(tmp_path, profiling={"enabled": True, "tool": "auto"})
    result = invoke("-c", config, "-o", tmp_path / "results", "--dry-run")
    assert result.exit_code == 0, result.output


SLURM = {
    "launcher": {
        "kind": "slurm",
        "nodes": [1, 2],
        "slurm": {"time_limit": "10", "signal_grace_s": 60},
    }
}


def test_a_slurm_dry_run_off_the_cluster_writes_the_scripts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the dry run failed in `sbatch`'s absence (then in scontrol): a laptop could
    not review the scripts it would submit."""
    config = write_config(tmp_path, **SLURM)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out = tmp_path / "results"
    result = invoke("-c", config, "-o", out, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "the partition's node limits were not checked" in result.output
    assert "missing: sbatch, squeue, scontrol, scancel" in " ".join(result.output.split())
    scripts = sorted((out / "truth" / "slurm").glob("*/job.sbatch"))
    assert len(scripts) == 2  # one allocation per node count
    assert "sbatch script written" in result.output
    assert "dry run: nothing submitted" in result.output


def test_a_real_slurm_run_off_the_cluster_still_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(tmp_path, **SLURM)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out = tmp_path / "results"
    result = invoke("-c", config, "-o", out)
    assert result.exit_code == 2, result.output
    assert "needs Slurm's client commands on PATH" in result.output
    assert not out.exists()


def test_a_comm_dry_run_probes_the_output_like_the_run(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    args = ["comm", "--device", "cpu", "--dry-run", "-o", str(blocker / "r")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "cannot write results to" in result.output and "(ENOTDIR)" in result.output


def test_a_dry_run_says_which_batch_auto_chose(tmp_path: Path) -> None:
    """Issue 27: a config without batch_sizes runs `auto`; the dry run names the batch it
    chose and why, before the cells; a CUDA config on a node without a GPU cannot size one
    and says so in one line."""
    data = {key: value for key, value in TINY.items() if key != "batch_sizes"}
    path = tmp_path / "auto.yaml"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = invoke("-c", path, "-o", tmp_path / "results", "--dry-run")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines[0] == (
        "note: tiny-mlp fp32: batch 8 (batch_sizes auto on CPU: host memory does not limit a "
        "CPU benchmark)"
    )
    assert lines[1].startswith("1. tiny-mlp__b8__w1__fp32__ddp__")
    path.write_text(json.dumps({**data, "device": "cuda"}), encoding="utf-8")
    failed = invoke("-c", path, "-o", tmp_path / "results", "--dry-run")
    assert failed.exit_code == 2 and "Traceback" not in failed.output
    assert [line for line in failed.output.splitlines() if line.startswith("error:")] == [
        "error: batch_sizes: auto sizes each batch from the GPU's memory, which is unknown "
        "here (no CUDA GPU here); list batch_sizes (torchscale config init --hardware NAME "
        "sizes them for a named node)"
    ]
