"""What the first H100 run wrote, converted to the current versions (tests/fixtures/h100_first_run,
a copy of ../shared/gpu/h100-2026-11-26 made by tools/convert_results.py), read by the tests that
replay it: a rule about NVML, CUDA timing, compile or profiler overhead is tested on a real GPU's
outputs, since CI has no GPU."""

from __future__ import annotations

from pathlib import Path

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.offline.results.documents import read_cell as read_cell_document

H100_DIR = Path(__file__).resolve().parent / "fixtures" / "h100_first_run"
DEFAULT_SWEEP = H100_DIR / "default-sweep"
WORKLOAD = H100_DIR / "workload"


def h100_cell(folder: Path, stem: str) -> Path:
    """The one cell file under `folder`/cells whose name starts with `stem`."""
    (path,) = sorted((folder / "cells").glob(f"{stem}*.json"))
    return path


def read_cell(path: Path) -> CellResult:
    """One cell file as torchscale reads it today."""
    read = read_cell_document(path)
    assert read.problem is None and read.doc is not None, read.problem
    return read.doc


def read_cells(folder: Path) -> list[CellResult]:
    """Every cell file under `folder`/cells, in name order."""
    return [read_cell(path) for path in sorted((folder / "cells").glob("*.json"))]
