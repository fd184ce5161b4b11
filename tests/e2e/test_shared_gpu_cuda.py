"""Two ranks on each GPU (launcher.ranks_per_gpu) for real, on CUDA (skipped where none is
visible): a DDP cell of twice the node's GPUs runs end to end over gloo on CUDA tensors, its
ranks time their steps with CUDA events, sample their GPU, and the diagnosis judges them; the
result carries the mark and the terminal says it. The plan, launch and comparison rules are
tested on CPU in tests/orchestration/test_shared_gpu.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.shared_gpu import SHARED_GPU
from torchscale.interfaces.cli.app import app

pytestmark = pytest.mark.gpu


def test_a_two_rank_ddp_cell_on_one_gpu_runs_and_is_marked(tmp_path: Path) -> None:
    import torch

    gpus = torch.cuda.device_count()
    config = tmp_path / "shared.yaml"
    config.write_text(
        json.dumps(
            {
                "experiment_name": "shared",
                "device": "cuda",
                "models": ["tiny-mlp"],
                "batch_sizes": [32],
                "gpu_counts": [2 * gpus],
                "training": {"strategy": ["ddp"]},
                "measurement": {"warmup_steps": 3, "steps": 20, "repeats": 2},
                "launcher": {"ranks_per_gpu": 2, "cell_timeout_s": 300},
            }
        )
    )
    run = CliRunner().invoke(app, ["benchmark", "-c", str(config), "-o", str(tmp_path)])
    (path,) = (tmp_path / "shared" / "cells").glob("*.json")
    result = CellResult.model_validate_json(path.read_text())
    assert result.status.value == "ok", run.output
    cell = result.cell
    assert (cell.device, cell.backend, cell.ranks_per_gpu) == ("cuda", "gloo", 2)
    assert SHARED_GPU in [w.finding.code for w in result.warnings if w.finding]
    assert result.step_time is not None and result.throughput is not None
    assert result.diagnosis is not None and result.diagnosis.straggler is not None
    telemetry = result.telemetry
    assert telemetry is not None and len(telemetry.ranks) == 2 * gpus
    uuids = [r.gpu_uuid for r in sorted(telemetry.ranks, key=lambda r: r.rank)]
    assert all(u is not None for u in uuids) and uuids[0::2] == uuids[1::2]  # pairs share
    # the other rank on its GPU is the cell's own, not another user's process
    assert all(h.other_gpu_processes in (0, None) for h in telemetry.hosts or [])
    assert "2 ranks per GPU" in run.output
