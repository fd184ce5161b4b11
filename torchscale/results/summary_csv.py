"""summary.csv: one row per cell, flat columns (the same rows as results.load().cells)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from torchscale.results.frame import cells_table
from torchscale.results.store import ResultStore
from torchscale.schema.cell_result import CellResult


def write_summary(store: ResultStore, results: Sequence[CellResult]) -> pd.DataFrame:
    table = cells_table(results)
    store.write_text(store.summary_path, table.to_csv(index=False))
    return table
