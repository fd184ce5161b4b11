"""The results directory as a source of faults: one that cannot be created or written fails
before anything runs (one line, exit 2); a disk that fills during a sweep stops it with one
line naming the path, keeps every result written before, and --resume finishes the job once
space is back.

The full-disk test uses a real, tiny tmpfs when this process may mount one (root on Linux),
else ENOSPC is raised at the write call itself.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

import torchscale.contracts.atomic
from torchscale.contracts.cell import Status
from torchscale.contracts.errors import OutputDirError, ResultsError
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.interfaces.cli.app import app
from torchscale.offline.results.store import ResultStore, check_output_dir

REPO_ROOT = Path(__file__).resolve().parents[2]
# the warning a finished attempt carries into cells/
NEW = CellWarning.of("other", "warning.exit_after_result", {"returncode": 1, "log_dir": "new"})
TINY: dict[str, Any] = {
    "models": ["tiny-mlp"],
    "batch_sizes": [4, 8],
    "gpu_counts": [1],
    "device": "cpu",
    "measurement": {"warmup_steps": 1, "steps": 3, "repeats": 1},
    "launcher": {"cell_timeout_s": 120, "omp_num_threads": 1},
}


def write_config(path: Path, name: str) -> Path:
    path.write_text(json.dumps({"experiment_name": name, **TINY}), encoding="utf-8")
    return path


def invoke(*args: str | Path) -> Any:
    return CliRunner().invoke(app, ["benchmark", *map(str, args)])


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


@contextlib.contextmanager
def tmpfs(path: Path, size: str, read_only: bool = False) -> Iterator[Path]:
    """A real tmpfs at `path`, or skip when this process may not mount one."""
    path.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (",ro" if read_only else "")
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=10, check=False)


# ------------------------------------------------------------------ unusable output directory


def test_output_under_a_file_fails_before_anything_runs(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    cfg = write_config(tmp_path / "c.yaml", "exp")
    result = invoke("-c", cfg, "-o", blocker / "results")
    assert result.exit_code == 2, result.output
    (line,) = error_lines(result.output)
    assert "cannot write results to" in line
    assert "Not a directory (ENOTDIR)" in line
    assert "Traceback" not in result.output
    assert "Running" not in result.output


@pytest.mark.slow  # starts a child process
def test_read_only_mount_fails_before_anything_runs(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", "64k", read_only=True) as mount:
        cfg = write_config(tmp_path / "c.yaml", "exp")
        result = invoke("-c", cfg, "-o", mount / "results")
        assert result.exit_code == 2, result.output
        (line,) = error_lines(result.output)
        assert "Read-only file system (EROFS)" in line
        assert "Traceback" not in result.output


def test_a_read_only_filesystem_fails_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(in-process: the refusal a read-only mount gives is raised where the folder is made)"""
    mount = tmp_path / "ro"
    real_mkdir = Path.mkdir

    def refuse(self: Path, *args: Any, **kwargs: Any) -> None:
        if self.is_relative_to(mount):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", refuse)
    cfg = write_config(tmp_path / "c.yaml", "exp")
    result = invoke("-c", cfg, "-o", mount / "results")
    assert result.exit_code == 2, result.output
    (line,) = error_lines(result.output)
    assert f"{os.strerror(errno.EROFS)} (EROFS)" in line and str(mount / "results") in line
    assert "Traceback" not in result.output
    assert "Running" not in result.output


def test_no_permission_fails_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(root ignores mode bits, so the refusal is raised where the probe file is opened)"""
    real_open = Path.open

    def deny(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name == ".torchscale-write-probe":
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", deny)
    with pytest.raises(OutputDirError, match=r"Permission denied \(EACCES\)"):
        check_output_dir(tmp_path / "results")


def test_dry_run_probes_the_output_like_the_run(tmp_path: Path) -> None:
    """--dry-run tells the real run's truth: an output it cannot write is the same one line,
    exit 2."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    cfg = write_config(tmp_path / "c.yaml", "exp")
    result = invoke("-c", cfg, "-o", blocker / "results", "--dry-run")
    assert result.exit_code == 2, result.output
    (line,) = error_lines(result.output)
    assert "cannot write results to" in line and "(ENOTDIR)" in line


def test_dry_run_leaves_no_directory_behind(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "c.yaml", "exp")
    result = invoke("-c", cfg, "-o", tmp_path / "new" / "results", "--dry-run")
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "new").exists()


def test_probe_leaves_nothing_behind(tmp_path: Path) -> None:
    check_output_dir(tmp_path / "new" / "dir")
    assert list((tmp_path / "new" / "dir").iterdir()) == []


# --------------------------------------------------------------------------- disk full


def test_a_failed_write_is_one_resultserror_naming_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    store = ResultStore(tmp_path)
    result = CellResult.model_validate(
        {
            "cell": {
                "id": "c",
                "definition_sha256": "a" * 64,
                "model": "tiny-mlp",
                "label": "tiny-mlp",
                "batch_size": 8,
                "world_size": 1,
                "precision": "fp32",
                "strategy": "ddp",
                "device": "cpu",
                "backend": "gloo",
            },
            "status": "ok",
        }
    )
    store.write_cell(result)
    before = store.cell_path("c").read_bytes()
    monkeypatch.setattr(torchscale.contracts.atomic.os, "fsync", full)
    with pytest.raises(ResultsError) as caught:
        store.write_cell(result.model_copy(update={"status": Status.FAILED}))
    message = str(caught.value)
    assert str(store.cell_path("c")) in message
    assert "No space left on device (ENOSPC)" in message
    assert store.cell_path("c").read_bytes() == before  # the old result is intact
    assert [p.name for p in (tmp_path / "cells").iterdir()] == ["c.json"]  # no temp file left


