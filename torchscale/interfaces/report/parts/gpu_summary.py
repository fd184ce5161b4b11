"""What a GPU reader decides on, on the first page of every format: per model, the cell the
summary names (else its fastest), its MFU against the stated peak, its peak reserved memory per
rank, its compile seconds and compiled/eager where both ran, and whether the GPU waited for the
host. The full tables stay in the efficiency and latency sections; this is their one row per
model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.cell_reasons import peak_basis
from torchscale.contracts.wording.names import MEANINGS, NAMES, heading, peak_text
from torchscale.contracts.wording.spell import pct_whole, tenth_seconds, tflops
from torchscale.contracts.wording.validate_workload import gain_text
from torchscale.interfaces.report.model import Table
from torchscale.interfaces.report.parts.best import by_throughput
from torchscale.interfaces.report.parts.context import (
    Context,
    col,
    first_screen_mfu,
    records,
)
from torchscale.interfaces.report.parts.words import term_column
from torchscale.offline.analysis.compile_gain import compile_gain
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.analysis.ranking import (
    FSDP_ON_ONE,
    comparable,
    why_left_out,
)

# a twin runs the same shape on the same kind of device: the GPU's peak tells an A100 from an H100
SHAPE = (
    "model_label",
    "batch_size",
    "world_size",
    "nodes",
    "precision",
    "strategy",
    "device",
    "peak_tflops_per_device",
)
LOW_MFU = 0.2  # below this, with no host-bound verdict, the step may time the host
MAX_ROWS = 8  # the first page; the efficiency section's tables hold every cell


def _on_gpu(ctx: Context) -> pd.DataFrame:
    ok = ctx.measured_pooled
    return ok[ok["device"].astype(str) != "cpu"] if "device" in ok.columns else ok.iloc[0:0]


def _compiled(row: Mapping[str, Any]) -> bool:
    return finite(row.get("compile_s")) is not None


def _compiled_vs_eager(ctx: Context, row: Mapping[str, Any]) -> Finding | None:
    """This cell against its twin of the same shape in the other mode, compiled over eager, by
    the one estimator the workload level prints too (`analysis.compile_gain`); None where no
    twin ran."""
    ok = ctx.measured_pooled
    same = ok
    for key in SHAPE:
        same = same[same[key] == row[key]]
    twins = [r for r in records(same) if _compiled(r) != _compiled(row)]
    if not twins:
        return None
    compiled, eager = (row, twins[0]) if _compiled(row) else (twins[0], row)
    return compile_gain(compiled, eager)


def _gain_text(gain: Finding | None) -> str | None:
    """The table's figure: '1.57x [1.53, 1.84]', the workload level's own; 'not measurable (2 +
    2 repeats)' where its interval is wider than the gain; 'not compared' for FSDP on one
    device (the note says why)."""
    if gain is None:
        return None
    return "not compared" if gain.code == FSDP_ON_ONE else gain_text(gain.code, gain.figures)


def _waits_for_host(row: Mapping[str, Any]) -> str:
    bound = row.get("host_bound")
    busy = finite(row.get("gpu_busy_share"))
    share = f": GPU busy {pct_whole(busy)} of the step" if busy is not None else ""
    if bound is True or bound == 1.0:
        return f"yes{share}"
    if bound is False or bound == 0.0:
        return f"no{share}"
    return "not measured"


def _row(ctx: Context, model: str, gpu: pd.DataFrame) -> dict[str, Any] | None:
    pick = by_throughput(ctx, model)
    if pick is not None and pick.row.get("device") != "cpu":
        row: Mapping[str, Any] = pick.row
    else:
        group = gpu[gpu["model_label"] == model]
        if group.empty:
            return None
        ranked = comparable(group)  # a model that ran only as FSDP on one device: that cell
        group = group if ranked.empty else ranked
        row = group.loc[pd.to_numeric(group["samples_per_s"]).idxmax()]
    result = ctx.result(row)
    memory = result.memory
    compile_s = finite(row.get("compile_s"))
    gain = _compiled_vs_eager(ctx, row)
    return {
        "model": model,
        "config": ctx.label(row, model=False),
        "mfu_text": first_screen_mfu(row),
        "peak": finite(row.get("peak_tflops_per_device")),
        "peak_reserved": memory.peak_reserved_bytes if memory else None,
        "compile": tenth_seconds(compile_s) if compile_s is not None else "eager",
        "compiled_vs_eager": _gain_text(gain),
        "_gain": gain,
        "waits_for_host": _waits_for_host(row),
        # low by its whole interval (its upper end; the value without one); no MFU: not low
        "_low_mfu": (finite(row.get("mfu_high")) or finite(row.get("mfu")) or LOW_MFU) < LOW_MFU,
        "_left_out": why_left_out(row),
        "_basis": peak_basis(compute.peak_basis, compute.peak_tflops_per_device)
        if (compute := result.compute)
        else None,
    }


def gpu_table(ctx: Context, models: list[str]) -> Table | None:
    """One row per model that ran on a GPU; None where nothing did (a CPU sweep's page is as it
    was)."""
    gpu = _on_gpu(ctx)
    if gpu.empty:
        return None
    rows = [r for r in (_row(ctx, m, gpu) for m in models) if r is not None]
    if not rows:
        return None
    more = len(rows) - MAX_ROWS
    rows = rows[:MAX_ROWS]
    bases = sorted({str(r["_basis"]) for r in rows if r["_basis"]})
    note = "MFU = achieved TFLOP/s over the peak dense TFLOP/s for the dtype that runs"
    if bases:
        note += f" ({'; '.join(bases)})"
    note += f"; {NAMES['reserved']}: {MEANINGS['reserved']}; compile: torch.compile's seconds"
    if any(r["compiled_vs_eager"] is None for r in rows):
        note += " (compiled/eager '-': no cell of the same shape ran in the other mode)"
    unmeasured = [
        r["model"] for r in rows if r["_low_mfu"] and r["waits_for_host"] == "not measured"
    ]
    if unmeasured:
        note += (
            f"; {', '.join(unmeasured)}: MFU under {pct_whole(LOW_MFU)} and whether the GPU "
            "waits for the host not measured: the step may time Python and kernel launches, "
            "not the GPU (a torchscale profile shows which)"
        )
    said: list[Finding] = []
    for why in (r["_left_out"] for r in rows if r["_left_out"] is not None):
        if why not in said:
            said.append(why)
            note += f"; {wording.say(why)}"
    if more > 0:
        note += f"; {more} more model(s) in the efficiency section"
    columns = [
        col("model", "Model"),
        term_column("config", "config"),
        col("mfu_text", "MFU ±95 %"),
        col("peak", "Peak TFLOP/s", "float"),
        col("peak_reserved", heading("reserved"), "bytes"),
        col("compile", "Compile"),
        col("compiled_vs_eager", "Compiled / eager"),
        col("waits_for_host", "GPU waits for the host"),
    ]
    for row in rows:
        for key in ("_low_mfu", "_left_out", "_basis", "_gain"):
            row.pop(key)
    return Table(id="summary-gpu", title="On the GPU", columns=columns, rows=rows, note=note)


def gpu_phrase(ctx: Context, model: str) -> str:
    """The headline's words for the same row ('; on the GPU: MFU 8.6 % [4.4, 16.5] of 989
    TFLOP/s, 2.3 GiB peak reserved per rank, compile 23.5 s'), so the first lines of every
    format carry them; '' for a model that ran on no GPU."""
    gpu = _on_gpu(ctx)
    row = _row(ctx, model, gpu) if not gpu.empty else None
    if row is None:
        return ""
    parts = []
    if row["mfu_text"]:
        measured = not row["mfu_text"].startswith("not measurable")
        peak = f" of {tflops(row['peak'])}" if row["peak"] and measured else ""
        parts.append(f"MFU {row['mfu_text']}{peak}")
    if row["peak_reserved"]:
        parts.append(peak_text(row["peak_reserved"], "reserved"))
    if row["compile"] != "eager":
        parts.append(f"compile {row['compile']}")
    if row["_gain"] is not None and row["_gain"].code != FSDP_ON_ONE:
        parts.append(wording.say(row["_gain"]))
    if row["waits_for_host"].startswith("yes"):
        busy = row["waits_for_host"][len("yes: ") :]
        parts.append("the GPU waits for the host" + (f" ({busy})" if busy else ""))
    return f"; on the GPU: {', '.join(parts)}" if parts else ""
