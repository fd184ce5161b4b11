"""Scaling: throughput against GPU count with the ideal line, and speed-up and efficiency per
model x batch x precision x strategy: weak scaling (the batch per GPU is fixed, so the global
batch grows with the GPUs), and strong scaling only where the sweep holds one global batch at
two or more GPU counts, said to be absent otherwise (docs/reporting.md, "What is in it")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from torchscale.interfaces.report.charts.axes import throughput_chart
from torchscale.interfaces.report.estimates import (
    PLUS_MINUS_NOTE,
    SUPER_LINEAR_NOTE,
    efficiency_kind,
    efficiency_text,
)
from torchscale.interfaces.report.model import (
    Block,
    Chart,
    Column,
    Section,
    Series,
    Table,
    Text,
    Unavailable,
)
from torchscale.interfaces.report.parts.context import (
    Context,
    RankUnits,
    col,
    efficiency_severity,
    integer,
    interval,
    is_reliable,
    names,
    narrow,
    rate_shown,
    records,
    repeat_fields,
    said_level,
    slug,
    throughput_fields,
)
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.analysis.scaling_efficiency import (
    GROUP_COLUMNS,
    STRONG_GROUP_COLUMNS,
    scaling_table,
)
from torchscale.offline.analysis.uncertainty import THROUGHPUT_INTERVAL


def weak_text(u: RankUnits) -> str:
    """What weak scaling is, in this report's units (GPUs, or CPU ranks)."""
    return (
        f"Every cell runs a fixed batch per {u.one} (batch_size is per device), so the global "
        f"batch grows with the {u.one} count: these sweeps are weak scaling in the global-batch "
        f"sense (the same work per {u.one}; ideal: throughput linear in {u.many}). Speed-up = "
        "thr(N) / thr(N_min); efficiency = thr(N) / (N / N_min x thr(N_min)), against the "
        f"smallest {u.one} count measured ok in the same model, batch, precision, strategy and "
        "device (100 % = linear). Throughput is global samples/s, the median over repeats, with "
        f"its 95 % interval ({THROUGHPUT_INTERVAL}). Efficiency carries the 95 % interval of the "
        "ratio of the two medians: above 100 % with 100 % inside the interval it is linear within "
        "noise; an interval wholly above 100 % is super-linear and said so (e.g. cache effects), "
        "never shown bare."
    )


def strong_text(u: RankUnits) -> str:
    return (
        f"Strong scaling: the same global batch split over more {u.many} (batch per {u.one} = "
        "global batch / N); speed-up and efficiency as above, within the same global batch."
    )


def no_strong(u: RankUnits) -> str:
    return (
        f"no model has cells with the same global batch at two or more {u.one} counts: every "
        f"sweep here keeps its batch per {u.one}, so the global batch grows with the {u.many} "
        f"(weak scaling). To measure strong scaling, add batch sizes that shrink as the {u.many} "
        "grow (e.g. batch_sizes [32, 16] with gpu_counts [1, 2])"
    )


def _group_name(ctx: Context, row: Mapping[str, Any] | pd.Series, strong: bool) -> str:
    """'b8 fp32 ddp' for weak scaling, 'global batch 32 fp32 ddp' for strong."""
    batch = f"global batch {integer(row['global_batch'])}" if strong else None
    return ctx.group_name(row, batch=batch)


def _rows(ctx: Context, table: pd.DataFrame) -> list[dict[str, Any]]:
    rows = []
    # group -> whether every cell at the group's base GPU count measured reliably
    bases = table[table["world_size"] == table["base_world_size"]]
    base_ok = bases["reliability"].eq("reliable").groupby(bases["group"]).all()
    reliable_base = {int(group): bool(value) for group, value in base_ok.items()}
    for row in records(table):
        efficiency, eff_low, eff_high = interval(row, "efficiency")
        world = integer(row["world_size"])
        base = world == integer(row["base_world_size"])
        reliable = is_reliable(row) and reliable_base.get(int(row["group"]), False)
        rows.append(
            {
                "model": str(row["model_label"]),
                "config": f"{row['precision']} {row['strategy']}"
                + (f" {row['device']}" if ctx.mixed_devices else "")
                + (f" [{row['experiment']}]" if ctx.multi else ""),
                "gpus": world,
                "nodes": integer(row["nodes"]),
                "batch_per_gpu": integer(row["batch_size"]),
                "global_batch": integer(row["global_batch"]),
                **throughput_fields(row),
                **repeat_fields(row, ctx.result(row)),
                "per_gpu": rate_shown(row, "samples_per_s_per_device"),
                "tokens_per_s": rate_shown(row, "tokens_per_s"),
                "speedup": finite(row["speedup"]),
                "efficiency": efficiency,
                "efficiency_low": eff_low,
                "efficiency_high": eff_high,
                "efficiency_text": efficiency_text(efficiency, eff_low, eff_high, base=base),
                "reliability": said_level(row["reliability"]),
                "_severity": "info"
                if base
                else efficiency_severity(efficiency, eff_low, eff_high, reliable=reliable),
            }
        )
    return rows


