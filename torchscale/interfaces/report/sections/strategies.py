"""Strategies side by side: what every parallel layout of a model at one world size costs in
throughput, memory per rank and communication (docs/strategies.md, "In the report"). Communication
is measured differently per strategy (a diagnosis, profiled steps, a pipeline's bubble, or not
split: '-'), so each row says how; the split is the same everywhere: waiting for a late peer apart
from the communication itself. None when the sweep has a single layout per model and world size."""

from __future__ import annotations

from typing import Any

import pandas as pd

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.flop_convention import MFU_CONVENTION
from torchscale.contracts.schema.diagnosis import Diagnosis
from torchscale.contracts.wording.figures import share_text
from torchscale.contracts.wording.names import MEANINGS, NAMES, heading
from torchscale.interfaces.report.charts.axes import spans_decades
from torchscale.interfaces.report.charts.data import category_models
from torchscale.interfaces.report.model import (
    Block,
    Chart,
    Section,
    Series,
    Table,
    Text,
    ValueFormat,
)
from torchscale.interfaces.report.parts.context import (
    Context,
    RankUnits,
    col,
    fmt,
    integer,
    mfu_text,
    rate_text_value,
    records,
    text,
)
from torchscale.interfaces.report.parts.words import footnote, plain, term_column
from torchscale.offline.analysis.diagnosis.findings import MIN_COST_FRACTION
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.analysis.ranking import comparable, left_out_findings

LARGEST = "(largest rank)"

GROUP = ["experiment", "model_label", "world_size", "nodes", "precision", "batch_size", "device"]


def _groups(ok: pd.DataFrame) -> list[pd.DataFrame]:
    """Cell groups that differ only in layout, those with two layouts or more, of the cells
    that may be compared (FSDP on one device is not: `ranking.comparable`)."""
    ok = comparable(ok)
    if ok.empty:
        return []
    keys = [k for k in GROUP if k in ok.columns]
    groups = ok.groupby(keys, sort=False, dropna=False)
    return [group for _, group in groups if group["layout"].nunique() >= 2]


Share = float | str | None  # a share, or text saying it is not measurable


def _comm(
    row: dict[str, Any], diagnosis: Diagnosis | None
) -> tuple[Share, Share, str, float | None]:
    """(exposed transfer, waiting for peers, method, exposed share to chart) of one cell: the run's
    diagnosis where it has one (its parts in the terminal's words, with their intervals), else the
    figures of cells it does not cover; a number to chart only where it is measurable."""
    exposed_part = diagnosis.part("exposed_transfer") if diagnosis is not None else None
    waiting_part = diagnosis.part("wait_for_peers") if diagnosis is not None else None
    if diagnosis is not None and exposed_part is not None and waiting_part is not None:
        share = exposed_part.share
        charted = share.value if share.measurable else None
        method = f"diagnosis ({diagnosis.source})"
        return share_text(share), share_text(waiting_part.share), method, charted
    if finite(row.get("tp_exposed_comm")) is not None:  # collectives inside forward/backward
        exposed = finite(row.get("tp_exposed_transfer"))
        return exposed, finite(row.get("tp_waiting_for_peers")), "profiled steps", exposed
    if finite(row.get("bubble_measured")) is not None:
        return None, None, "pipeline bubble", None
    return None, None, "not split", None


def _last(value: Any) -> tuple[bool, str]:
    """A sort key that puts a missing value last, as a frame's sort does."""
    return (bool(pd.isna(value)), str(value))


