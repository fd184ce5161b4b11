"""Efficiency: compute (achieved TFLOP/s, MFU against the stated peak), where the synchronised
step goes (compute, load imbalance, exposed communication), memory (static state against the
rest of the peak), and cost per million samples / tokens when a price is given."""

from __future__ import annotations

from typing import Any

import pandas as pd

from torchscale.report.model import Block, Chart, Section, Series, Table, Unavailable
from torchscale.report.sections.context import (
    Context,
    by_reason,
    col,
    fmt,
    integer,
    num,
    records,
)
from torchscale.report.sections.summary import NO_PRICE, priced_cells


def _compute_table(ctx: Context) -> tuple[Table, dict[str, str]]:
    rows, missing = [], []
    for row in records(ctx.ok):
        result = ctx.result(row)
        compute = result.compute
        rows.append(
            {
                "cell": ctx.label(row),
                "gpus": integer(row["world_size"]),
                "flops_per_step": num(row["flops_per_step"]),
                "tflops": num(row["tflops_per_device"]),
                "peak": num(row["peak_tflops_per_device"]),
                "basis": compute.peak_basis if compute else None,
                "mfu": num(row["mfu"]),
            }
        )
        for metric, key in (("MFU", "mfu"), ("achieved TFLOP/s", "achieved_tflops")):
            value = num(row["mfu"]) if key == "mfu" else num(row["tflops_per_device"])
            if value is None:
                reason = result.unavailable.get(key) or result.unavailable.get("flops")
                missing.append((metric, ctx.label(row), reason or "not recorded in the result"))
    table = Table(
        id="efficiency-compute",
        title="Compute: achieved TFLOP/s and MFU",
        columns=[
            col("cell", "Cell"),
            col("gpus", "GPUs", "int"),
            col("flops_per_step", "FLOPs per step per rank", "float"),
            col("tflops", "Achieved TFLOP/s per device", "float"),
            col("peak", "Peak TFLOP/s used", "float"),
            col("basis", "Peak basis"),
            col("mfu", "MFU", "ratio_pct"),
        ],
        rows=rows,
        note="FLOPs counted by FlopCounterMode (forward + backward of one step); achieved = "
        "FLOPs per step x steps/s over the timed windows; MFU = achieved / the peak dense "
        "TFLOP/s of the device for the dtype that runs (the basis column says which)",
    )
    items: dict[str, str] = {}
    for metric in ("MFU", "achieved TFLOP/s"):
        found = ((c, r) for m, c, r in missing if m == metric)
        items.update(by_reason(found, metric, len(ctx.ok)))
    return table, items


def _comm_rows(ctx: Context) -> tuple[list[dict[str, Any]], dict[str, str]]:
    rows, missing = [], []
    for row in records(ctx.ok):
        if (integer(row["world_size"]) or 0) < 2:
            continue
        result = ctx.result(row)
        comm = result.communication
        share = num(row["comm_overhead"])
        rows.append(
            {
                "cell": ctx.label(row),
                "gpus": integer(row["world_size"]),
                "step_s": num(comm.step_time_s) if comm else num(row["step_p50_s"]),
                "slowest_s": num(comm.slowest_compute_s) if comm else None,
                "slowest_rank": comm.slowest_compute_rank if comm else None,
                "exposed_s": num(comm.exposed_comm_s) if comm else None,
                "comm_overhead": share,
                "load_imbalance": num(row["load_imbalance"]),
                "sync_overhead": num(row["sync_overhead"]),
                "_severity": "bad" if share is not None and share >= 0.3 else "info",
            }
        )
        if share is None:
            reason = result.unavailable.get("comm_overhead", "not measured for this cell")
            missing.append((ctx.label(row), reason))
    return rows, by_reason(missing, "exposed communication")


