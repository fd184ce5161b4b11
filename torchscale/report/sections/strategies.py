"""Strategies side by side: for each model and world size, what every parallel layout of the
sweep costs in throughput, memory per rank and communication (docs/strategies.md).

Communication is measured differently per strategy, so each row says how, and the split is the
same everywhere: waiting for a late peer apart from the communication itself.
- ddp: the no_sync method (`communication`): exposed communication beyond the slowest rank's
  compute, and load imbalance (the others' wait for it);
- tp and fsdp x tp: steps profiled after the windows (`parallel.profiled_comm`): exposed
  transfer and waiting for peers;
- pipelines: the measured bubble beside the schedule's theory (waiting is their communication
  cost: activations and gradients between stages);
- fsdp and ddp x pp: not split (their collectives are not profiled), shown as '-'.
None when the sweep has a single layout per model and world size.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from torchscale.report.model import Block, Chart, Section, Series, Table, Text, ValueFormat
from torchscale.report.sections.context import Context, col, integer, num, records, text

GROUP = ["experiment", "model_label", "world_size", "nodes", "precision", "batch_size", "device"]


def _groups(ok: pd.DataFrame) -> list[pd.DataFrame]:
    """Cell groups that differ only in layout, those with two layouts or more."""
    if ok.empty:
        return []
    keys = [k for k in GROUP if k in ok.columns]
    found = []
    for _, group in ok.groupby(keys, sort=False, dropna=False):
        if group["layout"].nunique() >= 2:
            found.append(group)
    return found


def _mesh(row: dict[str, Any]) -> str:
    dp, tp, pp = integer(row.get("dp")), integer(row.get("tp")), integer(row.get("pp"))
    return f"{dp or 1} x {tp or 1} x {pp or 1}"


def _comm(row: dict[str, Any]) -> tuple[float | None, float | None, str]:
    """(exposed transfer, waiting for peers, method) of one cell."""
    if num(row.get("tp_exposed_comm")) is not None:
        return (
            num(row.get("tp_exposed_transfer")),
            num(row.get("tp_waiting_for_peers")),
            "profiled steps",
        )
    if num(row.get("comm_overhead")) is not None:
        return num(row.get("comm_overhead")), num(row.get("load_imbalance")), "no_sync window"
    if num(row.get("bubble_measured")) is not None:
        return None, None, "pipeline bubble"
    return None, None, "not split"


def _memory(row: dict[str, Any]) -> float | None:
    """Peak memory of the largest rank: CUDA peak allocated on GPUs, peak RSS on CPU."""
    allocated = num(row.get("peak_allocated_bytes"))
    return allocated if allocated is not None else num(row.get("peak_rss_bytes"))


def _rows(ctx: Context, group: pd.DataFrame) -> list[dict[str, Any]]:
    cells = records(group.sort_values(["layout_family", "layout"], kind="stable"))
    ddp = next((r for r in cells if r.get("layout") == "ddp"), None)
    ddp_static = num(ddp.get("static_bytes")) if ddp else None
    rows = []
    for row in cells:
        exposed, waiting, method = _comm(row)
        static = num(row.get("static_bytes"))
        rows.append(
            {
                "group": ctx.label(row, strategy=False),
                "layout": text(row.get("layout")),
                "mesh": _mesh(row),
                "global_batch": integer(row.get("global_batch")),
                "samples": num(row.get("samples_per_s")),
                "mfu": num(row.get("mfu")),
                "static": static,
                "vs_ddp": static / ddp_static if static and ddp_static else None,
                "peak": _memory(row),
                "exposed": exposed,
                "waiting": waiting,
                "method": method,
                "bubble": num(row.get("bubble_measured")),
                "bubble_theory": num(row.get("bubble_theoretical")),
            }
        )
    return rows


def _table(rows: list[dict[str, Any]]) -> Table:
    return Table(
        id="strategies-side-by-side",
        title="Strategies side by side (per model, world size, precision and batch)",
        columns=[
            col("group", "Model, batch, GPUs, precision"),
            col("layout", "Layout"),
            col("mesh", "Mesh dp x tp x pp"),
            col("global_batch", "Global batch", "int"),
            col("samples", "Samples/s", "rate"),
            col("mfu", "MFU", "ratio_pct"),
            col("static", "Static memory per rank", "bytes"),
            col("vs_ddp", "Static vs DDP", "ratio_pct"),
            col("peak", "Peak memory (largest rank)", "bytes"),
            col("exposed", "Exposed transfer", "ratio_pct"),
            col("waiting", "Waiting for peers", "ratio_pct"),
            col("method", "Communication method"),
            col("bubble", "Bubble measured", "ratio_pct"),
            col("bubble_theory", "Bubble theory", "ratio_pct"),
        ],
        rows=rows,
        note="static memory: parameters + gradients + optimizer state held by one rank; peak: "
        "CUDA peak allocated on GPUs, peak RSS on CPU ranks; exposed transfer and waiting "
        "for peers are shares of the step: no_sync window (DDP: communication beyond the "
        "slowest rank's compute, and load imbalance) or steps profiled after the windows "
        "(tensor parallelism: transfer with nothing computing, and waiting for a late peer); "
        "pipelines: 1 - busy / step per stage rank, beside (p-1)/(v*m+p-1); '-': not "
        "measured for that strategy (docs/strategies.md)",
    )


def _chart(
    chart_id: str,
    title: str,
    y_label: str,
    y_format: ValueFormat,
    rows: list[dict[str, Any]],
    key: str,
) -> Chart | None:
    series: dict[str, Series] = {}
    for row in rows:
        value = row.get(key)
        if value is None:
            continue
        line = series.setdefault(row["group"], Series(name=row["group"]))
        line.x.append(str(row["layout"]))
        line.y.append(float(value))
    if not series:
        return None
    return Chart(
        id=chart_id,
        title=title,
        kind="bar",
        x_label="layout",
        y_label=y_label,
        y_format=y_format,
        series=list(series.values()),
    )


def build(ctx: Context) -> Section | None:
    """The section, or None when no model and world size was run with two layouts."""
    groups = _groups(ctx.ok)
    if not groups:
        return None
    rows = [row for group in groups for row in _rows(ctx, group)]
    blocks: list[Block] = [
        Text(
            text="Each group below ran one model at one world size, precision and batch per "
            "device under several parallel layouts. Throughput counts samples of the global "
            "batch (dp x batch): a tensor-parallel group or a pipeline reads one batch, so at "
            "the same world size it processes fewer samples per step than DDP by design."
        ),
        _table(rows),
    ]
    charts = [
        _chart(
            "strategies-throughput", "Throughput by layout", "samples/s", "rate", rows, "samples"
        ),
        _chart(
            "strategies-memory",
            "Static memory per rank by layout",
            "bytes per rank",
            "bytes",
            rows,
            "static",
        ),
        _chart(
            "strategies-communication",
            "Exposed transfer by layout (waiting for peers excluded)",
            "share of the step",
            "ratio_pct",
            rows,
            "exposed",
        ),
    ]
    blocks += [c for c in charts if c is not None]
    return Section(id="strategies", title="Parallel strategies", blocks=blocks)
