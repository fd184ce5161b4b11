"""Scaling efficiency over the summary table (pure pandas, no plotting), with its 95 % interval:
the ratio of the cell's and its base's median throughput, bootstrapped from their per-repeat
throughputs, or Welch's t on the log ratio when a side has 2-3 repeats
(`uncertainty.ratio_of_medians`), so that an efficiency above 1 can be told apart from linear
scaling within noise."""

from __future__ import annotations

import functools
import math
from typing import Any

import pandas as pd

from torchscale.offline.analysis.numbers import parse_repeats
from torchscale.offline.analysis.uncertainty import ratio_of_medians

# layout_family: the strategy, or for tp/pp/hybrid what stays fixed as the world grows
GROUP_COLUMNS = ["model_label", "batch_size", "precision", "layout_family", "device"]


def with_layout_family(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with `layout_family`: tables written before 0.8.0 (every cell ddp or fsdp) have
    none, and their strategy is their family."""
    if "layout_family" in table.columns or "strategy" not in table.columns:
        return table
    return table.assign(layout_family=table["strategy"])


REPEATS_COLUMN = "samples_per_s_repeats"  # ';'-joined per-repeat global samples/s


@functools.lru_cache(maxsize=4096)
def efficiency_interval(
    repeats: tuple[float, ...], base_repeats: tuple[float, ...], world: int, base_world: int
) -> tuple[float | None, float | None]:
    """The 95 % interval of eff = thr(N) / (N x thr(N_min) / N_min): the interval of the
    ratio of the two medians (`uncertainty.ratio_of_medians`) times N_min / N. (None, None)
    without two repeats on each side. Cached: the report asks for the same pairs several
    times."""
    if len(repeats) < 2 or len(base_repeats) < 2 or world <= 0 or base_world <= 0:
        return None, None
    _, low, high = ratio_of_medians(repeats, base_repeats)
    if low is None or high is None:
        return None, None
    factor = base_world / world
    return low * factor, high * factor


def _intervals(frame: pd.DataFrame, bases: dict[Any, Any]) -> tuple[list[float], list[float]]:
    """Each row's efficiency interval against its base row (`bases`: row label -> base row
    label, both in `frame`); NaN for a base itself (1 by definition) and without repeats.
    Plain lists and the cached `efficiency_interval`: no per-row pandas objects."""
    nan = math.nan
    if REPEATS_COLUMN not in frame.columns:
        return [nan] * len(bases), [nan] * len(bases)
    repeats = dict(zip(frame.index, frame[REPEATS_COLUMN], strict=True))
    worlds = dict(zip(frame.index, frame["world_size"], strict=True))
    lows, highs = [], []
    for label, base in bases.items():
        low = high = None
        if label != base:
            now, then = tuple(parse_repeats(repeats[label])), tuple(parse_repeats(repeats[base]))
            low, high = efficiency_interval(now, then, int(worlds[label]), int(worlds[base]))
        lows.append(nan if low is None else low)
        highs.append(nan if high is None else high)
    return lows, highs


REASON_COLUMN = "scaling_efficiency_reason"
NO_BASE = (
    "no base: no smaller world size measured ok in its group (model, batch, precision, "
    "layout, device), so there is nothing to scale from"
)
BASE = "base: the smallest world size of its group (100 % by definition)"
NOT_MEASURED = "not measured: the cell did not finish ok with a throughput"
SKIPPED = "skipped"  # a planned skip: "skipped: <the plan's reason>"
SHARED_GPU = (
    "not a scaling measurement: its ranks shared a GPU (launcher.ranks_per_gpu), so more "
    "ranks did not mean more GPUs"
)


def _shared(table: pd.DataFrame) -> pd.Series:
    """The rows whose ranks shared a GPU (ranking.shares_gpu): no scaling group takes them."""
    # here, not at the top: ranking imports scipy, which the sweep's process (summary.csv
    # through this module) must not load before its cells' windows (tests/rank/test_rank_imports)
    from torchscale.offline.analysis.ranking import shares_gpu

    if "ranks_per_gpu" not in table.columns:
        return pd.Series(False, index=table.index)
    return table["ranks_per_gpu"].map(shares_gpu).astype(bool)


def _not_measured(status: Any, error: Any) -> str:
    """Why a row that is not ok has no figure: a planned skip says its own reason."""
    if status == "skipped":
        return f"{SKIPPED}: {error}" if isinstance(error, str) and error else SKIPPED
    return NOT_MEASURED


def add_scaling_efficiency(table: pd.DataFrame) -> pd.DataFrame:
    """Add `scaling_efficiency` = thr(N) / (N * thr(N_min) / N_min) per GROUP_COLUMNS group,
    against the smallest world size measured ok in it, its 95 % interval
    `scaling_efficiency_low` / `_high` (`efficiency_interval`), and REASON_COLUMN where there
    is no figure or it is the base's 1 by definition. A group measured at one world size only
    gets NaN with NO_BASE, never a 100 % that reads as perfect scaling."""
    out = with_layout_family(table).copy()
    for column in ("scaling_efficiency", "scaling_efficiency_low", "scaling_efficiency_high"):
        out[column] = float("nan")
    errors = out["error"] if "error" in out else pd.Series(None, index=out.index, dtype=object)
    reasons = [_not_measured(s, e) for s, e in zip(out["status"], errors, strict=True)]
    out[REASON_COLUMN] = pd.Series(reasons, index=out.index, dtype=object)
    shared = _shared(out)
    out.loc[shared & (out["status"] == "ok"), REASON_COLUMN] = SHARED_GPU
    ok = out[(out["status"] == "ok") & out["samples_per_s"].notna() & ~shared]
    bases: dict[Any, Any] = {}
    for _, group in ok.groupby(GROUP_COLUMNS, dropna=False):
        if group["world_size"].nunique() < 2:
            out.loc[group.index, REASON_COLUMN] = NO_BASE
            continue
        out.loc[group.index, REASON_COLUMN] = None
        base_label = group["world_size"].idxmin()
        out.loc[base_label, REASON_COLUMN] = BASE
        base = group.loc[base_label]
        per_device_base = base["samples_per_s"] / base["world_size"]
        ideal = group["world_size"] * per_device_base
        out.loc[group.index, "scaling_efficiency"] = group["samples_per_s"] / ideal
        bases.update(dict.fromkeys(group.index, base_label))
    if bases:
        lows, highs = _intervals(ok, bases)
        out.loc[list(bases), "scaling_efficiency_low"] = lows
        out.loc[list(bases), "scaling_efficiency_high"] = highs
    return out


# strong scaling: the same global batch (the same work per step) split over more GPUs
STRONG_GROUP_COLUMNS = ["model_label", "global_batch", "precision", "layout_family", "device"]
_BASE_COLUMNS = ["base_world_size", "base_samples_per_s", "ideal_samples_per_s"]
_SPEEDUP_COLUMNS = ["speedup", "efficiency", "efficiency_low", "efficiency_high"]
SCALING_TABLE_COLUMNS = ["group", *_BASE_COLUMNS, *_SPEEDUP_COLUMNS]


def scaling_table(
    table: pd.DataFrame, group_columns: list[str] | None = None, min_world_sizes: int = 1
) -> pd.DataFrame:
    """The ok rows with a throughput, grouped by `group_columns` (default GROUP_COLUMNS: the
    batch per GPU is fixed; STRONG_GROUP_COLUMNS fixes the global batch instead), each with
    `speedup`, `ideal` and `efficiency` (with its interval) against its group's smallest world
    size, as `add_scaling_efficiency`. Groups with fewer than `min_world_sizes` distinct world
    sizes are left out; `group` numbers the groups kept, in key order."""
    columns = GROUP_COLUMNS if group_columns is None else group_columns
    table = with_layout_family(table)
    out_columns = [*table.columns, *SCALING_TABLE_COLUMNS]
    thr = pd.to_numeric(table["samples_per_s"], errors="coerce")
    ok = table[(table["status"] == "ok") & thr.notna() & ~_shared(table)].copy()
    if "global_batch" in columns:
        ok = ok[ok["global_batch"].notna()]  # unknown global batch: no strong-scaling group
    if ok.empty:
        return pd.DataFrame(columns=out_columns)
    ok["samples_per_s"] = pd.to_numeric(ok["samples_per_s"]).astype(float)
    grouped = ok.groupby(columns, dropna=False, sort=True)
    ok["group"] = grouped.ngroup()
    sizes = grouped["world_size"].transform("nunique")
    everything = ok  # every group's base row, before groups too small are dropped
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
    base_of_group = dict(zip(base_rows["group"], base_rows.index, strict=True))
    groups = zip(ok.index, ok["group"], strict=True)
    bases = {label: base_of_group[group] for label, group in groups}
    ok["efficiency_low"], ok["efficiency_high"] = _intervals(everything, bases)
    ok = ok.sort_values(["group", "world_size", "cell_id"], kind="stable")
    ok["group"] = pd.factorize(ok["group"])[0]
    return ok[out_columns]