def _table_note(rows: list[dict[str, Any]], head: str) -> str:
    """The table's note, saying what a super-linear or above-linear row means when there is
    one (never a figure above 100 % left unexplained)."""
    kinds = {
        efficiency_kind(r["efficiency"], r["efficiency_low"], r["efficiency_high"]) for r in rows
    }
    note = f"{head}; samples/s and efficiency with {PLUS_MINUS_NOTE}"
    if "linear within noise" in kinds:
        note += "; 'linear within noise': above 100 % with 100 % inside the interval"
    if "super-linear" in kinds:
        note += f"; {SUPER_LINEAR_NOTE}"
    if "above linear" in kinds:
        note += "; above 100 % with one repeat: no interval to tell it from linear"
    return note


def _columns(rows: list[dict[str, Any]], units: RankUnits) -> list[Column]:
    columns = [col("model", "Model"), col("config", "Precision, strategy")]
    columns.append(col("gpus", units.world, "int"))
    if any((r["nodes"] or 1) > 1 for r in rows):
        columns.append(col("nodes", "Nodes", "int"))
    columns += [
        col("batch_per_gpu", units.batch, "int"),
        col("global_batch", "Global batch", "int"),
        col("samples_per_s_text", "Samples/s ±95 %"),
        col("per_gpu", f"Samples/s {units.per}", "readable"),
    ]
    if any(r["tokens_per_s"] is not None for r in rows):
        columns.append(col("tokens_per_s", "Tokens/s", "readable"))
    columns += [col("speedup", "Speed-up", "float"), col("efficiency_text", "Efficiency")]
    return columns


# what the charts read of a cell besides its label (`context.narrow`)
CHART_COLUMNS = (
    *("group", "global_batch", "ideal_samples_per_s"),
    *("samples_per_s", "samples_per_s_low", "samples_per_s_high"),
    *("efficiency", "efficiency_low", "efficiency_high"),
)


Rows = list[dict[str, Any]]


def _chart_groups(table: pd.DataFrame) -> list[Rows]:
    """The rows of each scaling group, in the group's order, as records (`scaling_table`
    numbers the groups in key order and sorts the rows by group and world size): a pandas
    group per series cost about a millisecond."""
    groups: dict[int, Rows] = {}
    for row in records(narrow(table, *CHART_COLUMNS)):
        groups.setdefault(int(row["group"]), []).append(row)
    return [groups[number] for number in sorted(groups)]


def _column(rows: Rows, key: str) -> list[float | None]:
    return [finite(row[key]) for row in rows]


def _throughput_charts(ctx: Context, table: pd.DataFrame, strong: bool) -> list[Chart]:
    charts = []
    kind = "strong" if strong else "weak"
    by_model: dict[str, list[Rows]] = {}
    for rows in _chart_groups(table):
        by_model.setdefault(rows[0]["model_label"], []).append(rows)
    for model in sorted(by_model):
        series = []
        groups = by_model[model]
        for group in groups:
            name = _group_name(ctx, group[0], strong)
            gpus = [int(row["world_size"]) for row in group]
            series.append(
                Series(
                    name=name,
                    x=list(gpus),
                    y=_column(group, "samples_per_s"),
                    low=_column(group, "samples_per_s_low"),
                    high=_column(group, "samples_per_s_high"),
                )
            )
            series.append(
                Series(
                    name=f"ideal ({name})" if len(groups) > 1 else "ideal (linear)",
                    x=list(gpus),
                    y=_column(group, "ideal_samples_per_s"),
                    style="dashed",
                    reference_for=name,
                )
            )
        charts.append(
            throughput_chart(
                f"scaling-{kind}-throughput-{slug(str(model))}",
                f"{model}: throughput vs {ctx.units.world} ({kind} scaling)",
                ctx.units.world,
                series,
                "dashed, in the colour of its series: ideal linear scaling from the smallest "
                f"{ctx.units.one} count; interval: the 95 % interval of the median over the "
                "repeats (none with one repeat)",
            )
        )
    return charts


