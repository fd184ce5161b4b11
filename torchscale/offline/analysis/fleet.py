"""Fleet view: which node or GPU of an allocation is worse than its peers (`fleet_outliers`, on
a robust scale, median and MAD, because one bad node must not move the yardstick it is judged
by, as it would move a mean and a standard deviation). Pure functions over measurements
(docs/validate.md, "Fleet view").
"""

from __future__ import annotations

import math

import pandas as pd

from torchscale.contracts.errors import UsageError
from torchscale.contracts.wording.spell import format_value, plain_figure, robust_z

# MAD x 1.4826 estimates the standard deviation of a normal sample: the "robust sd".
MAD_TO_SD = 1.4826
OUTLIER_K = 3.5  # robust z beyond which a value is an outlier (Iglewicz and Hoaglin)
# A uniform fleet has a tiny MAD: without a floor, 0.1 % differences would be 3.5 robust sds.
# Below 5 % of the median a difference does not matter to a training job.
MIN_RELATIVE_GAP = 0.05
MIN_FLEET_NODES = 3  # a median of 2 values is their mean: no majority to compare with

VERDICT_OUTLIER = "outlier"
VERDICT_OK = "ok"
VERDICT_FEW_NODES = f"not judged: fewer than {MIN_FLEET_NODES} nodes"
VERDICT_NO_VALUE = "not judged: no value"

_INPUT_COLUMNS = ("node", "gpu", "check", "value", "higher_is_better")
_JUDGEMENT = ("fleet_median", "relative_gap", "robust_z", "verdict", "evidence")
FLEET_COLUMNS = [*_INPUT_COLUMNS[:4], *_JUDGEMENT]  # node, gpu, check, value, then the judgement


def _gpu(gpu: object) -> object:
    """The GPU index as given, None for a node-level row; a whole float (pandas turns a column
    of ints with nulls into floats) back to an int."""
    if gpu is None or pd.isna(gpu):
        return None
    if isinstance(gpu, float) and gpu.is_integer():
        return int(gpu)
    return gpu


def fleet_outliers(
    table: pd.DataFrame, k: float = OUTLIER_K, min_relative: float = MIN_RELATIVE_GAP
) -> pd.DataFrame:
    """Judge every row of `table` (columns node, gpu, check, value, higher_is_better; gpu is
    null for a node-level figure) against the fleet median of its check: an outlier when worse
    than the median by more than max(k robust sds, min_relative x |median|); the rule and why
    each term: docs/validate.md, "Fleet view". Returns one row per input row with the columns
    of FLEET_COLUMNS, in the input's order with index 0..n-1 (relative_gap and robust_z
    signed: value minus median)."""
    missing = [c for c in _INPUT_COLUMNS if c not in table.columns]
    if missing:
        raise UsageError(f"fleet table lacks the column(s) {', '.join(missing)}")
    if not (k > 0 and min_relative >= 0):
        raise UsageError("k must be > 0 and min_relative >= 0")
    table = table.reset_index(drop=True)
    records: list[dict[str, object]] = []
    positions: list[int] = []
    for check, rows in table.groupby("check", sort=True):
        directions = set(rows["higher_is_better"].astype(bool))
        if len(directions) != 1:
            raise UsageError(f"check {check}: higher_is_better differs between rows")
        higher_is_better = directions.pop()
        values = pd.to_numeric(rows["value"], errors="coerce")
        measured = values[values.notna() & values.map(math.isfinite)]
        n_nodes = rows.loc[measured.index, "node"].nunique()
        median = float(measured.median()) if len(measured) else math.nan
        robust_sd = float((measured - median).abs().median() * MAD_TO_SD) if len(measured) else 0.0
        limit = max(k * robust_sd, min_relative * abs(median)) if len(measured) else math.nan
        for index, row in rows.iterrows():
            positions.append(int(index))
            value = values.loc[index]
            gpu = _gpu(row["gpu"])
            where = f"{row['node']}" if gpu is None else f"{row['node']} GPU {gpu}"
            record: dict[str, object] = {
                "node": row["node"],
                "gpu": gpu,
                "check": check,
                "value": float(value),
                "fleet_median": median,
                "relative_gap": math.nan,
                "robust_z": math.nan,
            }
            records.append(record)
            if index not in measured.index:
                record.update(verdict=VERDICT_NO_VALUE, evidence=f"{where}: {check} has no value")
                continue
            if n_nodes < MIN_FLEET_NODES:
                few = f"{where}: {check} {plain_figure(value)}, measured on {n_nodes} node(s) only"
                record.update(verdict=VERDICT_FEW_NODES, evidence=few)
                continue
            delta = float(value) - median
            relative = delta / abs(median) if median != 0 else math.nan
            infinite = math.copysign(math.inf, delta) if delta != 0 else 0.0  # MAD 0
            z = delta / robust_sd if robust_sd > 0 else infinite
            worse_by = -delta if higher_is_better else delta
            record["relative_gap"] = relative
            record["robust_z"] = z
            record["verdict"] = VERDICT_OUTLIER if worse_by > limit else VERDICT_OK
            rel_text = format_value(relative, "change_pct") if math.isfinite(relative) else "n/a"
            record["evidence"] = (
                f"{where}: {check} {plain_figure(value)} vs fleet median {plain_figure(median)} "
                f"({rel_text}, robust z {robust_z(z)})"
            )
    result = pd.DataFrame.from_records(records, columns=FLEET_COLUMNS, index=positions)
    return result.sort_index()