def _wait_for(predicate: Any, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _fill(directory: Path) -> Path:
    """Write zeros into `directory` until the filesystem is full."""
    filler = directory / "filler"
    with contextlib.suppress(OSError), filler.open("wb") as handle:
        block = b"\0" * 4096
        while True:
            handle.write(block)
            handle.flush()
    return filler


@pytest.mark.slow  # ~40-70 s: a sweep on a small filesystem filled mid-run, then resumed
def test_disk_full_mid_sweep_stops_cleanly_and_resume_finishes(tmp_path: Path) -> None:
    """A real tmpfs fills after the first cell: the sweep stops with one line naming the path,
    exit 1, the first cell's result intact; with space back, --resume reuses it and runs the
    second."""
    with tmpfs(tmp_path / "small", "4m") as mount:
        out = mount / "results"
        exp = out / "full"
        cfg = write_config(tmp_path / "c.yaml", "full")
        argv = [sys.executable, "-m", "torchscale", "benchmark", "-c", str(cfg), "-o", str(out)]
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        proc = subprocess.Popen(
            argv,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            first_done = _wait_for(lambda: len(list((exp / "cells").glob("*.json"))) >= 1, 120)
            assert first_done, "the first cell never finished"
            filler = _fill(mount)
            output, _ = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
        assert proc.returncode == 1, output
        assert "Traceback" not in output
        errors = error_lines(output)
        assert len(errors) == 1, output
        assert "No space left on device (ENOSPC)" in errors[0]
        assert str(exp) in errors[0]
        print(errors[0])  # shown with -s: the line a user reads
        first_id = sorted(p.stem for p in (exp / "cells").glob("*.json"))[0]
        first = ResultStore(exp).read_cell(first_id)
        assert first is not None and first.status is Status.OK  # intact and readable

        filler.unlink()  # space is back
        result = subprocess.run(
            [*argv, "--resume"], env=env, capture_output=True, text=True, timeout=180, check=False
        )
        assert result.returncode == 0, result.stdout + result.stderr
        printed = " ".join((result.stdout + result.stderr).split())
        # the kept cell's row in the live table says it was not rerun
        assert printed.count("ok in a previous run (--resume), not rerun") == 1
        summary = pd.read_csv(exp / "summary.csv")
        assert list(summary["status"]) == ["ok", "ok"]


# ------------------------------------------------------------- a rerun never loses a result


def _one_cell_plan(tmp_path: Path) -> Any:
    from torchscale.orchestration.config.loader import load_config
    from torchscale.orchestration.plan.build import build_plan
    from torchscale.orchestration.plan.nodes import Machine

    config = load_config(write_config(tmp_path / "c.yaml", "rerun"), ["batch_sizes=[4]"])
    return build_plan(config, Machine(gpu_count=0, cpu_cores=2))


def test_an_interrupted_rerun_keeps_the_earlier_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rerunning a cell (no --resume) that is stopped mid-launch must leave its earlier
    result in cells/ as it was: the new launch writes elsewhere until it is over."""
    import torchscale.orchestration.launch.attempt as attempt
    import torchscale.orchestration.sweep as sweep

    plan = _one_cell_plan(tmp_path)
    (planned,) = plan.cells
    store = ResultStore(tmp_path / "out")
    earlier = CellResult(
        cell=planned.cell,
        status=Status.OK,
        warnings=[
            CellWarning.of(
                "other", "warning.exit_after_result", {"returncode": 1, "log_dir": "earlier"}
            )
        ],
    )
    store.write_cell(earlier)
    before = store.cell_path(planned.cell.id).read_bytes()
    stale = store.attempt_result_path(planned.cell.id)
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text(earlier.model_dump_json(), encoding="utf-8")  # a stale attempt

    launched: list[Path] = []

    def interrupted(command: Any, timeout_s: float, finished: Any = None) -> Any:
        launched.append(command.log_dir)
        assert not stale.exists(), "a stale attempt must not pass as this launch's result"
        raise KeyboardInterrupt

    monkeypatch.setattr(attempt, "run_launch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(plan, store, {})
    assert launched
    assert store.cell_path(planned.cell.id).read_bytes() == before


def test_a_finished_attempt_is_moved_into_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torchscale.orchestration.launch.attempt as attempt
    import torchscale.orchestration.sweep as sweep
    from torchscale.orchestration.launch.process import ProcessOutcome

    plan = _one_cell_plan(tmp_path)
    (planned,) = plan.cells
    store = ResultStore(tmp_path / "out")

    def finished(command: Any, timeout_s: float, done: Any = None) -> ProcessOutcome:
        cell_id = planned.cell.id
        store.attempt_steps_path(cell_id).write_text('{"rank": 0}\n', encoding="utf-8")
        new = CellResult(cell=planned.cell, status=Status.OK, warnings=[NEW])
        store.attempt_result_path(cell_id).write_text(new.model_dump_json(), encoding="utf-8")
        return ProcessOutcome(0, False, 1.0, command.log_path)

    monkeypatch.setattr(attempt, "run_launch", finished)
    outcome = sweep.run_sweep(plan, store, {})
    (result,) = outcome.results
    assert result.warnings == [NEW]
    stored = store.read_cell(planned.cell.id)
    assert stored is not None and stored.warnings == [NEW] and stored.launch
    assert store.steps_path(planned.cell.id).read_text(encoding="utf-8") == '{"rank": 0}\n'
    assert not store.attempt_result_path(planned.cell.id).exists()
    assert not store.attempt_steps_path(planned.cell.id).exists()