def _efficiency_chart(ctx: Context, table: pd.DataFrame, strong: bool) -> Chart:
    kind = "strong" if strong else "weak"
    series = []
    all_gpus: set[int] = set()
    above: set[str] = set()
    for group in _chart_groups(table):
        first = group[0]
        gpus = [int(row["world_size"]) for row in group]
        all_gpus |= set(gpus)
        efficiency = _column(group, "efficiency")
        lows, highs = _column(group, "efficiency_low"), _column(group, "efficiency_high")
        series.append(
            Series(
                name=f"{first['model_label']} {_group_name(ctx, first, strong)}",
                x=list(gpus),
                y=efficiency,
                low=lows,
                high=highs,
                model=str(first["model_label"]),
            )
        )
        kinds = [
            efficiency_kind(v, lo, hi) for v, lo, hi in zip(efficiency, lows, highs, strict=True)
        ]
        above |= {k for k in kinds if k in ("linear within noise", "super-linear", "above linear")}
    ideal = sorted(all_gpus)
    series.append(Series(name="ideal", x=list(ideal), y=[1.0] * len(ideal), style="dashed"))
    note = (
        "interval: the 95 % interval of the efficiency, bootstrapped from the repeats of the "
        "cell and of its base (Welch's t on the log ratio when a side has 2-3)"
    )
    if "linear within noise" in above:
        note += "; a point above 100 % whose interval reaches 100 % is linear within noise"
    if "super-linear" in above:
        note += f"; {SUPER_LINEAR_NOTE}"
    if "above linear" in above:
        note += "; a point above 100 % without an interval (one repeat) is not shown to be above"
    return Chart(
        id=f"scaling-{kind}-efficiency",
        title=f"Scaling efficiency ({kind} scaling)",
        kind="line",
        x_label=ctx.units.world,
        y_label="efficiency",
        x_format="int",
        y_format="ratio_pct",
        x_log2=True,
        series=series,
        note=note,
    )


def _single_sizes(ctx: Context, columns: list[str], table: pd.DataFrame) -> dict[str, str]:
    """Groups measured at one GPU count: no scaling to show for them."""
    everything = scaling_table(ctx.cells, columns)
    shown = set(zip(table["experiment"], table["cell_id"], strict=True))
    keys = zip(everything["experiment"], everything["cell_id"], strict=True)
    single = everything[[key not in shown for key in keys]]
    if single.empty:
        return {}
    labels = names(ctx.label(r) for r in records(single))
    return {f"scaling of {labels}": "measured at one GPU count only"}


def build(ctx: Context) -> Section:
    """Weak scaling (always labelled as such), strong scaling where the sweep has it."""
    blocks: list[Block] = [] if ctx.ok.empty else [Text(text=weak_text(ctx.units))]
    unavailable: dict[str, str] = {}
    weak_columns = ["experiment", *GROUP_COLUMNS]
    weak = scaling_table(ctx.cells, weak_columns, min_world_sizes=2)
    if ctx.ok.empty:
        unavailable["scaling"] = ctx.nothing_measured()
    elif weak.empty:
        unavailable["weak scaling"] = (
            "every model was measured at one GPU count only: add gpu_counts to scale over"
        )
    else:
        rows = _rows(ctx, weak)
        blocks.append(
            Table(
                id="scaling-weak",
                title=f"Weak scaling (fixed batch {ctx.units.per})",
                columns=_columns(rows, ctx.units),
                rows=rows,
                note=_table_note(
                    rows,
                    "efficiency = thr(N) / (N / N_min x thr(N_min)); the same figure as the "
                    "cells' scaling_efficiency",
                ),
            )
        )
        blocks += _throughput_charts(ctx, weak, strong=False)
        blocks.append(_efficiency_chart(ctx, weak, strong=False))
        unavailable.update(_single_sizes(ctx, weak_columns, weak))
    strong_columns = ["experiment", *STRONG_GROUP_COLUMNS]
    strong = scaling_table(ctx.cells, strong_columns, min_world_sizes=2)
    if not ctx.ok.empty:
        if strong.empty:
            unavailable["strong scaling"] = no_strong(ctx.units)
        else:
            blocks.append(Text(text=strong_text(ctx.units)))
            rows = _rows(ctx, strong)
            blocks.append(
                Table(
                    id="scaling-strong",
                    title="Strong scaling (fixed global batch)",
                    columns=_columns(rows, ctx.units),
                    rows=rows,
                    note=_table_note(rows, "efficiency within the same global batch"),
                )
            )
            blocks += _throughput_charts(ctx, strong, strong=True)
            blocks.append(_efficiency_chart(ctx, strong, strong=True))
    if unavailable:
        blocks.append(Unavailable(items=unavailable))
    return Section(id="scaling", title="Scaling", blocks=blocks)
