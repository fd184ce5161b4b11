"""Efficiency: compute (achieved TFLOP/s, MFU), where the step goes (each cell's diagnosis'
split, in the terminal's words), memory and cost (docs/reporting.md, "What is in it"). A part
inside its noise reads "not measurable", never a negative time or a share above 100 %; the chart
draws only splits whose parts add up to the step."""

from __future__ import annotations

from typing import Any

import pandas as pd

from torchscale.contracts.flop_convention import MFU_CONVENTION
from torchscale.contracts.schema.diagnosis import PART_NAMES, Diagnosis
from torchscale.contracts.wording import why
from torchscale.contracts.wording.cell_reasons import compute_part, peak_basis
from torchscale.contracts.wording.figures import seconds_text, share_text
from torchscale.contracts.wording.names import product_of
from torchscale.contracts.wording.names import title as peak_title
from torchscale.interfaces.report.charts.data import category_models
from torchscale.interfaces.report.estimates import PLUS_MINUS_NOTE
from torchscale.interfaces.report.model import Block, Chart, Section, Series, Table, Unavailable
from torchscale.interfaces.report.parts.context import (
    Context,
    RankUnits,
    by_reason,
    col,
    fmt,
    integer,
    mfu_text,
    names,
    present,
    rate_text_value,
    records,
)
from torchscale.interfaces.report.parts.tables import NO_PRICE
from torchscale.interfaces.report.parts.words import footnote, plain, term_column
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.analysis.trace.gpu_busy import launch_time_verdict

# the parts of the step in plain words (headings and legends); their technical terms are
# the tooltip and the footnote (parts.words)
PART_LABELS = {name: plain(name) for name in PART_NAMES}
INSIDE_NOISE = "parts not measurable above noise (together)"
EXPOSED_BAD = 0.3  # an exposed-transfer share worth a red row
SUM_TOLERANCE = 1e-9  # shares computed as the rest of the step add up to 1 up to rounding
MEMORY_PARTS = (  # the stacked parts of a rank's peak allocated: (legend, row key)
    ("parameters", "parameter_bytes"),
    ("gradients", "gradient_bytes"),
    ("optimizer state", "optimizer_bytes"),
    ("non-static peak (activations, buffers)", "non_static"),
)
# one GPU has no peer to exchange gradients with: what its grad-sync phase took is the phase's
# own launch and timer cost, which the split counts as exposed transfer
ONE_GPU_TRANSFER_NOTE = (
    "A run on one GPU or rank has no peer: its 'communication not overlapped' is the time its "
    "gradient-sync phase took without exchanging anything (launches and timers), not "
    "communication a second GPU would wait for. "
)


