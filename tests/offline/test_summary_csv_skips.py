"""summary.csv on the first H100 run's default sweep (read in place): its 2-GPU cells were
skipped as planned on a one-GPU node, and their scaling reason says so with the plan's own
reason, not that the cell failed to finish."""

from __future__ import annotations

from tests.h100_replay import DEFAULT_SWEEP, read_cells
from torchscale.contracts.wording import say
from torchscale.offline.analysis.scaling_efficiency import NOT_MEASURED, REASON_COLUMN
from torchscale.offline.results.frame import cells_table


def test_a_planned_skip_says_skipped_and_why_in_summary_csv() -> None:
    results = read_cells(DEFAULT_SWEEP)
    table = cells_table(results).set_index("cell_id")
    skipped = [r for r in results if r.status.value == "skipped"]
    assert skipped and all("w2" in r.cell.id for r in skipped)
    for result in skipped:
        reason = table.loc[result.cell.id, REASON_COLUMN]
        assert result.error is not None
        assert reason == f"skipped: {say(result.error.finding)}"
        assert reason.startswith("skipped: needs 2 GPUs;"), reason
        assert reason != NOT_MEASURED
