"""One reader per stored document kind: cell result, profile analysis, comm run, forecast (and
its score), max-batch result, validate report. The loader, the report and `predict` read
through here only, so a file is refused with the same one-line reason wherever it is read.

Every reader returns a `Read`: the document upgraded to the current schema, or why it cannot be
used (unreadable, not JSON, another kind, a bad or newer version, invalid); none raises for a
bad file. Kind names, versions and upgrades come from the schemas (contracts/schema/); cells
and profile analyses have their own upgrade chains (versions.py, profile_versions.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.comm_result import COMM_KIND, COMM_SCHEMA_VERSION, CommResult
from torchscale.contracts.schema.forecast import (
    FORECAST_KIND,
    FORECAST_SCHEMA_VERSION,
    FORECAST_SCORE_KIND,
    FORECAST_SCORE_SCHEMA_VERSION,
    Forecast,
    ForecastScore,
)
from torchscale.contracts.schema.max_batch import (
    MAX_BATCH_KIND,
    MAX_BATCH_SCHEMA_VERSION,
    MaxBatchResult,
)
from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
from torchscale.contracts.schema.sweep_state import SCHEMA_VERSION as SWEEP_SCHEMA_VERSION
from torchscale.contracts.schema.sweep_state import SWEEP_KIND, SweepState
from torchscale.contracts.schema.validate_report import SCHEMA_VERSION as VALIDATE_SCHEMA_VERSION
from torchscale.contracts.schema.validate_report import VALIDATE_KIND, ValidateReport
from torchscale.contracts.versioned import read_json, validated, version_problem
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.offline.results.upgrades.forecast_words import forecast_v1_to_v2
from torchscale.offline.results.versions import CELL_KIND, read_cell_result

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Read(Generic[T]):
    """One stored file as read: its document (current schema) or why it cannot be used, and
    the schema version the file was written in (None when that is unknown)."""

    path: Path
    doc: T | None
    problem: str | None = None
    version: int | None = None


@dataclass(frozen=True)
class Kind(Generic[M]):
    """A stored document kind whose model reads its own older versions: the `kind` name its
    files carry, the words for it in a reason, and the newest version this torchscale reads."""

    model: type[M]
    name: str
    what: str
    version: int
    # a dict of an older version -> the current one, where the model cannot read it as it is
    upgrade: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def read(self, path: Path) -> Read[M]:
        data, problem = read_json(path)
        if problem is None:
            problem = version_problem(data, self.name, self.what, self.version)
        if problem is not None:
            return Read(path, None, problem)
        version = data["schema_version"]
        if self.upgrade is not None and version < self.version:
            data = self.upgrade(data)
        model, problem = validated(self.model, data, self.what)
        return Read(path, model, problem, version)


COMM = Kind(CommResult, COMM_KIND, "comm result", COMM_SCHEMA_VERSION)
FORECAST = Kind(Forecast, FORECAST_KIND, "forecast", FORECAST_SCHEMA_VERSION, forecast_v1_to_v2)
FORECAST_SCORE = Kind(
    ForecastScore, FORECAST_SCORE_KIND, "forecast score", FORECAST_SCORE_SCHEMA_VERSION
)
MAX_BATCH = Kind(MaxBatchResult, MAX_BATCH_KIND, "max-batch result", MAX_BATCH_SCHEMA_VERSION)
VALIDATE = Kind(ValidateReport, VALIDATE_KIND, "validate report", VALIDATE_SCHEMA_VERSION)
SWEEP = Kind(SweepState, SWEEP_KIND, "sweep state", SWEEP_SCHEMA_VERSION)

read_comm = COMM.read
read_forecast = FORECAST.read
read_forecast_score = FORECAST_SCORE.read
read_max_batch = MAX_BATCH.read
read_validate_report = VALIDATE.read
read_sweep_state = SWEEP.read


def read_cell(path: Path) -> Read[CellResult]:
    """One cells/*.json or profile/<run>/result.json, of any schema version."""
    read = read_cell_result(path)
    return Read(path, read.result, read.problem, read.version)


def read_profile_analysis(path: Path, result: CellResult | None = None) -> Read[ProfileAnalysis]:
    """One profile/<run>/analysis.json; with the profiled run's `result`, what an older
    analysis lacks is taken from it (imported here: it needs pandas, which a reader of the
    other kinds need not load)."""
    from torchscale.offline.results.profile_versions import read_analysis

    analysis, problem = read_analysis(path, result)
    return Read(path, analysis, problem)


# every stored kind's one reader, by the `kind` its files carry
READERS: dict[str, Callable[[Path], Read[Any]]] = {
    CELL_KIND: read_cell,
    ProfileAnalysis.model_fields["kind"].default: read_profile_analysis,
    **{k.name: k.read for k in (COMM, FORECAST, FORECAST_SCORE, MAX_BATCH, VALIDATE, SWEEP)},
}


def read_folder(
    folder: Path, read: Callable[[Path], Read[T]]
) -> tuple[list[T], list[tuple[Path, str]]]:
    """The documents of `folder`'s visible *.json files (by name) that `read` can use, and the
    files it cannot, with why; a folder that cannot be listed holds none."""
    try:
        paths = sorted(p for p in folder.glob("*.json") if not p.name.startswith("."))
    except OSError:
        paths = []
    docs: list[T] = []
    skipped: list[tuple[Path, str]] = []
    for path in paths:
        got = read(path)
        if got.doc is None:
            skipped.append((path, got.problem or "unreadable"))
        else:
            docs.append(got.doc)
    return docs, skipped


def read_cells(
    layout: ResultLayout[Path],
) -> tuple[list[CellResult], dict[str, int], list[tuple[Path, str]]]:
    """Every readable cell result of cells/ (upgraded to the current schema), the version each
    file was written in (by cell id), and the files that could not be used, with why."""
    results: list[CellResult] = []
    versions: dict[str, int] = {}
    skipped: list[tuple[Path, str]] = []
    for file in sorted(layout.cells_dir.glob("*.json")):
        read = read_cell(file)
        if read.doc is None or read.version is None:
            skipped.append((file, read.problem or "unreadable"))
            continue
        results.append(read.doc)
        versions[read.doc.cell.id] = read.version
    return results, versions, skipped