def _compute_table(ctx: Context) -> tuple[list[Block], dict[str, str]]:
    units = ctx.units
    rows, missing = [], []
    for row in records(ctx.ok):
        result = ctx.result(row)
        compute = result.compute
        rows.append(
            {
                "cell": ctx.label(row),
                "gpus": integer(row["world_size"]),
                "flops_per_step": finite(row["flops_per_step"]),
                "tflops": finite(row["tflops_per_device"]),
                "peak": finite(row["peak_tflops_per_device"]),
                "basis": peak_basis(compute.peak_basis, compute.peak_tflops_per_device)
                if compute
                else None,
                "mfu": finite(row["mfu"]),
                "mfu_low": finite(row["mfu_low"]),
                "mfu_high": finite(row["mfu_high"]),
                "mfu_text": mfu_text(row),
                "measured_peak": compute.measured_peak_tflops_per_device if compute else None,
                "mfu_measured": compute.mfu_measured if compute else None,
            }
        )
        for metric, key in (("MFU", "mfu"), ("achieved TFLOP/s", "achieved_tflops")):
            value = finite(row["mfu"]) if key == "mfu" else finite(row["tflops_per_device"])
            if value is None:
                reason = why(result.unavailable.get(key)) or why(result.unavailable.get("flops"))
                missing.append((metric, ctx.label(row), reason or "not recorded in the result"))
    columns = [
        col("cell", "Cell"),
        col("gpus", units.world, "int"),
        col("flops_per_step", "FLOPs per step per rank", "float"),
        col("tflops", "Achieved TFLOP/s per device", "float"),
        col("peak", "Peak TFLOP/s used", "float"),
        col("basis", "Peak basis"),
        col("mfu_text", "MFU ±95 %"),
    ]
    note = (
        "FLOPs counted by FlopCounterMode (forward + backward of one step); achieved = "
        "FLOPs per step x steps/s over the timed windows; MFU = achieved / the peak dense "
        "TFLOP/s of the device for the dtype that runs (the basis column says which), with "
        f"{PLUS_MINUS_NOTE} (it scales with throughput). " + MFU_CONVENTION
    )
    if not any(r["mfu_measured"] is not None for r in rows):
        for r in rows:  # no node measured by validate perf: the table as it always was
            del r["measured_peak"], r["mfu_measured"]
    else:
        columns += [
            col("measured_peak", "Measured peak TFLOP/s", "float"),
            col("mfu_measured", "MFU vs measured peak", "ratio_pct"),
        ]
        note += (
            "; MFU vs measured peak = achieved / the best matmul `torchscale validate --level "
            "perf` measured on the cell's nodes (what the GPU can really do)"
        )
    table = Table(
        id="efficiency-compute",
        title="Compute: achieved TFLOP/s and MFU",
        columns=columns,
        rows=rows,
        note=note,
    )
    items: dict[str, str] = {}
    for metric in ("MFU", "achieved TFLOP/s"):
        found = ((c, r) for m, c, r in missing if m == metric)
        items.update(by_reason(found, metric, len(ctx.ok)))
    return [table], items


def _attribution_row(ctx: Context, row: dict[str, Any], model: Diagnosis) -> dict[str, Any]:
    """One cell's parts as its diagnosis holds them: the raw share and interval of each, and
    the text the terminal prints for it (`figures.share_text`)."""
    out: dict[str, Any] = {
        "cell": ctx.label(row),
        "model": str(row["model_label"]),
        "gpus": integer(row["world_size"]),
        "step_s": model.step_s.value,
        "step_text": seconds_text(model.step_s),
        "source": model.source,
    }
    for part in model.parts:
        out[f"{part.name}_share"] = part.share.value
        out[f"{part.name}_share_low"] = part.share.low
        out[f"{part.name}_share_high"] = part.share.high
        out[f"{part.name}_s"] = part.seconds.value
        out[f"{part.name}_text"] = share_text(part.share)
    launch = launch_time_verdict(ctx.result(row).host_bound)  # its compute is launch time
    if launch is not None and "compute_text" in out:
        out["compute_text"] = compute_part(launch.figures, out["compute_text"])
    exposed = out.get("exposed_transfer_share")
    out["_severity"] = "bad" if exposed is not None and exposed >= EXPOSED_BAD else "info"
    return out


def _attribution_table(rows: list[dict[str, Any]], units: RankUnits) -> Table:
    decided = (
        [col("source", "Decided by")] if any(r["source"] != "phase timers" for r in rows) else []
    )
    note = (
        "every step of every rank = compute (its own forward, backward and optimizer) + "
        "data (waiting for its batch) + waiting for peers (for the slowest rank: load "
        "imbalance) + exposed transfer (communication nothing hid: the smallest grad-sync wait "
        "of any rank at that step) + rest (between the phases); means over ranks and steps, "
        "so the five shares add up to the step; [low, high]: the 95 % interval of a block "
        "bootstrap over the steps, as the terminal prints it; 'not measurable': the interval "
        "reaches 0, the share could be none (its upper end in brackets). "
    )
    if any(r["gpus"] == 1 and (r.get("exposed_transfer_share") or 0) > 0 for r in rows):
        note += ONE_GPU_TRANSFER_NOTE
    return Table(
        id="efficiency-step-model",
        title="Where the step goes (each run's diagnosis, shares with 95 % intervals)",
        columns=[
            col("cell", "Cell"),
            col("gpus", units.world, "int"),
            col("step_text", "Step (mean)"),
            *(term_column(f"{name}_text", name) for name in PART_NAMES),
            *decided,
        ],
        rows=rows,
        note=note + footnote(PART_NAMES),
    )


