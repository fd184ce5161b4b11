"""The results directory of one experiment, read and written on the host and by rank 0: the
layout of `layout.ResultLayout` with the files' I/O. Every file is written atomically.

A write that fails (disk full, quota, permissions) raises ResultsError naming the path; what
was written before stays intact, and `--resume` continues once the cause is fixed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from torchscale.contracts.atomic import write_text_atomic
from torchscale.contracts.errors import OutputDirError, ResultsError, describe_os_error
from torchscale.offline.results.directory_layout import ResultLayout

if TYPE_CHECKING:  # the documents' schemas: imported where a document is read or written
    from torchscale.contracts.schema.cell_result import CellResult
    from torchscale.contracts.schema.sweep_state import SweepState

log = logging.getLogger(__name__)
PROBE_NAME = ".torchscale-write-probe"


class _Named(Protocol):
    @property
    def id(self) -> str: ...


class CellSpec(Protocol):
    """What `write_spec` needs of a rank's spec (`worker.spec.WorkerSpec`): its cell's id and
    its JSON. A protocol, so the store (offline side) need not import the rank side."""

    @property
    def cell(self) -> _Named: ...

    def model_dump_json(self, *, indent: int | None = None) -> str: ...


def check_output_dir(root: Path, *, keep: bool = True, what: str = "results") -> None:
    """Create `root` and prove it is writable (write and remove a probe file) before anything
    runs, so a bad -o fails in one line instead of after the first cell. `keep=False` (a dry
    run) removes again the directories the probe created: the answer is the real run's, and
    nothing is left behind."""
    created = [p for p in (root, *root.parents) if not p.exists()]
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / PROBE_NAME
        with probe.open("w", encoding="utf-8") as handle:
            handle.write("probe\n")
            handle.flush()
            os.fsync(handle.fileno())
        probe.unlink()
    except OSError as exc:
        where = exc.filename or root
        raise OutputDirError(
            f"cannot write {what} to '{root}': {where}: {describe_os_error(exc)}"
        ) from None
    finally:  # a dry run: the directories the probe created, deepest first, while empty
        for directory in [] if keep else created:  # root first, then its parents
            try:
                directory.rmdir()
            except OSError:
                break


def _read_if_there(path: Path) -> CellResult | None:
    """The cell result at `path`; None when absent or unreadable, which is logged (one of
    another schema version stops the command: `VersionError`)."""
    if not path.exists():
        return None
    # the readers' module imports every document's schema: only when there is one to read
    from torchscale.offline.results.documents import read_cell

    read = read_cell(path)
    if read.problem is not None:
        log.warning("ignoring %s: %s", path, read.problem)
    return read.doc


class ResultStore(ResultLayout[Path]):
    @classmethod
    def for_experiment(cls, output_dir: Path, experiment: str) -> ResultStore:
        return cls(output_dir / experiment)

    def write_text(self, path: Path, text: str) -> Path:
        """Atomic write; an OSError becomes one ResultsError line naming the path."""
        try:
            return write_text_atomic(path, text)
        except OSError as exc:
            raise ResultsError(f"cannot write {path}: {describe_os_error(exc)}") from None

    def write_config(self, config_yaml: str) -> None:
        """The experiment's resolved config (`BenchConfig.as_yaml()`) as config.yaml."""
        self.write_text(self.config_path, config_yaml)

    def write_environment(self, environment: dict[str, Any]) -> None:
        self.write_text(self.environment_path, json.dumps(environment, indent=2))

    def write_sweep_state(self, state: SweepState) -> None:
        self.write_text(self.sweep_state_path, state.model_dump_json(indent=2))

    def write_cell(self, result: CellResult) -> Path:
        return self.write_text(self.cell_path(result.cell_id), result.model_dump_json(indent=2))

    def write_spec(self, spec: CellSpec) -> Path:
        """A rank's spec (`worker.spec.WorkerSpec`, or any model that names its cell) as JSON
        beside the cell: the store knows the layout, not what a rank reads."""
        return self.write_text(self.spec_path(spec.cell.id), spec.model_dump_json(indent=2))

    def prepare_cell(self, cell_id: str) -> None:
        """Before a launch: make the log directory and drop a stale attempt (it must not pass
        as new). The cell's earlier result in cells/ stays until this launch replaces it."""
        try:
            self.log_dir(cell_id).mkdir(parents=True, exist_ok=True)
            self.attempt_result_path(cell_id).unlink(missing_ok=True)
            self.attempt_steps_path(cell_id).unlink(missing_ok=True)
        except OSError as exc:
            raise ResultsError(
                f"cannot prepare {self.log_dir(cell_id)}: {describe_os_error(exc)}"
            ) from None

    def read_attempt(self, cell_id: str) -> CellResult | None:
        """The result this launch's rank 0 wrote, or None."""
        return _read_if_there(self.attempt_result_path(cell_id))

    def keep_attempt(self, result: CellResult) -> Path:
        """A finished launch's result as the host completed it, written once into cells/; its
        step records moved into steps/ and rank 0's own copy dropped. When that write fails
        (disk full), rank 0's result is moved into cells/ as it was (ResultsError still
        raised): a rename needs no free space, so a full disk cannot lose a measurement."""
        cell_id = result.cell_id
        self._move_steps(cell_id)
        try:
            path = self.write_cell(result)
        except ResultsError:
            with contextlib.suppress(ResultsError):
                self.commit_attempt(cell_id)
            raise
        # a copy left by a failed unlink is stale: the next launch of the cell removes it
        with contextlib.suppress(OSError):
            self.attempt_result_path(cell_id).unlink(missing_ok=True)
        return path

    def _move_steps(self, cell_id: str) -> None:
        self._move_in(cell_id, self.attempt_steps_path(cell_id), self.steps_path(cell_id), True)

    def _move_in(self, cell_id: str, source: Path, target: Path, if_there: bool = False) -> None:
        """Rename `source` to `target` (its directory made); an OSError is a ResultsError."""
        try:
            if not if_there or source.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                source.replace(target)
        except OSError as exc:
            raise ResultsError(
                f"cannot move the result of {cell_id} into {self.root}: {describe_os_error(exc)}"
            ) from None

    def commit_attempt(self, cell_id: str) -> None:
        """Move a finished launch's step records and result into steps/ and cells/ as rank 0
        wrote them. Renames need no free space, so a full disk cannot lose a result rank 0
        managed to write."""
        self._move_steps(cell_id)
        self._move_in(cell_id, self.attempt_result_path(cell_id), self.cell_path(cell_id))

    def read_cell(self, cell_id: str) -> CellResult | None:
        """The stored result of a cell, or None when absent or unreadable (then it reruns)."""
        return _read_if_there(self.cell_path(cell_id))

    def finished_ok(self, cell_id: str, definition_sha256: str) -> CellResult | None:
        """The stored result when it is `ok` for exactly this cell definition (for --resume)."""
        result = self.read_cell(cell_id)
        if result and result.status == "ok" and result.cell.definition_sha256 == definition_sha256:
            return result
        return None
