"""One reader per stored document kind: cell result, profile analysis, comm run, forecast (and
its score), max-batch result, validate report, sweep state. The loader, the report and
`predict` read through here only, so a file is refused with the same one-line reason wherever
it is read.

Every reader returns a `Read`: the document, or why it cannot be used (unreadable, not JSON,
another kind, a bad version, invalid); none raises for a bad file. A file of another schema
version stops the read (`contracts.versioned.VersionError`: convert the folder, or upgrade
torchscale), except one version behind a kind whose change shipped its upgrade
(`upgrade.UPGRADES`). Kind names and versions come from the schemas (contracts/schema/).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from torchscale.contracts.schema.cell_result import CELL_KIND, RESULT_SCHEMA_VERSION, CellResult
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
from torchscale.contracts.schema.profile_analysis import (
    ANALYSIS_KIND,
    ANALYSIS_SCHEMA_VERSION,
    ProfileAnalysis,
)
from torchscale.contracts.schema.sweep_state import SCHEMA_VERSION as SWEEP_SCHEMA_VERSION
from torchscale.contracts.schema.sweep_state import SWEEP_KIND, SweepState
from torchscale.contracts.schema.validate_report import SCHEMA_VERSION as VALIDATE_SCHEMA_VERSION
from torchscale.contracts.schema.validate_report import VALIDATE_KIND, ValidateReport
from torchscale.contracts.versioned import read_json, validated, version_problem
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.offline.results.upgrade import UPGRADES

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Read(Generic[T]):
    """One stored file as read: its document (current schema) or why it cannot be used."""

    path: Path
    doc: T | None
    problem: str | None = None


@dataclass(frozen=True)
class Kind(Generic[M]):
    """A stored document kind: its model, the `kind` name its files carry, the words for it in
    a reason, and the one version this torchscale reads."""

    model: type[M]
    name: str
    what: str
    version: int

    def read(self, path: Path) -> Read[M]:
        data, problem = read_json(path)
        if problem is None:
            data = _upgraded(data, self)
            problem = version_problem(data, self.name, self.what, self.version, path)
        if problem is not None:
            return Read(path, None, problem)
        model, problem = validated(self.model, data, self.what)
        return Read(path, model, problem)


def _upgraded(data: Any, kind: Kind[Any]) -> Any:
    """`data` one version behind brought to the current one by the upgrade its kind's change
    shipped; anything else as it is."""
    upgrade = UPGRADES.get(kind.name)
    behind = isinstance(data, dict) and data.get("kind") == kind.name
    if upgrade is None or not behind or data.get("schema_version") != kind.version - 1:
        return data
    return {**upgrade(data), "schema_version": kind.version}


CELL = Kind(CellResult, CELL_KIND, "cell result", RESULT_SCHEMA_VERSION)
ANALYSIS = Kind(ProfileAnalysis, ANALYSIS_KIND, "profile analysis", ANALYSIS_SCHEMA_VERSION)
COMM = Kind(CommResult, COMM_KIND, "comm result", COMM_SCHEMA_VERSION)
FORECAST = Kind(Forecast, FORECAST_KIND, "forecast", FORECAST_SCHEMA_VERSION)
FORECAST_SCORE = Kind(
    ForecastScore, FORECAST_SCORE_KIND, "forecast score", FORECAST_SCORE_SCHEMA_VERSION
)
MAX_BATCH = Kind(MaxBatchResult, MAX_BATCH_KIND, "max-batch result", MAX_BATCH_SCHEMA_VERSION)
VALIDATE = Kind(ValidateReport, VALIDATE_KIND, "validate report", VALIDATE_SCHEMA_VERSION)
SWEEP = Kind(SweepState, SWEEP_KIND, "sweep state", SWEEP_SCHEMA_VERSION)
KINDS = (CELL, ANALYSIS, COMM, FORECAST, FORECAST_SCORE, MAX_BATCH, VALIDATE, SWEEP)
# the version of each kind this torchscale reads and writes
CURRENT_VERSIONS: dict[str, int] = {k.name: k.version for k in KINDS}

read_comm = COMM.read
read_forecast = FORECAST.read
read_forecast_score = FORECAST_SCORE.read
read_max_batch = MAX_BATCH.read
read_validate_report = VALIDATE.read
read_sweep_state = SWEEP.read
read_profile_analysis = ANALYSIS.read


def read_cell(path: Path) -> Read[CellResult]:
    """One cells/*.json or profile/<run>/result.json, with its host-bound verdict judged from
    the busy trace it stores (imported here: it needs pandas, which a rank reading its own
    result need not load)."""
    read = CELL.read(path)
    if read.doc is None:
        return read
    from torchscale.offline.results.host_bound import with_host_bound

    return Read(path, with_host_bound(read.doc))


# every stored kind's one reader, by the `kind` its files carry
READERS: dict[str, Callable[[Path], Read[Any]]] = {
    **{k.name: k.read for k in KINDS},
    CELL_KIND: read_cell,
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


def read_cells(layout: ResultLayout[Path]) -> tuple[list[CellResult], list[tuple[Path, str]]]:
    """Every readable cell result of cells/, and the files that could not be used, with why."""
    return read_folder(layout.cells_dir, read_cell)
