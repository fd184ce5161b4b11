"""Against the baseline (only with --baseline): matched cells, the change of each key metric,
cells on one side only, and regressions flagged only beyond the noise
(`analysis.baseline.judge_change`). Improvements are shown and never counted."""

from __future__ import annotations

from typing import Any

import pandas as pd

from torchscale.analysis.baseline import METRICS, Comparison
from torchscale.report.model import (
    Block,
    Chart,
    KeyFigure,
    KeyFigures,
    Section,
    Series,
    Severity,
    Table,
    Text,
    Unavailable,
)
from torchscale.report.sections.context import Context, col, fmt, num, records, text

MATCH_TEXT = {"definition": "same definition", "key": "same key (settings differ)"}


def rule_text(noise_pct: float) -> str:
    return (
        "Throughput and step time p50 are flagged only beyond the noise. Where both sides ran "
        "two or more repeats, the noise band is half the range of the baseline's repeats plus "
        "half the range of the current ones (the medians must be further apart than the two "
        "half-ranges together: the ranges do not overlap); otherwise a throughput drop or "
        f"step-time rise above {fmt(noise_pct, 'pct')} is flagged. A cell that ran ok in the "
        "baseline and fails now is a regression too. Scaling efficiency, exposed communication "
        "and peak memory are shown, not flagged. Cells are matched by definition hash, else by "
        "model, batch per GPU, GPUs, precision, strategy and device."
    )


def _severity(row: pd.Series) -> Severity:
    if bool(row["regression"]):
        return "bad"
    return "good" if bool(row["improvement"]) else "info"


def _verdict(row: pd.Series) -> str:
    if row["status_change"] == "broke":
        return f"regression: {row['baseline_status']} -> {row['status']}"
    if row["status_change"] == "fixed":
        return f"improvement: {row['baseline_status']} -> {row['status']}"
    verdicts = [str(row[f"{m.key}_verdict"]) for m in METRICS if m.tested]
    for outcome in ("regression", "improvement", "noise"):
        if outcome in verdicts:
            return outcome
    return "not compared" if row["status"] != "ok" or row["baseline_status"] != "ok" else "n/a"


def _tested_table(ctx: Context, comparison: Comparison) -> Table:
    rows: list[dict[str, Any]] = []
    for row in records(comparison.pairs):
        rows.append(
            {
                "cell": ctx.label(row),
                "matched_by": MATCH_TEXT.get(str(row["matched_by"]), str(row["matched_by"])),
                "thr_base": num(row["samples_per_s_baseline"]),
                "thr_now": num(row["samples_per_s_current"]),
                "thr_change": num(row["samples_per_s_change"]),
                "thr_threshold": num(row["samples_per_s_threshold"]),
                "rule": {"spread": "repeats' spread", "noise_pct": "default noise"}.get(
                    str(row["samples_per_s_rule"])
                ),
                "step_base": num(row["step_p50_s_baseline"]),
                "step_now": num(row["step_p50_s_current"]),
                "step_change": num(row["step_p50_s_change"]),
                "verdict": _verdict(row),
                "_severity": _severity(row),
            }
        )
    return Table(
        id="baseline-changes",
        title="Throughput and step time against the baseline",
        columns=[
            col("cell", "Cell"),
            col("matched_by", "Matched by"),
            col("thr_base", "Samples/s (baseline)", "rate"),
            col("thr_now", "Samples/s (now)", "rate"),
            col("thr_change", "Change", "change_pct"),
            col("thr_threshold", "Noise band", "ratio_pct"),
            col("rule", "Noise from"),
            col("step_base", "Step p50 (baseline)", "seconds"),
            col("step_now", "Step p50 (now)", "seconds"),
            col("step_change", "Change", "change_pct"),
            col("verdict", "Verdict"),
        ],
        rows=rows,
        note=f"noise band: the relative change a pair must exceed to be flagged "
        f"(default {fmt(comparison.noise_pct, 'pct')} without repeats on both sides)",
    )


