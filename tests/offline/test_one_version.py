"""One result format: each stored kind is read at its current version and no other. A
file of an older or a newer version stops the read with one line naming the file, its version,
the torchscale that wrote it where the file stores it, and what to do (the converter's command,
or upgrade torchscale); `report` says that line and exits 2, writing nothing. A version change
ships one upgrade from the version before (`offline/results/upgrade.UPGRADES`), read through
when a file is one version behind, never further."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from torchscale.contracts.versioned import CONVERTER, VersionError
from torchscale.interfaces.cli.app import app
from torchscale.offline.results import documents, upgrade
from torchscale.offline.results.documents import CURRENT_VERSIONS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CELLS = FIXTURES / "cpu_default_sweep" / "default_scaling"
CELL = CELLS / "cells" / "tiny-mlp__b16__w2__fp32__ddp__ef11e49c.json"
ANALYSIS = (
    FIXTURES
    / "cpu_profile_injected"
    / "standalone"
    / "profile"
    / "tiny-mlp__b8__w2__fp32__ddp__9a305f17"
    / "analysis.json"
)
VALIDATE = FIXTURES / "validate_basic" / "node-a.json"
# (the file, its reader, the words for its kind in the line)
STORED: dict[str, tuple[Path, Callable[[Path], Any], str]] = {
    "cell": (CELL, documents.read_cell, "cell result"),
    "analysis": (ANALYSIS, documents.read_profile_analysis, "profile analysis"),
    "validate": (VALIDATE, documents.read_validate_report, "validate report"),
}


def _stored(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _written(tmp_path: Path, data: dict[str, Any], name: str = "doc.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_the_current_versions() -> None:
    assert CURRENT_VERSIONS == {
        "torchscale.cell": 21,
        "torchscale.profile_analysis": 11,
        "torchscale.comm": 3,
        "torchscale.forecast": 2,
        "torchscale.forecast_score": 1,
        "torchscale.max_batch": 3,
        "torchscale.validate": 6,
        "torchscale.sweep": 3,
    }
    assert upgrade.UPGRADES == {}  # every kept file is at its current version


@pytest.mark.parametrize("name", sorted(STORED))
def test_each_fixture_reads_at_its_current_version(name: str) -> None:
    path, read, _ = STORED[name]
    got = read(path)
    assert got.problem is None and got.doc is not None
    assert _stored(path)["schema_version"] == CURRENT_VERSIONS[_stored(path)["kind"]]


@pytest.mark.parametrize("name", sorted(STORED))
@pytest.mark.parametrize("step", [-1, -2, +1])
def test_another_version_stops_the_read_with_one_line(tmp_path: Path, name: str, step: int) -> None:
    source, read, what = STORED[name]
    data = _stored(source)
    current = CURRENT_VERSIONS[data["kind"]]
    version = current + step
    path = _written(tmp_path, {**data, "schema_version": version})
    with pytest.raises(VersionError) as raised:
        read(path)
    line = str(raised.value)
    # the cell result stores no torchscale_version; the analysis and the validate report do
    writer = data.get("torchscale_version")
    by = f" (written by torchscale {writer})" if writer else ""
    assert (name == "cell") == (writer is None)
    todo = (
        "upgrade torchscale to read it"
        if step > 0
        else f"convert its folder with `{CONVERTER} FOLDER`"
    )
    assert (
        line == f"{path}: {what} of schema {version}{by}; this torchscale reads {current}: {todo}"
    )
    assert CONVERTER == "python tools/convert_results.py"
    assert raised.value.exit_code == 2


def test_report_on_a_folder_with_an_older_cell_exits_2_with_the_line(tmp_path: Path) -> None:
    """One cell one version behind in an otherwise current folder: no report is half made."""
    folder = Path(shutil.copytree(CELLS, tmp_path / "default_scaling"))
    older = folder / "cells" / CELL.name
    older.write_text(
        json.dumps({**_stored(CELL), "schema_version": CURRENT_VERSIONS["torchscale.cell"] - 1}),
        encoding="utf-8",
    )
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    # the report goes into the source folder by default
    result = CliRunner().invoke(app, ["report", "-s", str(folder), "-f", "md"])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    current = CURRENT_VERSIONS["torchscale.cell"]
    assert (
        f"{older}: cell result of schema {current - 1}; this torchscale reads {current}: "
        f"convert its folder with `{CONVERTER} FOLDER`"
    ) in said
    assert said.startswith("error: ") and "Traceback" not in result.output
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before  # no report


def _renamed_wall(data: dict[str, Any]) -> dict[str, Any]:
    """The upgrade a made-up change would ship: version N-1 stored `wall_s` as `wall_seconds`."""
    upgraded = dict(data)
    upgraded["wall_s"] = upgraded.pop("wall_seconds")
    return upgraded


def test_adding_an_upgrade_reads_a_file_one_version_behind_through_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """How a version change ships: one upgrade from the version before, registered for its
    kind. A file one version behind reads through it as the current document; two behind
    still stops the read; a current file never goes through it."""
    current = CURRENT_VERSIONS["torchscale.cell"]
    today = _stored(CELL)
    assert today["wall_s"] is not None
    before = {k: v for k, v in today.items() if k != "wall_s"}
    before |= {"wall_seconds": today["wall_s"], "schema_version": current - 1}
    behind = _written(tmp_path, before, "behind.json")
    with pytest.raises(VersionError):  # no upgrade shipped: the converter's line
        documents.read_cell(behind)

    calls: list[int] = []

    def upgrade_cell(data: dict[str, Any]) -> dict[str, Any]:
        calls.append(data["schema_version"])
        return _renamed_wall(data)

    monkeypatch.setitem(upgrade.UPGRADES, "torchscale.cell", upgrade_cell)
    read = documents.read_cell(behind)
    assert read.problem is None and read.doc is not None
    assert read.doc == documents.read_cell(CELL).doc  # the same document as today's file
    assert read.doc.schema_version == current and calls == [current - 1]
    assert json.loads(behind.read_text(encoding="utf-8")) == before  # the file is not touched

    calls.clear()
    documents.read_cell(CELL)
    assert calls == []  # a current file is read as it is

    two_behind = _written(tmp_path, {**before, "schema_version": current - 2}, "two.json")
    with pytest.raises(VersionError) as raised:
        documents.read_cell(two_behind)
    assert f"cell result of schema {current - 2}; this torchscale reads {current}" in str(
        raised.value
    )
    assert calls == []
