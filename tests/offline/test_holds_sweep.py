"""One test of "this folder holds a benchmark sweep" (`holds_sweep`), asked by the loader, the
report's sources and predict alike: a sweep stopped in its first cell (only `specs/`, no state
file, no result) is one for all three, an empty folder for none."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchscale.contracts.errors import ResultsError, ResultsInputError
from torchscale.interfaces.api.predict import experiments_in
from torchscale.interfaces.report.sources import is_experiment_dir
from torchscale.offline.results.experiment import holds_sweep, load


@pytest.mark.parametrize(
    ("made", "holds"),
    [((), False), (("cells",), True), (("specs",), True), (("logs",), False)],
)
def test_the_folders_a_sweep_leaves(tmp_path: Path, made: tuple[str, ...], holds: bool) -> None:
    for name in made:
        (tmp_path / name).mkdir()
    assert holds_sweep(tmp_path) is holds
    assert is_experiment_dir(tmp_path) is holds


def test_a_sweep_stopped_in_its_first_cell_is_one_for_every_reader(tmp_path: Path) -> None:
    root = tmp_path / "exp"
    (root / "specs").mkdir(parents=True)
    assert load(root).results == []  # the loader refused it: "no cells/"
    assert is_experiment_dir(root)  # the report read it as no experiment
    with pytest.raises(ResultsInputError, match="no measured cells"):  # nothing to forecast yet
        experiments_in(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ResultsError):
        load(tmp_path / "empty")