def _other_table(ctx: Context, comparison: Comparison) -> Table:
    rows = []
    for row in records(comparison.pairs):
        memory_kind = text(row["peak_memory_kind"])
        rows.append(
            {
                "cell": ctx.label(row),
                "eff_base": num(row["scaling_efficiency_baseline"]),
                "eff_now": num(row["scaling_efficiency_current"]),
                "eff_change": num(row["scaling_efficiency_change"]),
                "comm_base": num(row["comm_overhead_baseline"]),
                "comm_now": num(row["comm_overhead_current"]),
                "mem_base": num(row["peak_memory_bytes_baseline"]),
                "mem_now": num(row["peak_memory_bytes_current"]),
                "mem_change": num(row["peak_memory_bytes_change"]),
                "mem_kind": {"allocated": "CUDA peak allocated", "rss": "peak RSS"}.get(
                    memory_kind or ""
                ),
            }
        )
    return Table(
        id="baseline-other",
        title="Efficiency, communication and memory against the baseline (not flagged)",
        columns=[
            col("cell", "Cell"),
            col("eff_base", "Efficiency (baseline)", "ratio_pct"),
            col("eff_now", "Efficiency (now)", "ratio_pct"),
            col("eff_change", "Change", "change_pct"),
            col("comm_base", "Exposed comm (baseline)", "ratio_pct"),
            col("comm_now", "Exposed comm (now)", "ratio_pct"),
            col("mem_base", "Peak memory (baseline)", "bytes"),
            col("mem_now", "Peak memory (now)", "bytes"),
            col("mem_change", "Change", "change_pct"),
            col("mem_kind", "Memory basis"),
        ],
        rows=rows,
        note="no run-to-run noise is known for these: shown, never counted as regressions",
    )


def _change_chart(ctx: Context, comparison: Comparison) -> Chart | None:
    usable = comparison.pairs[comparison.pairs["samples_per_s_change"].notna()]
    if usable.empty:
        return None
    labels: list[float | int | str] = [ctx.label(r) for r in records(usable)]
    return Chart(
        id="baseline-throughput-change",
        title="Throughput change against the baseline",
        kind="bar",
        x_label="cell",
        y_label="change",
        y_format="change_pct",
        series=[
            Series(
                name="throughput change",
                x=labels,
                y=[num(v) for v in usable["samples_per_s_change"]],
            )
        ],
        note="each change is judged against its noise band (table above)",
    )


def _one_side(ctx: Context, comparison: Comparison) -> Table | None:
    rows = []
    for side, frame in (
        ("now only", comparison.only_current),
        ("baseline only", comparison.only_baseline),
    ):
        for row in records(frame):
            rows.append(
                {
                    "cell": ctx.label(row),
                    "side": side,
                    "status": str(row["status"]),
                    "samples_per_s": num(row["samples_per_s"]),
                    "why": str(row["why"]),
                }
            )
    if not rows:
        return None
    return Table(
        id="baseline-one-side",
        title="Cells on one side only",
        columns=[
            col("cell", "Cell"),
            col("side", "In"),
            col("status", "Status"),
            col("samples_per_s", "Samples/s", "rate"),
            col("why", "Why unmatched"),
        ],
        rows=rows,
    )


def _sources_table(ctx: Context) -> Table:
    baseline = ctx.baseline
    rows = []
    for source in baseline.experiments if baseline else []:
        experiment = source.experiment
        rows.append(
            {
                "name": source.name,
                "path": str(source.path),
                "cells": len(experiment.results) if experiment else 0,
                "versions": ", ".join(str(v) for v in sorted(set(experiment.versions.values())))
                if experiment
                else None,
            }
        )
    return Table(
        id="baseline-sources",
        title="Baseline sources",
        columns=[
            col("name", "Experiment"),
            col("path", "Path"),
            col("cells", "Cells", "int"),
            col("versions", "Schema versions"),
        ],
        rows=rows,
    )


def build(ctx: Context) -> Section:
    """The comparison with the baseline (an Unavailable block when there is none)."""
    comparison = ctx.comparison
    blocks: list[Block] = []
    if comparison is None:
        return Section(
            id="baseline",
            title="Against the baseline",
            blocks=[Unavailable(items={"baseline comparison": "no --baseline given"})],
        )
    pairs = comparison.pairs
    blocks.append(
        KeyFigures(
            figures=[
                KeyFigure(label="Cells matched", value=len(pairs), format="int"),
                KeyFigure(
                    label="Regressions",
                    value=comparison.regressions,
                    format="int",
                    note="cells beyond the noise (throughput, step time) or newly failing",
                    severity="bad" if comparison.regressions else "good",
                ),
                KeyFigure(
                    label="Improvements",
                    value=comparison.improvements,
                    format="int",
                    note="shown, never counted as regressions",
                    severity="good" if comparison.improvements else "info",
                ),
                KeyFigure(label="Now only", value=len(comparison.only_current), format="int"),
                KeyFigure(label="Baseline only", value=len(comparison.only_baseline), format="int"),
            ]
        )
    )
    blocks.append(Text(text=rule_text(comparison.noise_pct)))
    if len(pairs):
        blocks.append(_tested_table(ctx, comparison))
        chart = _change_chart(ctx, comparison)
        if chart is not None:
            blocks.append(chart)
        blocks.append(_other_table(ctx, comparison))
    else:
        blocks.append(
            Unavailable(
                items={"metric changes": "no cell matches between the two sides (see below)"}
            )
        )
    one_side = _one_side(ctx, comparison)
    if one_side is not None:
        blocks.append(one_side)
    blocks.append(_sources_table(ctx))
    return Section(id="baseline", title="Against the baseline", blocks=blocks)
