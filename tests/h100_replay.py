"""What the first H100 run wrote (../shared/gpu/h100-2026-11-26/), read in place by the tests
that replay it: a rule about NVML, CUDA timing, compile or profiler overhead is tested on a real
GPU's outputs, since CI has no GPU. Tests skip when the folder is not beside the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.offline.results.versions import read_cell_result

H100_DIR = Path(__file__).resolve().parents[2] / "shared" / "gpu" / "h100-2026-11-26"
DEFAULT_SWEEP = H100_DIR / "default-sweep"
WORKLOAD = H100_DIR / "workload"

needs_h100 = pytest.mark.skipif(
    not H100_DIR.is_dir(), reason="../shared/gpu/h100-2026-11-26 is not beside the checkout"
)


def h100_cell(folder: Path, stem: str) -> Path:
    """The one cell file under `folder`/cells whose name starts with `stem`."""
    (path,) = sorted((folder / "cells").glob(f"{stem}*.json"))
    return path


def read_cell(path: Path) -> CellResult:
    """One cell file as torchscale reads it today (upgraded to the current schema)."""
    read = read_cell_result(path)
    assert read.problem is None and read.result is not None, read.problem
    return read.result


def read_cells(folder: Path) -> list[CellResult]:
    """Every cell file under `folder`/cells, in name order."""
    return [read_cell(path) for path in sorted((folder / "cells").glob("*.json"))]