def _chart_noise(row: dict[str, Any]) -> tuple[bool, float | None]:
    """(whether the row's split can be drawn, its segment of parts inside their noise). Drawn:
    every share it has lies in [0, 1] and they add up to the step, or to less where the parts
    without a share are inside their noise (an upper bound: their sum is the rest). A part with
    neither a share nor a bound is drawn as nothing, so only where the others fill the step."""
    shares = [row.get(f"{name}_share") for name in PART_NAMES]
    known = [v for v in shares if v is not None]
    if any(not 0.0 <= v <= 1.0 for v in known) or sum(known) > 1.0 + SUM_TOLERANCE:
        return False, None
    missing = [name for name, v in zip(PART_NAMES, shares, strict=True) if v is None]
    bounded = [name for name in missing if row.get(f"{name}_share_high") is not None]
    if bounded:  # the rest of the step is the parts inside their noise, together
        return len(bounded) == len(missing) or sum(known) >= 1.0 - SUM_TOLERANCE, max(
            0.0, 1.0 - sum(known)
        )
    return sum(known) >= 1.0 - SUM_TOLERANCE, None


def _attribution_chart(rows: list[dict[str, Any]]) -> Chart | None:
    """Stacked shares that add up to 1: the measurable parts, and the parts inside their noise
    together as one bar segment (their sum is known even where each part is not); a row whose
    parts cannot add up to the step is left out, named in the note."""
    drawn, left_out, noise = [], [], []
    for r in rows:
        ok, segment = _chart_noise(r)
        if ok:
            drawn.append(r)
            noise.append(segment)
        else:
            left_out.append(r["cell"])
    x: list[float | int | str] = [r["cell"] for r in drawn]
    if not x:
        return None
    series = []
    for name in PART_NAMES:
        values = [r.get(f"{name}_share") for r in drawn]
        if any(v is not None for v in values):
            series.append(Series(name=PART_LABELS[name], x=list(x), y=values))
    if any(v is not None for v in noise):
        series.append(Series(name=INSIDE_NOISE, x=list(x), y=noise))
    note = (
        "the one model of the step: the five parts add up to the mean step by "
        "construction, so every bar reaches 100 %; parts whose interval reaches 0 are drawn "
        "together as one segment, their sum (each one's interval is in the table). "
    )
    if left_out:
        note += f"Left out, their parts do not add up to the step: {names(left_out)}. "
    return Chart(
        id="efficiency-step-split",
        title="Where the step goes",
        kind="stacked_bar",
        x_label="cell",
        y_label="share of the step",
        y_format="ratio_pct",
        series=series,
        category_models=category_models((r["cell"], r["model"]) for r in drawn),
        note=note + footnote(PART_NAMES),
    )


def _comm_rows(ctx: Context) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """(a row per cell with a split; unavailable: why a cell of two ranks or more has none)."""
    rows, missing = [], []
    for row in records(ctx.ok):
        result = ctx.result(row)
        diagnosis = result.diagnosis
        if diagnosis is not None and _measured(diagnosis):
            rows.append(_attribution_row(ctx, row, diagnosis))
        elif (integer(row["world_size"]) or 0) >= 2:
            parts = diagnosis.parts if diagnosis is not None else []
            reason = (
                why(result.unavailable.get("comm_overhead"))
                or next((why(p.share.reason) for p in parts if p.share.reason), None)
                or why(result.unavailable.get("diagnosis"))
            )
            missing.append((ctx.label(row), reason or "not measured for this cell"))
    return rows, by_reason(missing, "exposed communication")


def _measured(diagnosis: Diagnosis) -> bool:
    """Whether any part of the split has a share or an upper bound."""
    return any(p.share.value is not None or p.share.high is not None for p in diagnosis.parts)