def _rows(ctx: Context, group: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # sorted as records: a frame's sort costs ~0.3 ms a group, most of this section at 500
    # cells (the same order: stable, a missing value last)
    cells = sorted(group, key=lambda r: (_last(r["layout_family"]), _last(r["layout"])))
    ddp = next((r for r in cells if r.get("layout") == "ddp"), None)
    ddp_static = finite(ddp.get("static_bytes")) if ddp else None
    rows = []
    for row in cells:
        exposed, waiting, method, charted = _comm(row, ctx.result(row).diagnosis)
        static = finite(row.get("static_bytes"))
        rows.append(
            {
                "group": ctx.label(row, strategy=False),
                "model": str(row.get("model_label")),
                "layout": text(row.get("layout")),
                "mesh": " x ".join(str(integer(row.get(k)) or 1) for k in ("dp", "tp", "pp")),
                "global_batch": integer(row.get("global_batch")),
                "samples": rate_text_value(row, "samples_per_s"),
                "mfu": finite(row.get("mfu")),
                "mfu_text": mfu_text(row),
                "static": static,
                "vs_ddp": static / ddp_static if static and ddp_static else None,
                # each peak under its own name (contracts/wording/names.py): a CPU
                # rank's RSS is no allocator's peak
                "peak_allocated": finite(row.get("peak_allocated_bytes")),
                "peak_rss": None
                if finite(row.get("peak_allocated_bytes")) is not None
                else finite(row.get("peak_rss_bytes")),
                "exposed": exposed,
                "exposed_share": charted,
                "waiting": waiting,
                "method": method,
                "bubble": finite(row.get("bubble_measured")),
                "bubble_theory": finite(row.get("bubble_theoretical")),
            }
        )
    return rows


def _table(rows: list[dict[str, Any]], units: RankUnits, *, left_out: list[Finding]) -> Table:
    """`left_out`: why cells are not compared (FSDP on one device, ranks sharing a GPU), as
    the note says."""
    one = "".join(f"{wording.say(f)}. " for f in left_out)
    return Table(
        id="strategies-side-by-side",
        title="Strategies side by side (per model, world size, precision and batch)",
        columns=[
            col("group", f"Model, batch, {units.world}, precision"),
            col("layout", "Layout"),
            col("mesh", "Mesh dp x tp x pp"),
            col("global_batch", "Global batch", "int"),
            col("samples", "Samples/s", "readable"),
            col("mfu_text", "MFU"),
            col("static", "Static memory per rank", "bytes"),
            col("vs_ddp", "Static vs DDP", "ratio_pct"),
            col("peak_allocated", heading("allocated", LARGEST), "bytes"),
            col("peak_rss", heading("rss", LARGEST), "bytes"),
            term_column("exposed", "exposed_transfer", "ratio_pct"),
            term_column("waiting", "wait_for_peers", "ratio_pct"),
            col("method", "Communication method"),
            col("bubble", "Bubble measured", "ratio_pct"),
            col("bubble_theory", "Bubble theory", "ratio_pct"),
        ],
        rows=rows,
        note=one + "static memory: parameters + gradients + optimizer state held by one rank; "
        f"{NAMES['allocated']}: {MEANINGS['allocated']}; {NAMES['rss']} (CPU ranks): "
        f"{MEANINGS['rss']}; exposed transfer and waiting "
        "for peers are shares of the step: no_sync window (DDP: communication beyond the "
        "slowest rank's compute, and load imbalance) or steps profiled after the windows "
        "(tensor parallelism: transfer with nothing computing, and waiting for a late peer); "
        "pipelines: 1 - busy / step per stage rank, beside (p-1)/(v*m+p-1); '-': not "
        "measured for that strategy (docs/strategies.md); a diagnosis gives its shares in the "
        "terminal's words, [low, high] their 95 % interval, 'not measurable' inside the "
        "noise. " + MFU_CONVENTION + " " + footnote(["exposed_transfer", "wait_for_peers"]),
    )


def _chart(
    chart_id: str,
    title: str,
    y_label: str,
    y_format: ValueFormat,
    rows: list[dict[str, Any]],
    key: str,
) -> Chart | None:
    # a series per layout (a handful) over the groups (hundreds in a big sweep): a legend of
    # layouts stays short, and the groups are categories the chart limits can cut
    series: dict[str, Series] = {}
    for row in rows:
        value = row.get(key)
        if value is None:
            continue
        layout = str(row["layout"])
        line = series.setdefault(layout, Series(name=layout))
        line.x.append(row["group"])
        line.y.append(float(value))
    if not series:
        return None
    absent = [f"{r['layout']}: {_why_absent(r, key)}" for r in rows if r["layout"] not in series]
    # rates spanning a decade (a 2-rank and a 64-rank group side by side) go on a log axis,
    # where the small ones do not flatten into the bottom; said in the axis label
    log = y_format == "rate" and spans_decades(list(series.values()))
    return Chart(
        id=chart_id,
        title=title,
        kind="bar",
        x_label="model, batch, world size, precision",
        y_label=f"{y_label} (log scale)" if log else y_label,
        y_format=y_format,
        y_log=log,
        series=list(series.values()),
        absent=list(dict.fromkeys(absent)),
        category_models=category_models((str(r["group"]), str(r.get("model"))) for r in rows),
    )


def _why_absent(row: dict[str, Any], key: str) -> str:
    """Why a layout has no value to chart: a share inside the noise, or one not split."""
    if key == "exposed_share":
        return "not measurable" if row.get("exposed") is not None else "not split"
    return "not measured"


def build(ctx: Context) -> Section | None:
    """The section, or None when no model and world size was run with two layouts."""
    groups = _groups(ctx.ok)
    if not groups:
        return None
    # the ok cells as records once, each group's picked by its index (a group's own records
    # cost ~0.3 ms each)
    cells = dict(zip(ctx.ok.index, records(ctx.ok), strict=True))
    rows = [row for group in groups for row in _rows(ctx, [cells[i] for i in group.index])]
    blocks: list[Block] = [
        Text(
            text="Each group below ran one model at one world size, precision and batch per "
            "device under several parallel layouts. Throughput counts samples of the global "
            "batch (dp x batch): a tensor-parallel group or a pipeline reads one batch, so at "
            "the same world size it processes fewer samples per step than DDP by design."
        ),
        _table(rows, ctx.units, left_out=left_out_findings(ctx.ok)),
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
    ]
    shares = [r["exposed_share"] for r in rows if r["exposed_share"] is not None]
    if shares and max(shares) < MIN_COST_FRACTION:  # no axis scaled to noise-level shares
        blocks.append(
            Text(
                text=f"{plain('exposed_transfer')} stays under "
                f"{fmt(MIN_COST_FRACTION, 'ratio_pct')} of the step in every layout, the least a "
                "finding needs: not charted, since an axis scaled to such shares draws noise as "
                "a difference (the table above has each figure)."
            )
        )
    else:
        title = (
            f"{plain('exposed_transfer')} by layout ({plain('wait_for_peers').lower()} excluded)"
        )
        charts.append(
            _chart(
                "strategies-communication",
                title,
                "share of the step",
                "ratio_pct",
                rows,
                "exposed_share",
            )
        )
    blocks += [c for c in charts if c is not None]
    return Section(id="strategies", title="Parallel strategies", blocks=blocks)
