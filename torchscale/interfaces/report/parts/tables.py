"""The tables more than one section reads, each computed once per report: the cells with their price
and cost, the pooled cells' cost, and the weak-scaling rows. `Context` holds them as typed cached
properties that call these functions, so the summary, the efficiency section and the headline read
one table and never compute it again or ask each other for it."""

from __future__ import annotations

from typing import Any

import pandas as pd

from torchscale.interfaces.report.request import ReportOptions
from torchscale.offline.analysis.cost import cost_table
from torchscale.offline.analysis.regressions import RUN_EXPERIMENTS
from torchscale.offline.analysis.scaling_efficiency import GROUP_COLUMNS, scaling_table

NO_PRICE = "no --cost-per-gpu-hour given and no cost.per_gpu_hour in the results' config"
STORED_PRICE = "cost_per_gpu_hour"  # the price a cell was measured under (config cost:)


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A table's rows as dicts: the fast way to walk a few hundred rows (iterrows builds a
    Series per row)."""
    columns = [str(c) for c in frame.columns]
    return [dict(zip(columns, row, strict=True)) for row in frame.to_numpy(dtype=object)]


def cell_prices(cells: pd.DataFrame, options: ReportOptions) -> pd.Series:
    """The price of each cell: --cost-per-gpu-hour NAME=PRICE for its result set, else a bare
    --cost-per-gpu-hour PRICE, else the config's cost.per_gpu_hour stored in the cell; NaN
    when none is known."""
    prices = pd.to_numeric(cells[STORED_PRICE], errors="coerce").astype(float)
    if options.cost_per_gpu_hour is not None:
        prices = pd.Series(float(options.cost_per_gpu_hour), index=cells.index)
    for experiment, price in options.prices.items():
        prices[cells["experiment"] == experiment] = float(price)
    return prices


def priced_cells(cells: pd.DataFrame, prices: pd.Series) -> pd.DataFrame | None:
    """The ok cells that have a price, with their cost columns; None when no cell has one."""
    if prices.isna().all():
        return None
    return cost_table(cells, prices)


def pooled_priced(
    cells: pd.DataFrame, pooled: pd.DataFrame, prices: pd.Series
) -> pd.DataFrame | None:
    """`priced_cells` over the pooled cells: a cell run several times is costed at its median
    throughput over the runs (at the price of its runs: their median), so the summary's and the
    headline's cost is of the same figure as their throughput. None when no cell has a price."""
    if prices.isna().all():
        return None
    by_cell = {
        (str(e), str(c)): p
        for e, c, p in zip(cells["experiment"], cells["cell_id"], prices, strict=True)
    }
    if pooled.empty:
        return cost_table(pooled, pd.Series(dtype=float))
    per_row = []
    for row in records(pooled):
        runs = row.get(RUN_EXPERIMENTS)
        experiments = runs if isinstance(runs, tuple) else (str(row["experiment"]),)
        found = [by_cell.get((e, str(row["cell_id"]))) for e in experiments]
        known = [float(p) for p in found if p is not None and not pd.isna(p)]
        per_row.append(float(pd.Series(known).median()) if known else float("nan"))
    return cost_table(pooled, pd.Series(per_row, index=pooled.index, dtype=float))


def weak_scaling(pooled: pd.DataFrame) -> pd.DataFrame:
    """The weak-scaling rows of every group measured at two GPU counts or more (per
    experiment, the runs of a cell pooled): what the summary's and the headline's efficiency
    figures are read from."""
    return scaling_table(pooled, ["experiment", *GROUP_COLUMNS], min_world_sizes=2)