def _comm_blocks(ctx: Context) -> tuple[list[Block], dict[str, str]]:
    """The diagnoses' table and chart."""
    rows, unavailable = _comm_rows(ctx)
    blocks: list[Block] = []
    if rows:
        blocks.append(_attribution_table(rows, ctx.units))
        blocks += present(_attribution_chart(rows))
    elif not unavailable:  # no cell of two ranks or more (each one without a row says why)
        unavailable["exposed communication and load imbalance"] = (
            "every cell ran on one rank: no gradient communication to expose"
        )
    return blocks, unavailable


def _memory(ctx: Context) -> tuple[list[Block], dict[str, str]]:
    units = ctx.units
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
            reason = why(result.unavailable.get("peak_allocated")) or "not recorded in the result"
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
                    col("gpus", units.world, "int"),
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
                title=f"{peak_title('allocated')}: static state and the rest",
                kind="stacked_bar",
                x_label="cell",
                y_label="bytes per rank",
                y_format="bytes",
                series=[
                    Series(name=name, x=list(x), y=[r[key] for r in with_peak])
                    for name, key in MEMORY_PARTS
                ],
            )
        )
    items: dict[str, str] = {}
    for metric in ("memory", "peak allocated and non-static memory"):
        found = ((c, r) for m, c, r in missing if m == metric)
        items.update(by_reason(found, metric, len(ctx.ok)))
    return blocks, items


def _cost(ctx: Context) -> tuple[list[Block], dict[str, str]]:
    units = ctx.units
    priced = ctx.priced
    if priced is None:
        return [], {"cost per million samples and tokens": NO_PRICE}
    if priced.empty:
        return [], {"cost per million samples and tokens": "no cell finished ok"}
    rows = [
        {
            "cell": ctx.label(row),
            "gpus": integer(row["world_size"]),
            "price": finite(row["price_per_gpu_hour"]),
            "samples_per_s": rate_text_value(row, "samples_per_s"),
            "tokens_per_s": rate_text_value(row, "tokens_per_s"),
            "gpu_hours": finite(row["gpu_hours_per_m_samples"]),
            "cost_samples": finite(row["cost_per_m_samples"]),
            "cost_tokens": finite(row["cost_per_m_tokens"]),
        }
        for row in records(priced)
    ]
    prices = sorted(set(pd.Series(priced["price_per_gpu_hour"]).astype(float)))
    columns = [
        col("cell", "Cell"),
        col("gpus", units.world, "int"),
        col("samples_per_s", "Samples/s", "readable"),
        col("gpu_hours", f"{units.one}-hours / M samples", "float"),
        col("cost_samples", "$ / M samples", "money"),
    ]
    if any(r["tokens_per_s"] is not None for r in rows):
        columns[3:3] = [col("tokens_per_s", "Tokens/s", "readable")]
        columns.append(col("cost_tokens", "$ / M tokens", "money"))
    if len(prices) > 1:  # result sets at different prices (machines): each row says its own
        columns[2:2] = [col("price", f"$ / {units.one}-hour", "money")]
        at = f"at each result set's price per {units.one}-hour"
    else:
        at = f"at {fmt(prices[0], 'money')} per {units.one}-hour"
    u = units
    note = f"{at}; {u.one}-hours = {product_of(u.many, 'time')} (every {u.one} of the job is paid)"
    if units.world == "Ranks":  # GPU and CPU cells in one report
        note += "; a rank is a GPU on GPU cells and one process on CPU cells"
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
        unavailable["efficiency"] = ctx.nothing_measured()
        return Section(id="efficiency", title="Efficiency", blocks=[Unavailable(items=unavailable)])
    for part in (_compute_table, _comm_blocks, _memory, _cost):
        found, missing = part(ctx)
        blocks += found
        unavailable.update(missing)
    if unavailable:
        blocks.append(Unavailable(items=unavailable))
    return Section(id="efficiency", title="Efficiency", blocks=blocks)
