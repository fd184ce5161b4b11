"""Collective bandwidth: `torchscale comm` runs and nccl-tests imports side by side, as
nccl-tests pictures them: bus bandwidth and op time against size on log axes (latency-bound small
messages, bandwidth-bound large ones), a summary row per run and op (its footer's figures), the
`--pairs` matrix as a heatmap. One-rank runs have no bus bandwidth to draw: they appear in the
time chart and the table, with the reason."""

from __future__ import annotations

from torchscale.contracts.schema.comm_result import CommResult, CommRow
from torchscale.contracts.wording import say
from torchscale.contracts.wording.comm import gate_words
from torchscale.interfaces.report.model import Block, Chart, Heatmap, Section, Series, Table, Text
from torchscale.interfaces.report.parts.context import Context, col, run_label, slug
from torchscale.offline.analysis.nccl_bandwidth import factors_text


def _ok(rows: list[CommRow], op: str) -> list[CommRow]:
    return sorted(
        (r for r in rows if r.op == op and r.status == "ok" and r.time_us is not None),
        key=lambda r: (r.size_bytes, r.placement),
    )


def _series(runs: list[tuple[str, CommResult]], multi: bool, busbw: bool) -> list[Series]:
    series = []
    for experiment, run in runs:
        if busbw and run.world_size < 2:
            continue
        for op in dict.fromkeys(r.op for r in run.rows):
            for placement in dict.fromkeys(r.placement for r in run.rows if r.op == op):
                rows = [r for r in _ok(run.rows, op) if r.placement == placement]
                if not rows:
                    continue
                suffix = f" ({placement})" if run.source == "nccl-tests" else ""
                series.append(
                    Series(
                        name=f"{op}{suffix}, {run_label(experiment, run, multi)}",
                        x=[r.size_bytes for r in rows],
                        y=[r.busbw_gbps if busbw else r.time_us for r in rows],
                    )
                )
    return series


def _summary_table(runs: list[tuple[str, CommResult]], multi: bool) -> Table:
    rows = []
    for experiment, run in runs:
        for summary in run.summaries:
            ok = _ok(run.rows, summary.op)
            peak = max(ok, key=lambda r: r.busbw_gbps or 0.0) if ok else None
            failed = sum(r.status != "ok" for r in run.rows if r.op == summary.op)
            rows.append(
                {
                    "run": run_label(experiment, run, multi),
                    "op": summary.op,
                    "ranks": run.world_size,
                    "device": run.device_name or run.device,
                    "sizes": summary.rows,
                    "avg_busbw": summary.avg_busbw_gbps if run.world_size > 1 else None,
                    "peak_busbw": peak.busbw_gbps if peak and run.world_size > 1 else None,
                    "peak_at": peak.size_bytes if peak and run.world_size > 1 else None,
                    "wrong": summary.wrong,
                    "not_ok": failed,
                    "gate": run.gate or "",
                }
            )
    return Table(
        id="collectives-summary",
        title="Collective bandwidth per run and op (nccl-tests conventions)",
        columns=[
            col("run", "Run"),
            col("op", "Op"),
            col("ranks", "Ranks", "int"),
            col("device", "Device"),
            col("sizes", "Rows", "int"),
            col("avg_busbw", "Avg busbw (GB/s)", "float"),
            col("peak_busbw", "Peak busbw (GB/s)", "float"),
            col("peak_at", "Peak at", "bytes"),
            col("wrong", "#wrong", "int"),
            col("not_ok", "Rows not ok", "int"),
            col("gate", "Gate"),
        ],
        rows=rows,
        note=f"busbw = algbw x the op's factor ({factors_text()}); avg = nccl-tests' 'Avg bus "
        "bandwidth' of the op; one-rank runs have none (nothing crosses a link)",
    )


def _pairs(experiment: str, run: CommResult, multi: bool) -> Chart | None:
    if not run.pairs:
        return None
    n = run.world_size
    z: list[list[float | None]] = [[None] * n for _ in range(n)]
    for pair in run.pairs:
        z[pair.a][pair.b] = z[pair.b][pair.a] = pair.bandwidth_gbps
    label = run_label(experiment, run, multi)
    return Chart(
        id=f"collectives-pairs-{slug(label)}",
        title=f"{label}: point-to-point bandwidth between ranks",
        kind="heatmap",
        x_label="rank",
        y_label="rank",
        heatmap=Heatmap(
            x_labels=[str(r) for r in range(n)],
            y_labels=[str(r) for r in range(n)],
            z=z,
            z_label=f"GB/s per direction, {run.pairs[0].size_bytes} B each way",
            higher_is="better",
        ),
        note="a slow link or node shows as a lighter row and column",
    )


def _notes(runs: list[tuple[str, CommResult]], multi: bool) -> list[Block]:
    notes: list[Block] = []
    for experiment, run in runs:
        label = run_label(experiment, run, multi)
        if run.error:
            notes.append(
                Text(text=f"{label}: stopped early ({run.status}): {run.error}", severity="bad")
            )
        if run.wrong_total:
            notes.append(
                Text(
                    text=f"{label}: {run.wrong_total} wrong element(s) in the check", severity="bad"
                )
            )
        if run.gate in ("failed", "unavailable"):
            notes.append(
                Text(
                    text=f"{label}: gate {run.gate}: {gate_words(run)}",
                    severity="bad" if run.gate == "failed" else "warn",
                )
            )
        notes += [Text(text=f"{label}: {say(w)}", severity="warn") for w in run.warnings]
    return notes


def build(ctx: Context) -> Section | None:
    """The section, or None when no comm run was read."""
    runs = ctx.comm_runs
    if not runs:
        return None
    multi = len({experiment for experiment, _ in runs}) > 1
    blocks: list[Block] = []
    bandwidth = _series(runs, multi, busbw=True)
    if bandwidth:
        blocks.append(
            Chart(
                id="collectives-busbw",
                title="Bus bandwidth against message size",
                kind="line",
                x_label="message size S",
                y_label="busbw, GB/s",
                x_format="bytes",
                x_log2=True,
                y_log=True,
                series=bandwidth,
                note="nccl-tests' busbw: comparable across rank counts and with the link's peak",
            )
        )
    blocks.append(
        Chart(
            id="collectives-time",
            title="Time of one operation against message size",
            kind="line",
            x_label="message size S",
            y_label="time of one op, us",
            x_format="bytes",
            x_log2=True,
            y_log=True,
            series=_series(runs, multi, busbw=False),
            note="flat on the left: the fixed cost of a call (latency-bound); rising on the "
            "right: bandwidth-bound",
        )
    )
    blocks.append(_summary_table(runs, multi))
    blocks += [c for experiment, run in runs if (c := _pairs(experiment, run, multi))]
    blocks += _notes(runs, multi)
    return Section(id="collectives", title="Collective bandwidth", blocks=blocks)
