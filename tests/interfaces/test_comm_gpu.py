"""`torchscale comm` on a real CUDA GPU with NCCL (skipped where none is visible): the run
checks clean, the one-rank caveat is recorded, and the gate refuses to judge one rank."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.comm_result import CommResult
from torchscale.interfaces.cli.app import app

pytestmark = pytest.mark.gpu


def test_nccl_sweep_on_one_gpu_checks_clean(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "comm",
            "--device",
            "cuda",
            "--gpus",
            "1",
            "--ops",
            "all_reduce,all_gather,broadcast",
            "--min-bytes",
            "1K",
            "--max-bytes",
            "64M",
            "--step-factor",
            "16",
            "--dtype",
            "bfloat16",
            "--min-busbw",
            "1",
            "-o",
            str(tmp_path),
        ],
    )
    (path,) = (tmp_path / "standalone" / "comm").glob("*.json")
    stored = CommResult.model_validate_json(path.read_text())
    assert stored.backend == "nccl" and stored.device == "cuda" and stored.world_size == 1
    assert all(r.status == "ok" and r.wrong == 0 for r in stored.rows), result.output
    assert all(r.time_us and r.time_us > 0 for r in stored.rows)
    assert Finding(code="comm.one_rank") in stored.warnings
    assert stored.gate == "unavailable"
    assert result.exit_code == 1  # a gate that cannot judge never passes
