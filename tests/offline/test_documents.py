"""One reader per stored document kind (offline/results/documents.py): every kind a schema
declares has exactly one, nothing outside offline/results/ reads a stored document itself,
and the loader, the report and `predict` all reach the same reader (same file, same reason)."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import torchscale.contracts.schema as schema_package
from torchscale.contracts.versioned import VersionError
from torchscale.interfaces.api.predict import PredictRequest, run_predict
from torchscale.interfaces.report.sources import read_sources
from torchscale.offline.results import documents
from torchscale.offline.results.experiment import load

PACKAGE = Path(documents.__file__).parents[2]
SWEEP = Path(__file__).resolve().parents[1] / "fixtures" / "cpu_default_sweep" / "default_scaling"
# what only a reader in offline/results/ may call on a stored document
READING = {"version_problem", "_upgraded"}
STORED_MODELS = {
    "CellResult",
    "ProfileAnalysis",
    "CommResult",
    "Forecast",
    "ForecastScore",
    "MaxBatchResult",
    "ValidateReport",
}


def _stored_kinds() -> dict[str, type[BaseModel]]:
    """Every document kind a schema in contracts/schema/ declares (its `kind` field)."""
    kinds: dict[str, type[BaseModel]] = {}
    for info in pkgutil.iter_modules(schema_package.__path__):
        module = importlib.import_module(f"{schema_package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseModel):
                field = value.model_fields.get("kind")
                if field is not None and str(field.default).startswith("torchscale."):
                    kinds[field.default] = value
    return kinds


def test_each_stored_kind_has_exactly_one_reader() -> None:
    kinds = _stored_kinds()
    assert set(kinds) == set(documents.READERS)
    # cell, profile analysis, comm, forecast, its score, max batch, validate, sweep state
    assert len(kinds) == 8


def _readers_of_stored_documents(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if name in READING:
            found.append(f"{name} (line {node.lineno})")
        owner = func.value if isinstance(func, ast.Attribute) else None
        stored = isinstance(owner, ast.Name) and owner.id in STORED_MODELS
        if name.startswith("model_validate") and stored:
            found.append(f"{ast.unparse(func)} (line {node.lineno})")
    return found


@pytest.mark.slow  # over 2 s on 2 cores
def test_nothing_outside_offline_results_reads_a_stored_document_itself() -> None:
    results = PACKAGE / "offline" / "results"
    offenders = {
        str(path.relative_to(PACKAGE)): calls
        for path in sorted(PACKAGE.rglob("*.py"))
        if results not in path.parents and (calls := _readers_of_stored_documents(path))
    }
    assert offenders == {}, "read stored documents through offline/results/documents.py"


def _spy_on_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every stored file a reader of documents.py opens, as 'folder/name', from here on."""
    read: list[str] = []
    original = documents.read_json

    def spy(path: Path) -> Any:
        read.append(f"{path.parent.name}/{path.name}")
        return original(path)

    monkeypatch.setattr(documents, "read_json", spy)
    return read


@pytest.fixture
def experiment(tmp_path: Path) -> Path:
    """The 8-cell sweep with a cell and a comm run no torchscale could have written."""
    root = Path(shutil.copytree(SWEEP, tmp_path / "sweep"))
    (root / "comm").mkdir()
    for folder, kind in (("cells", "torchscale.cell"), ("comm", "torchscale.comm")):
        bad = {"kind": kind, "schema_version": 0}
        (root / folder / "zz-bad.json").write_text(json.dumps(bad), encoding="utf-8")
    return root


def test_loader_report_and_predict_reach_the_one_reader(
    experiment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = _spy_on_reads(monkeypatch)
    cells = {f"cells/{p.name}" for p in (experiment / "cells").glob("*.json")}
    bad_cell = experiment / "cells" / "zz-bad.json"
    bad_comm = experiment / "comm" / "zz-bad.json"
    why_cell, why_comm = documents.read_cell(bad_cell).problem, documents.read_comm(bad_comm)
    assert why_cell == "bad schema_version 0"
    assert why_comm.problem == "bad schema_version 0"

    read.clear()
    loaded = load(experiment)
    assert set(read) >= cells
    assert dict(loaded.skipped) == {bad_cell: why_cell}

    read.clear()
    sources = read_sources(experiment)
    assert set(read) >= cells | {"comm/zz-bad.json"}
    assert {(s.path, s.reason) for s in sources.skipped} == {
        (str(bad_cell), why_cell),
        (str(bad_comm), why_comm.problem),
    }

    read.clear()
    run = run_predict(PredictRequest(experiment, [16], write=False))
    assert set(read) >= cells | {"comm/zz-bad.json"}
    assert {(r.what, r.why) for r in run.skipped} == {
        (str(bad_cell), why_cell),
        (str(bad_comm), why_comm.problem),
    }


@pytest.mark.parametrize("folder", ["cells", "comm"])
def test_loader_report_and_predict_stop_at_another_version_with_the_same_line(
    tmp_path: Path, folder: str
) -> None:
    """A file of another version is not skipped but stops every reader of its folder: nothing
    is read from a folder half converted, and each says the one line."""
    root = Path(shutil.copytree(SWEEP, tmp_path / "sweep"))
    (root / "comm").mkdir()
    kind = documents.CELL if folder == "cells" else documents.COMM
    older = root / folder / "zz-older.json"
    older.write_text(json.dumps({"kind": kind.name, "schema_version": kind.version - 1}))
    with pytest.raises(VersionError) as raised:
        kind.read(older)
    line = str(raised.value)
    assert line.startswith(f"{older}: {kind.what} of schema {kind.version - 1}; ")
    readers = [
        lambda: read_sources(root),
        lambda: run_predict(PredictRequest(root, [16], write=False)),
    ]
    if folder == "cells":  # the loader reads cells alone
        readers.append(lambda: load(root))
    for read in readers:
        with pytest.raises(VersionError) as again:
            read()
        assert str(again.value) == line