def _split_chart(rows: list[dict[str, Any]]) -> Chart | None:
    usable = [r for r in rows if r["comm_overhead"] is not None and r["load_imbalance"] is not None]
    if not usable:
        return None
    x: list[float | int | str] = [r["cell"] for r in usable]
    imbalance = [r["load_imbalance"] for r in usable]
    exposed = [r["comm_overhead"] for r in usable]
    compute = [1.0 - i - e for i, e in zip(imbalance, exposed, strict=True)]
    return Chart(
        id="efficiency-step-split",
        title="Where the synchronised step goes",
        kind="stacked_bar",
        x_label="cell",
        y_label="share of the step",
        y_format="ratio_pct",
        series=[
            Series(name="compute (mean over ranks)", x=list(x), y=compute),
            Series(name="load imbalance (wait for the slowest rank)", x=list(x), y=imbalance),
            Series(name="exposed communication", x=list(x), y=exposed),
        ],
        note="per rank T = its compute + (slowest compute - its compute) + (T - slowest "
        "compute); averaged over ranks the three shares add up to 1",
    )


def _memory(ctx: Context) -> tuple[list[Block], dict[str, str]]:
    rows, missing, with_peak = [], [], []
    for row in records(ctx.ok):
        result = ctx.result(row)
        memory = result.memory
        if memory is None:
            missing.append(("memory", ctx.label(row), "not recorded in the result"))
            continue
        static = memory.parameter_bytes + memory.gradient_bytes + memory.optimizer_state_bytes
        entry: dict[str, Any] = {
            "cell": ctx.label(row),
            "gpus": integer(row["world_size"]),
            "parameters": result.parameters,
            "parameter_bytes": memory.parameter_bytes,
            "gradient_bytes": memory.gradient_bytes,
            "optimizer_bytes": memory.optimizer_state_bytes,
            "static_bytes": static,
            "peak_allocated": memory.peak_allocated_bytes,
            "non_static": memory.non_static_peak_bytes,
            "peak_reserved": memory.peak_reserved_bytes,
            "peak_rss": memory.peak_rss_bytes,
        }
        rows.append(entry)
        if memory.peak_allocated_bytes is None:
            reason = result.unavailable.get("peak_allocated", "not recorded in the result")
            missing.append(("peak allocated and non-static memory", ctx.label(row), reason))
        else:
            with_peak.append(entry)
    blocks: list[Block] = []
    if rows:
        blocks.append(
            Table(
                id="efficiency-memory",
                title="Memory per rank",
                columns=[
                    col("cell", "Cell"),
                    col("gpus", "GPUs", "int"),
                    col("parameters", "Parameters", "int"),
                    col("static_bytes", "Static (params + grads + optimizer)", "bytes"),
                    col("parameter_bytes", "Parameter memory", "bytes"),
                    col("gradient_bytes", "Gradient memory", "bytes"),
                    col("optimizer_bytes", "Optimizer state", "bytes"),
                    col("non_static", "Non-static peak (activations, buffers)", "bytes"),
                    col("peak_allocated", "Peak allocated", "bytes"),
                    col("peak_reserved", "Peak reserved", "bytes"),
                    col("peak_rss", "Peak RSS (largest rank)", "bytes"),
                ],
                rows=rows,
                note="static bytes are exact, from the tensors each rank holds (local shards "
                "under FSDP); non-static peak = peak allocated - static (CUDA only): "
                "activations plus gradient buckets (DDP) or unsharded parameters and "
                "communication buffers (FSDP); peak RSS includes the interpreter and libraries",
            )
        )
    if with_peak:
        x: list[float | int | str] = [r["cell"] for r in with_peak]
        blocks.append(
            Chart(
                id="efficiency-memory-split",
                title="Peak memory: static state and the rest",
                kind="stacked_bar",
                x_label="cell",
                y_label="bytes per rank",
                y_format="bytes",
                series=[
                    Series(
                        name="parameters", x=list(x), y=[r["parameter_bytes"] for r in with_peak]
                    ),
                    Series(name="gradients", x=list(x), y=[r["gradient_bytes"] for r in with_peak]),
                    Series(
                        name="optimizer state",
                        x=list(x),
                        y=[r["optimizer_bytes"] for r in with_peak],
                    ),
                    Series(
                        name="non-static peak (activations, buffers)",
                        x=list(x),
                        y=[r["non_static"] for r in with_peak],
                    ),
                ],
            )
        )
    items: dict[str, str] = {}
    for metric in ("memory", "peak allocated and non-static memory"):
        found = ((c, r) for m, c, r in missing if m == metric)
        items.update(by_reason(found, metric, len(ctx.ok)))
    return blocks, items


