"""A cell's result file is written once: rank 0 writes its part in the launch's log directory,
the host completes it (the launch, its wall time, the shutdown's warnings, the price) and
writes cells/<cell>.json, once. A write that fails (disk full) still keeps what rank 0
measured: its own result is moved into cells/ (a rename needs no free space).

The launch is replaced by one that writes what rank 0 writes (no torchrun): what is held here
is the host's handling of the files. benchmarks/benchmark_route.py counts the same writes over
a real run, in every process."""

from __future__ import annotations

import errno
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import torchscale.contracts.atomic as atomic
import torchscale.orchestration.launch.attempt as attempt
from torchscale.contracts.cell import Status
from torchscale.contracts.errors import ResultsError
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.launch.process import ProcessOutcome
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.orchestration.plan.planned import PlannedCell
from torchscale.orchestration.sweep import run_cell, run_sweep

TINY: dict[str, Any] = {
    "experiment_name": "once",
    "models": ["tiny-mlp"],
    "batch_sizes": [4],
    "gpu_counts": [1],
    "device": "cpu",
    "measurement": {"warmup_steps": 1, "steps": 3, "repeats": 1},
}
STEPS = '{"rank": 0}\n'
RANK_0 = CellWarning.of(
    "other", "warning.exit_after_result", {"returncode": 1, "log_dir": "rank 0"}
)


def _plan(tmp_path: Path) -> Any:
    from torchscale.orchestration.config.loader import load_config

    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(TINY), encoding="utf-8")
    return build_plan(load_config(path, []), Machine(gpu_count=0, cpu_cores=2))


def _rank_zero_writes(store: ResultStore, planned: PlannedCell, then: Any = None) -> Any:
    """A launch that writes what rank 0 writes (steps, then its result), then calls `then`."""

    def launch(command: Any, timeout_s: float, finished: Any = None) -> ProcessOutcome:
        cell_id = planned.cell.id
        atomic.write_text_atomic(store.attempt_steps_path(cell_id), STEPS)
        mine = CellResult(cell=planned.cell, status=Status.OK, warnings=[RANK_0])
        atomic.write_text_atomic(store.attempt_result_path(cell_id), mine.model_dump_json())
        if then is not None:
            then()
        return ProcessOutcome(0, False, 1.5, command.log_path)

    return launch


def _count_writes(monkeypatch: pytest.MonkeyPatch) -> Counter[Path]:
    """Every atomic write and every rename onto a file (not the atomic writer's own), by path."""
    writes: Counter[Path] = Counter()
    inside = []
    write = atomic.write_bytes_atomic
    replace = os.replace

    def counted_write(path: str | Path, data: bytes) -> Path:
        inside.append(True)
        try:
            written = write(path, data)
        finally:
            inside.pop()
        writes[Path(written)] += 1
        return written

    def counted_replace(src: Any, dst: Any, **kwargs: Any) -> None:
        replace(src, dst, **kwargs)
        if not inside:
            writes[Path(dst)] += 1

    monkeypatch.setattr(atomic, "write_bytes_atomic", counted_write)
    monkeypatch.setattr(os, "replace", counted_replace)
    return writes


def test_the_result_file_is_written_once_with_the_hosts_additions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = _plan(tmp_path)
    (planned,) = plan.cells
    store = ResultStore(tmp_path / "out")
    monkeypatch.setattr(attempt, "run_launch", _rank_zero_writes(store, planned))
    writes = _count_writes(monkeypatch)

    outcome = run_sweep(plan, store, {})

    cell_id = planned.cell.id
    (returned,) = outcome.results
    assert writes[store.cell_path(cell_id)] == 1, writes
    assert writes[store.attempt_result_path(cell_id)] == 1  # rank 0's part, once
    assert writes[store.steps_path(cell_id)] == 1  # moved, not rewritten
    # the sweep's state is a progress file: "running" as it starts, "complete" as it ends
    assert writes.pop(store.sweep_state_path) == 2
    assert max(writes.values()) == 1, writes  # no other file of the experiment written twice
    stored = store.read_cell(cell_id)
    assert stored == returned
    assert stored.warnings == [RANK_0] and stored.launch["argv"] and stored.wall_s == 1.5
    assert not store.attempt_result_path(cell_id).exists()
    assert store.steps_path(cell_id).read_text(encoding="utf-8") == STEPS


def test_a_failed_write_keeps_what_rank_0_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills after rank 0 wrote: the host's write fails with one ResultsError, and
    cells/ holds rank 0's result as it wrote it."""
    plan = _plan(tmp_path)
    (planned,) = plan.cells
    store = ResultStore(tmp_path / "out")

    def disk_full() -> None:
        def full(fd: int) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(os, "fsync", full)  # the atomic writer's

    monkeypatch.setattr(attempt, "run_launch", _rank_zero_writes(store, planned, disk_full))
    with pytest.raises(ResultsError, match="No space left on device"):
        run_cell(planned, store, {})

    cell_id = planned.cell.id
    kept = store.read_cell(cell_id)
    assert kept is not None and kept.status is Status.OK
    assert kept.warnings == [RANK_0] and not kept.launch  # rank 0's, without the host's part
    assert not store.attempt_result_path(cell_id).exists()
    assert store.steps_path(cell_id).read_text(encoding="utf-8") == STEPS
