"""Scaling efficiency over the summary table (pure pandas, no plotting)."""

from __future__ import annotations

import pandas as pd

GROUP_COLUMNS = ["model_label", "batch_size", "precision", "strategy", "device"]


def add_scaling_efficiency(table: pd.DataFrame) -> pd.DataFrame:
    """Add `scaling_efficiency` = thr(N) / (N * thr(N_min) / N_min) per (model, batch,
    precision, strategy, device), against the smallest world size measured ok in that group.
    Rows that are not ok, or whose group has no ok base, get NaN."""
    out = table.copy()
    out["scaling_efficiency"] = float("nan")
    ok = out[(out["status"] == "ok") & out["samples_per_s"].notna()]
    for _, group in ok.groupby(GROUP_COLUMNS, dropna=False):
        base = group.loc[group["world_size"].idxmin()]
        per_device_base = base["samples_per_s"] / base["world_size"]
        out.loc[group.index, "scaling_efficiency"] = group["samples_per_s"] / (
            group["world_size"] * per_device_base
        )
    return out
