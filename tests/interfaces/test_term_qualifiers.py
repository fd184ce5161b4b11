"""`-f term` never keeps a figure and leaves out what qualifies it: the best
configuration's criterion (Best by), whether its lead is real (Ahead of the next) and whether it
can be used (Reliability). A busy 2-cell sweep's summary showed two 'not measurable' bests with
'Best by' (its 'no clear best (within noise)') among the columns left out to fit."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchscale.interfaces.cli.app import app

FIXTURES = Path(__file__).parents[1] / "fixtures"
QUALIFIERS = ("Best by", "Ahead of the next", "Reliability")


@pytest.mark.parametrize("columns", ["80", "100", "140"])
@pytest.mark.parametrize(
    "source", ["cpu_busy_sweep/busy", "cpu_default_sweep", "cpu_crashes/v1_fixture"]
)
def test_no_qualifier_is_left_out_while_its_figure_stays(source: str, columns: str) -> None:
    result = CliRunner().invoke(
        app, ["report", "-s", str(FIXTURES / source), "-f", "term"], env={"COLUMNS": columns}
    )
    assert result.exit_code == 0, result.output
    text = result.output
    start = text.index("Best configuration per model")
    table = text[start : text.index("\n\n", start)]
    # what is dropped to fit, not the columns no row has a figure in (a 'none named' best)
    left_out = [ln for ln in table.splitlines() if "left out" in ln and "in any row" not in ln]
    assert not any(q in line for q in QUALIFIERS for line in left_out), table
    assert "best by" in table.lower(), table
    if "within noise" in text[start:]:  # a best that is noise says so where it is shown
        assert "no clear best" in table or "within noise" in table, table
