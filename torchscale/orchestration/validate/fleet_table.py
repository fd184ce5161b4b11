"""Several nodes' `validate` reports as one table, and the fleet's verdict on them in one line.

The fleet view (analysis/fleet.py) judges figures against the fleet's median; it reads a table
with columns node, gpu, check, value, higher_is_better. `measurement_table` builds it from the
nodes' reports (Slurm preflight, `torchscale report`), `fleet_summary` says what it found.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from torchscale.offline.analysis.fleet import MIN_FLEET_NODES, VERDICT_OUTLIER, fleet_outliers
from torchscale.orchestration.validate.check_result import ValidateReport

TABLE_COLUMNS = ("node", "gpu", "check", "value", "unit", "higher_is_better", "status")


def measurement_table(reports: Sequence[ValidateReport]) -> pd.DataFrame:
    """One row per measured figure of every report (its node is the report's hostname)."""
    rows = [
        {
            "node": report.hostname,
            **{column: getattr(row, column) for column in TABLE_COLUMNS[1:-1]},
            "status": row.status.value,
        }
        for report in reports
        for row in report.measurements
    ]
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def fleet_summary(reports: Sequence[ValidateReport]) -> tuple[pd.DataFrame, str]:
    """(the outlier rows with their evidence, one line saying what was found)."""
    table = measurement_table(reports)
    nodes = sorted({report.hostname for report in reports})
    if table.empty:
        return table, f"not judged: no measured figures from {len(nodes)} node(s) (--level perf)"
    judged = fleet_outliers(table)
    outliers = judged[judged["verdict"] == VERDICT_OUTLIER]
    if len(nodes) < MIN_FLEET_NODES:
        return outliers, (
            f"not judged: {len(nodes)} node(s), the fleet view needs {MIN_FLEET_NODES} or more"
        )
    if outliers.empty:
        return outliers, f"no outlier among {len(nodes)} nodes"
    named = "; ".join(str(e) for e in outliers["evidence"].head(5))
    more = f" (+{len(outliers) - 5} more)" if len(outliers) > 5 else ""
    return outliers, f"{len(outliers)} outlier(s) among {len(nodes)} nodes: {named}{more}"
