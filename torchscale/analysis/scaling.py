"""Scaling efficiency over the summary table (pure pandas, no plotting)."""

from __future__ import annotations

import pandas as pd

# layout_family: the strategy, or for tp/pp/hybrid what stays fixed as the world grows
GROUP_COLUMNS = ["model_label", "batch_size", "precision", "layout_family", "device"]


def with_layout_family(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with `layout_family`: tables written before 0.8.0 (every cell ddp or fsdp) have
    none, and their strategy is their family."""
    if "layout_family" in table.columns or "strategy" not in table.columns:
        return table
    return table.assign(layout_family=table["strategy"])


def add_scaling_efficiency(table: pd.DataFrame) -> pd.DataFrame:
    """Add `scaling_efficiency` = thr(N) / (N * thr(N_min) / N_min) per (model, batch,
    precision, layout family, device), against the smallest world size measured ok in that
    group. Rows that are not ok, or whose group has no ok base, get NaN."""
    out = with_layout_family(table).copy()
    out["scaling_efficiency"] = float("nan")
    ok = out[(out["status"] == "ok") & out["samples_per_s"].notna()]
    for _, group in ok.groupby(GROUP_COLUMNS, dropna=False):
        base = group.loc[group["world_size"].idxmin()]
        per_device_base = base["samples_per_s"] / base["world_size"]
        out.loc[group.index, "scaling_efficiency"] = group["samples_per_s"] / (
            group["world_size"] * per_device_base
        )
    return out


# strong scaling: the same global batch (the same work per step) split over more GPUs
STRONG_GROUP_COLUMNS = [
    "model_label",
    "global_batch",
    "precision",
    "layout_family",
    "device",
]
SCALING_TABLE_COLUMNS = [
    "group",
    "base_world_size",
    "base_samples_per_s",
    "ideal_samples_per_s",
    "speedup",
    "efficiency",
]


def scaling_table(
    table: pd.DataFrame, group_columns: list[str] | None = None, min_world_sizes: int = 1
) -> pd.DataFrame:
    """The ok rows with a throughput, grouped by `group_columns` (default GROUP_COLUMNS: the
    batch per GPU is fixed, so the global batch grows with the GPUs; STRONG_GROUP_COLUMNS
    fixes the global batch instead), each against its smallest world size measured ok:
    `speedup = thr(N) / thr(N_min)`, `ideal = thr(N_min) x N / N_min`, `efficiency = thr / ideal`
    (the same formula and base row as `add_scaling_efficiency`). Groups with fewer than
    `min_world_sizes` distinct world sizes are left out. `group` numbers the groups kept, in
    key order; rows are sorted by group, then world size."""
    columns = GROUP_COLUMNS if group_columns is None else group_columns
    table = with_layout_family(table)
    out_columns = [*table.columns, *SCALING_TABLE_COLUMNS]
    thr = pd.to_numeric(table["samples_per_s"], errors="coerce")
    ok = table[(table["status"] == "ok") & thr.notna()].copy()
    if "global_batch" in columns:
        ok = ok[ok["global_batch"].notna()]  # unknown global batch: no strong-scaling group
    if ok.empty:
        return pd.DataFrame(columns=out_columns)
    ok["samples_per_s"] = pd.to_numeric(ok["samples_per_s"]).astype(float)
    grouped = ok.groupby(columns, dropna=False, sort=True)
    ok["group"] = grouped.ngroup()
    sizes = grouped["world_size"].transform("nunique")
    base_rows = ok.loc[grouped["world_size"].idxmin().to_numpy()]  # first smallest, as above
    base_world = pd.Series(base_rows["world_size"].to_numpy(), index=base_rows["group"])
    base_thr = pd.Series(base_rows["samples_per_s"].to_numpy(), index=base_rows["group"])
    ok = ok[sizes >= min_world_sizes]
    if ok.empty:
        return pd.DataFrame(columns=out_columns)
    world = pd.to_numeric(ok["world_size"]).astype(float)
    ok["base_world_size"] = ok["group"].map(base_world).astype(int)
    ok["base_samples_per_s"] = ok["group"].map(base_thr).astype(float)
    ok["ideal_samples_per_s"] = ok["base_samples_per_s"] * world / ok["base_world_size"]
    ok["speedup"] = ok["samples_per_s"] / ok["base_samples_per_s"]
    ok["efficiency"] = ok["samples_per_s"] / ok["ideal_samples_per_s"]
    ok = ok.sort_values(["group", "world_size", "cell_id"], kind="stable")
    ok["group"] = pd.factorize(ok["group"])[0]
    return ok[out_columns]
