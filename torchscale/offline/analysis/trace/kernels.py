"""The top device kernels, a per-rank table (`top_kernels`, a reducer of
registry.py) and its figures over every rank (`kernel_figures`, read by
`profile/profile_record.py`).

A rank keeps its TOP_KERNELS largest kernels and one row for the rest, so each rank's table
stays small while the shares of compute over ranks stay exact.
"""

from __future__ import annotations

import pandas as pd

from torchscale.contracts.schema.profile_analysis import KernelFigures
from torchscale.offline.analysis.trace.intervals import window_index
from torchscale.offline.analysis.trace.steps import full_steps

TOP_KERNELS = 10  # kernels kept per rank (by total time) and reported over ranks
KERNEL_COLUMNS = ["name", "calls", "total_us"]


def top_kernels(events: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """The rank's compute kernels starting inside its complete steps, by total time (the
    TOP_KERNELS largest plus one row for the rest, so shares of compute stay exact)."""
    full = full_steps(steps)
    if events.empty or full.empty:
        return pd.DataFrame(columns=KERNEL_COLUMNS)
    kern = events[(events["kind"] == "kernel") & events["device_side"].astype(bool)]
    if kern.empty:
        return pd.DataFrame(columns=KERNEL_COLUMNS)
    starts, ends = full["start"].to_numpy(dtype=float), full["end"].to_numpy(dtype=float)
    kern = kern[window_index(starts, ends, kern["ts"].to_numpy(dtype=float)) >= 0]
    table = (
        kern.assign(name=kern["name"].astype(str))
        .groupby("name")["dur"]
        .agg(calls="size", total_us="sum")
        .sort_values("total_us", ascending=False)
        .reset_index()
    )
    if len(table) > TOP_KERNELS:
        rest = table.iloc[TOP_KERNELS:]
        calls, total_us = int(rest["calls"].sum()), float(rest["total_us"].sum())
        other = pd.DataFrame(
            [[f"(other {len(rest)} kernels)", calls, total_us]], columns=KERNEL_COLUMNS
        )
        table = pd.concat([table.iloc[:TOP_KERNELS], other], ignore_index=True)
    return table[KERNEL_COLUMNS]


def kernel_figures(tables: list[pd.DataFrame]) -> list[KernelFigures]:
    """Top kernels over ranks (each rank's TOP_KERNELS and its '(other ...)' row)."""
    frames = [t for t in tables if not t.empty]
    if not frames:
        return []
    allk = pd.concat(frames, ignore_index=True)
    total = float(allk["total_us"].sum())
    named = allk[~allk["name"].str.startswith("(other ")]
    per = named.groupby("name").agg(calls=("calls", "sum"), total_us=("total_us", "sum"))
    per = per.sort_values("total_us", ascending=False).head(TOP_KERNELS)
    return [
        KernelFigures(
            name=str(name),
            calls=int(row.calls),
            total_us=float(row.total_us),
            share_of_compute=float(row.total_us) / total if total > 0 else 0.0,
        )
        for name, row in per.iterrows()
    ]
