"""summary.csv: one row per cell, flat columns (the same rows as results.load().cells)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.offline.results.frame import cells_table
from torchscale.offline.results.store import ResultStore


def write_summary(store: ResultStore, results: Sequence[CellResult]) -> pd.DataFrame:
    table = cells_table(results)
    store.write_text(store.summary_path, table.to_csv(index=False))
    return table