def _cost(ctx: Context) -> tuple[list[Block], dict[str, str]]:
    priced = priced_cells(ctx)
    if priced is None:
        return [], {"cost per million samples and tokens": NO_PRICE}
    if priced.empty:
        return [], {"cost per million samples and tokens": "no cell finished ok"}
    rows = []
    for row in records(priced):
        rows.append(
            {
                "cell": ctx.label(row),
                "gpus": integer(row["world_size"]),
                "price": num(row["price_per_gpu_hour"]),
                "samples_per_s": num(row["samples_per_s"]),
                "tokens_per_s": num(row["tokens_per_s"]),
                "gpu_hours": num(row["gpu_hours_per_m_samples"]),
                "cost_samples": num(row["cost_per_m_samples"]),
                "cost_tokens": num(row["cost_per_m_tokens"]),
            }
        )
    prices = sorted(set(pd.Series(priced["price_per_gpu_hour"]).astype(float)))
    columns = [
        col("cell", "Cell"),
        col("gpus", "GPUs", "int"),
        col("samples_per_s", "Samples/s", "rate"),
        col("gpu_hours", "GPU-hours / M samples", "float"),
        col("cost_samples", "$ / M samples", "money"),
    ]
    if any(r["tokens_per_s"] is not None for r in rows):
        columns[3:3] = [col("tokens_per_s", "Tokens/s", "rate")]
        columns.append(col("cost_tokens", "$ / M tokens", "money"))
    if len(prices) > 1:  # result sets at different prices (machines): each row says its own
        columns[2:2] = [col("price", "$ / GPU-hour", "money")]
        at = "at each result set's price per GPU-hour"
    else:
        at = f"at {fmt(prices[0], 'money')} per GPU-hour"
    devices = set(pd.Series(priced["device"]).astype(str))
    note = f"{at}; GPU-hours = GPUs x time (every GPU of the job is paid)"
    if "cpu" in devices:
        note += "; on CPU cells a 'GPU' is one rank"
    return [
        Table(
            id="efficiency-cost",
            title="Cost per million samples and tokens",
            columns=columns,
            rows=rows,
            note=note,
        )
    ], {}


def build(ctx: Context) -> Section:
    """Compute, communication split, memory and cost; Unavailable with reasons for the rest."""
    blocks: list[Block] = []
    unavailable: dict[str, str] = {}
    if ctx.ok.empty:
        unavailable["efficiency"] = "no sweep cell finished ok: nothing measured"
        return Section(id="efficiency", title="Efficiency", blocks=[Unavailable(items=unavailable)])
    table, missing = _compute_table(ctx)
    blocks.append(table)
    unavailable.update(missing)
    rows, missing = _comm_rows(ctx)
    if rows:
        blocks.append(
            Table(
                id="efficiency-comm",
                title="Communication and load imbalance",
                columns=[
                    col("cell", "Cell"),
                    col("gpus", "GPUs", "int"),
                    col("step_s", "Step (T, median)", "seconds"),
                    col("slowest_s", "Slowest compute", "seconds"),
                    col("slowest_rank", "Slowest rank", "int"),
                    col("exposed_s", "Exposed comm", "seconds"),
                    col("comm_overhead", "Exposed comm share", "ratio_pct"),
                    col("load_imbalance", "Load imbalance", "ratio_pct"),
                    col("sync_overhead", "Sync overhead (pooled)", "ratio_pct"),
                ],
                rows=rows,
                note="exposed communication = (T - slowest rank's compute under no_sync) / T; "
                "load imbalance = mean over ranks of (slowest compute - their compute) / T; sync "
                "overhead = 1 - pooled no_sync median / T (the two together)",
            )
        )
        chart = _split_chart(rows)
        if chart is not None:
            blocks.append(chart)
        unavailable.update(missing)
    else:
        unavailable["exposed communication and load imbalance"] = (
            "every cell ran on one rank: no gradient communication to expose"
        )
    memory_blocks, missing = _memory(ctx)
    blocks += memory_blocks
    unavailable.update(missing)
    cost_blocks, missing = _cost(ctx)
    blocks += cost_blocks
    unavailable.update(missing)
    if unavailable:
        blocks.append(Unavailable(items=unavailable))
    return Section(id="efficiency", title="Efficiency", blocks=blocks)
