"""Throughput and latency: per-cell throughput and step-time percentiles with their 95 %
intervals and reliability, step-time distributions, the run-to-run spread, and per-rank step and
phase times with the run's one diagnosis (docs/reporting.md, "What is in it")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from torchscale.contracts.schema.cell_result import CellResult, RankStats
from torchscale.contracts.schema.diagnosis import Diagnosis
from torchscale.contracts.step_phases import OWN_WORK_PHASES, STEP_PHASES, seconds_column
from torchscale.contracts.thresholds import CV_WARN_THRESHOLD
from torchscale.contracts.wording import cell_warnings, why
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.interfaces.report.charts.data import category_models
from torchscale.interfaces.report.diagnosis_text import (
    caveat_text,
    disagreement_text,
    straggler_text,
)
from torchscale.interfaces.report.estimates import two_scopes_note
from torchscale.interfaces.report.model import Block, Chart, Section, Series, Table, Unavailable
from torchscale.interfaces.report.parts.context import (
    Context,
    by_reason,
    col,
    integer,
    names,
    narrow,
    present,
    records,
    repeat_fields,
    said_level,
    slug,
    step_text,
    throughput_fields,
)
from torchscale.interfaces.report.parts.diagnosis import rank_wait_texts
from torchscale.interfaces.report.parts.findings import caveat_of
from torchscale.interfaces.report.parts.words import footnote, plain, term_column
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.analysis.reliability import UNSETTLED
from torchscale.offline.analysis.uncertainty import THROUGHPUT_INTERVAL

MAX_BOX_VALUES = 2000  # per box; more are reduced to this many evenly spaced quantiles
MAX_RANKS_PER_CELL = 16  # per-rank rows of one cell: the slowest ones beyond this
MAX_PHASE_CHARTS = 12
COMPILE_NOTE = (
    "compile: torch.compile's own time in the cell's warm-up, slowest rank, in no measured "
    "figure; every cell is a fresh process, and what an earlier cell, probe or run of the "
    "experiment compiled comes from its compile cache, so the first cell of a shape pays most"
)
PERCENTILES = ("p50", "p95", "p99")
PHASE_LABELS = {
    "data": "Data",
    "forward": "Forward",
    "backward": "Backward",
    "grad_sync_wait": plain("grad_sync_wait"),
    "optimizer": "Optimizer",
}


@dataclass(frozen=True, eq=False)
class RankSource:
    """A multi-rank run whose ranks are shown: a sweep cell or a profiled run, with the run's
    one diagnosis (a profiled run's: its analysis') and busy-machine caveat."""

    key: str
    label: str
    result: CellResult
    diagnosis: Diagnosis | None
    caveat: str | None


def _stats_table(ctx: Context) -> Table:
    rows = []
    compile_s: list[float | None] = []
    for row in records(ctx.ok):
        compile_s.append(finite(row["compile_s"]))
        entry: dict[str, Any] = {
            "cell": ctx.label(row),
            "gpus": integer(row["world_size"]),
            **throughput_fields(row),
            **repeat_fields(row, ctx.result(row)),
            "repeats": integer(row["repeats"]),
            "step_cv": finite(row["step_cv"]),
            "steps": integer(row["measured_steps"]),
            "reliability": said_level(row["reliability"]),
            "reliability_reason": row["reliability_reason"],
            "_severity": "warn" if row["reliability"] in (*UNSETTLED, "busy_machine") else "info",
        }
        for q in PERCENTILES:
            entry[f"step_{q}_s"] = finite(row[f"step_{q}_s"])
            entry[f"step_{q}_low_s"] = finite(row[f"step_{q}_low_s"])
            entry[f"step_{q}_high_s"] = finite(row[f"step_{q}_high_s"])
            entry[f"step_{q}_text"] = step_text(row, q)
        rows.append(entry)
    columns = [
        col("cell", "Cell"),
        col("gpus", ctx.units.world, "int"),
        col("samples_per_s_text", "Samples/s ±95 %"),
        col("spread", "Spread", "ratio_pct"),
        col("repeats", "Repeats", "int"),
        col("step_p50_text", "Step p50"),
        col("step_p95_text", "Step p95"),
        col("step_p99_text", "Step p99"),
        col("step_cv", "Step CV", "ratio_pct"),
        col("steps", "Steps per repeat", "int"),
        col("reliability", "Reliability"),
    ]
    scopes = two_scopes_note(bool(ctx.ok["mfu"].notna().any()))
    note = (
        "samples/s: the median over repeats ± half its 95 % interval ([low, high] where "
        f"lopsided; {THROUGHPUT_INTERVAL}); step percentiles over every measured step of "
        "every repeat, all ranks pooled, with the 95 % interval of a block bootstrap over the "
        f"steps ({scopes}); spread = {cell_warnings.SPREAD}; CV = std / mean; reliable: "
        f"{cell_warnings.glossary(CV_WARN_THRESHOLD)[cell_warnings.level_word('reliable')]}"
    )
    if any(value is not None for value in compile_s):  # a compiled cell: what compile cost it
        for entry, value in zip(rows, compile_s, strict=True):
            entry["compile_s"] = value
        columns.append(col("compile_s", "Compile", "seconds"))
        note += f"; {COMPILE_NOTE}"
    return Table(
        id="latency-stats",
        title="Throughput and step time per cell",
        columns=columns,
        rows=rows,
        note=note,
    )


def _reliability_table(ctx: Context) -> Table | None:
    """Why each cell that is not reliable is not (the stats table has the level only)."""
    rows = [
        {
            "cell": ctx.label(row),
            "reliability": said_level(row["reliability"]),
            "reason": row["reliability_reason"],
            "_severity": "info" if row["reliability"] == "spread_unknown" else "warn",
        }
        for row in records(ctx.ok)
        if isinstance(row["reliability"], str) and row["reliability"] != "reliable"
    ]
    if not rows:
        return None
    return Table(
        id="latency-reliability",
        title="Cells not measured reliably, and why",
        columns=[col("cell", "Cell"), col("reliability", "Reliability"), col("reason", "Why")],
        rows=rows,
        note="their figures carry no check mark anywhere in the report; more repeats "
        f"({said_level('spread_unknown')}, {said_level('too_few_repeats')}), a quieter machine "
        f"and more steps ({said_level('varies')}) or an idle one ({said_level('busy_machine')}) "
        f"make them {said_level('reliable')}",
    )


def _repeats_chart(ctx: Context) -> Chart | None:
    """Run-to-run spread per cell, noisiest first: one scale for every model (a spread, not a
    throughput), so a small model's noise is as visible as a large one's. None when no cell
    has two repeats."""
    rows = [
        (ctx.label(row), finite(row["throughput_spread"]), str(row["model_label"]))
        for row in records(ctx.ok)
        if len(getattr(ctx.result(row).throughput, "repeats", ())) >= 2
    ]
    measured = sorted(
        ((label, spread) for label, spread, _ in rows if spread is not None),
        key=lambda item: item[1],
        reverse=True,
    )
    if not measured:
        return None
    return Chart(
        id="latency-repeats",
        title="Run-to-run spread per cell (noisiest first)",
        kind="bar",
        x_label="cell",
        y_label="spread of samples/s",
        y_format="ratio_pct",
        series=[
            Series(
                name="spread over repeats",
                x=[label for label, _ in measured],
                y=[spread for _, spread in measured],
            )
        ],
        category_models=category_models((label, model) for label, _, model in rows),
        note=f"spread = {cell_warnings.SPREAD} (samples/s); each cell's interval "
        "(slowest to fastest repeat) is in the table above and on the scaling charts",
    )


def _box_values(times: np.ndarray) -> tuple[list[float], bool]:
    values = np.sort(times[~np.isnan(times)])
    if len(values) <= MAX_BOX_VALUES:
        return [float(v) for v in values], False
    reduced = np.quantile(values, np.linspace(0.0, 1.0, MAX_BOX_VALUES))
    return [float(v) for v in reduced], True


def _box_charts(ctx: Context) -> tuple[list[Chart], dict[str, str]]:
    sync = ctx.steps[ctx.steps["window"] == "sync"]
    # each cell's step times as an array, the table grouped once (a Series per cell cost
    # about 0.1 ms each)
    seconds = pd.to_numeric(sync["time_s"]).to_numpy(dtype=float)
    cells = sync.groupby(["experiment", "cell_id"]).indices
    by_cell = {key: seconds[rows] for key, rows in cells.items()}
    charts, missing, reduced = [], [], False
    for model, by_model in narrow(ctx.ok).groupby("model_label", sort=True):
        series = []
        keys = ["experiment", "batch_size", "precision", "strategy", "device"]
        for _, group in by_model.groupby(keys, sort=True):
            x: list[float | int | str] = []
            values: list[list[float]] = []
            for row in records(group.sort_values("world_size")):
                times = by_cell.get((row["experiment"], row["cell_id"]))
                if times is None or np.isnan(times).all():
                    missing.append(ctx.label(row))
                    continue
                box, was_reduced = _box_values(times)
                reduced |= was_reduced
                x.append(str(row["world_size"]))
                values.append(box)
            if x:
                series.append(Series(name=ctx.group_name(group.iloc[0]), x=x, values=values))
        if series:
            note = "every measured step of every repeat, all ranks pooled (window 'sync')"
            if reduced:
                note += f"; boxes over {MAX_BOX_VALUES} evenly spaced quantiles of the steps"
            charts.append(
                Chart(
                    id=f"latency-steps-{slug(str(model))}",
                    title=f"{model}: step time distribution per {ctx.units.world[:-1]} count",
                    kind="box",
                    x_label=ctx.units.world,
                    y_label="step time",
                    y_format="seconds",
                    series=series,
                    note=note,
                )
            )
    why = "no per-step records (steps/<cell>.jsonl missing or unreadable)"
    return charts, by_reason(((m, why) for m in missing), "step-time distribution")


def rank_sources(ctx: Context) -> list[RankSource]:
    """Profiled runs, then every ok sweep cell of two or more ranks."""
    out = []
    for ref in ctx.profiles:
        result = ref.entry.result
        if result is None or len(result.ranks) < 2:
            continue
        diagnosis = ref.diagnosis  # the run's one diagnosis (`ProfileRef.diagnosis`)
        caveat = verdict_words.caveat(diagnosis) or caveat_of(result)
        out.append(RankSource(ref.source, ref.label, result, diagnosis, caveat))
    for row in records(ctx.ok):
        result = ctx.result(row)
        if len(result.ranks) > 1:
            key = f"{row['experiment']}/{row['cell_id']}"
            out.append(RankSource(key, ctx.label(row), result, result.diagnosis, caveat_of(result)))
    return out


def _compute(rank: RankStats) -> float:
    if rank.compute_time is not None:
        return rank.compute_time.p50
    if rank.phases is not None:
        parts: list[float | None] = [getattr(rank.phases, phase) for phase in OWN_WORK_PHASES]
        return sum(p for p in parts if p is not None)
    return rank.step_time.p50


def _named(source: RankSource) -> tuple[int, str | None] | None:
    """(rank, phase) the run's diagnosis names."""
    if source.diagnosis is None:
        return None
    verdict = source.diagnosis.straggler
    if verdict is None or not verdict.named or verdict.rank is None:
        return None
    return verdict.rank, verdict.phase


def _role(source: RankSource, rank: int) -> str:
    """'straggler (backward)' for the rank the run's diagnosis names; else ''."""
    verdict = source.result.diagnosis.straggler if source.result.diagnosis else None
    injected = ", injected delay" if verdict and verdict.named and verdict.injected else ""
    named = _named(source)
    if named is None or named[0] != rank:
        return ""
    return "straggler" + (f" ({named[1]})" if named[1] else "") + injected


# the per-rank table's phases: grad-sync wait is left out, each rank's wait for peers being the
# diagnosis' (`rank_waits`); the phase chart keeps every phase the timers measured
TABLE_PHASES = tuple(p for p in STEP_PHASES if p != "grad_sync_wait")


def _ranks_table(sources: list[RankSource]) -> Table:
    rows: list[dict[str, Any]] = []
    limited = []
    without_waits: list[str] = []
    caveats: dict[str, list[str]] = {}
    for source in sources:
        ranks = source.result.ranks
        if len(ranks) > MAX_RANKS_PER_CELL:
            limited.append(source.label)
            ranks = sorted(ranks, key=_compute, reverse=True)[:MAX_RANKS_PER_CELL]
            ranks = sorted(ranks, key=lambda r: r.rank)
        waits = rank_wait_texts(source.diagnosis)
        if not waits:
            without_waits.append(source.label)
        if source.caveat:
            caveats.setdefault(source.caveat, []).append(source.label)
        for rank in ranks:
            role = _role(source, rank.rank)
            phases = rank.phases
            rows.append(
                {
                    "cell": source.label,
                    "rank": rank.rank,
                    "host": rank.host,
                    "step_p50_s": rank.step_time.p50,
                    "step_p95_s": rank.step_time.p95,
                    "step_cv": rank.step_time.cv,
                    "compute_s": rank.compute_time.p50 if rank.compute_time else None,
                    **{
                        seconds_column(phase): finite(getattr(phases, phase)) if phases else None
                        for phase in TABLE_PHASES
                    },
                    "wait_text": waits.get(rank.rank),
                    "role": role or None,
                    "_severity": "warn" if role and _named(source) is not None else "info",
                }
            )
    note = (
        "compute: the rank's median step under DDP no_sync() (no gradient sync); phases: medians "
        "over the synchronised steps; waiting for peers: the run's diagnosis, the rank's mean "
        "wait over its mean step with the 95 % interval (the others wait there for a straggler)"
    )
    if without_waits:
        note += (
            "; no per-rank wait for peers in the diagnosis of "
            + names(without_waits)
            + " (it holds none; their grad-sync wait phase is in the phase charts)"
        )
    for caveat, labels in caveats.items():
        note += f"; {names(labels)}: {caveat_text(caveat)}"
    if limited:
        note += (
            f"; {MAX_RANKS_PER_CELL} ranks with the highest compute time shown for "
            + ", ".join(limited)
        )
    note += f". {footnote(['wait_for_peers'])}"
    return Table(
        id="latency-ranks",
        title="Per-rank step and phase times",
        columns=[
            col("cell", "Run"),
            col("rank", "Rank", "int"),
            col("host", "Host"),
            col("step_p50_s", "Step p50", "seconds"),
            col("step_p95_s", "Step p95", "seconds"),
            col("step_cv", "Step CV", "ratio_pct"),
            col("compute_s", "Compute (no_sync)", "seconds"),
            *(col(seconds_column(p), PHASE_LABELS[p], "seconds") for p in TABLE_PHASES),
            term_column("wait_text", "wait_for_peers", suffix=" (share of its step)"),
            col("role", "Straggler"),
        ],
        rows=rows,
        note=note,
    )


def _chart_order(sources: list[RankSource]) -> list[RankSource]:
    """Profiled runs, cells with a straggler worth a finding, then each model's largest run."""
    with_phases = [s for s in sources if any(r.phases is not None for r in s.result.ranks)]
    profiled = [s for s in with_phases if s.key.startswith("profile ")]
    stragglers = [s for s in with_phases if s not in profiled and _named(s) is not None]
    largest: dict[tuple[str, str], RankSource] = {}
    for source in with_phases:
        if source in profiled:
            continue
        model = (source.key.split("/")[0], source.result.cell.label)
        held = largest.get(model)
        if held is None or source.result.cell.world_size > held.result.cell.world_size:
            largest[model] = source
    ordered = list(dict.fromkeys([*profiled, *stragglers, *largest.values()]))
    return ordered[:MAX_PHASE_CHARTS]


def _phase_chart(source: RankSource) -> Chart:
    ranks = sorted(source.result.ranks, key=lambda r: r.rank)
    x: list[float | int | str] = [str(r.rank) for r in ranks]
    series = []
    for phase in STEP_PHASES:
        values = [finite(getattr(r.phases, phase)) if r.phases else None for r in ranks]
        if any(v is not None for v in values):
            series.append(Series(name=PHASE_LABELS[phase], x=list(x), y=values))
    note = "median seconds per phase over the synchronised steps"
    diagnosis = source.diagnosis
    if diagnosis is not None:
        if diagnosis.straggler is not None:
            note += f"; {straggler_text(diagnosis.straggler, diagnosis.ranks)}"
        disagreement = disagreement_text(diagnosis)
        if disagreement is not None:
            note += f"; {disagreement}"
    if source.caveat:
        note += f"; {caveat_text(source.caveat)}"
    if any(s.name == PHASE_LABELS["grad_sync_wait"] for s in series):
        note += f". {footnote(['grad_sync_wait'])}"
    return Chart(
        id=f"latency-phases-{slug(source.key)}",
        title=f"{source.label}: phase times per rank",
        kind="stacked_bar",
        x_label="rank",
        y_label="time per step",
        y_format="seconds",
        series=series,
        note=note,
    )


def _rank_unavailable(sources: list[RankSource]) -> dict[str, str]:
    items = []
    for source in sources:
        unavailable = source.result.unavailable
        if all(r.phases is None for r in source.result.ranks):
            items.append(
                (source.label, why(unavailable.get("phases")) or "no phase timing recorded")
            )
            continue
        for phase in STEP_PHASES:
            reason = why(unavailable.get(f"phases.{phase}"))
            if reason:
                items.append((f"{phase}: {source.label}", reason))
    return by_reason(items, "phase times")


def build(ctx: Context) -> Section:
    """Percentiles, step distributions, run-to-run intervals, per-rank and phase times."""
    blocks: list[Block] = []
    unavailable: dict[str, str] = {}
    if ctx.ok.empty:
        unavailable["throughput and step-time statistics"] = ctx.nothing_measured()
    else:
        blocks.append(_stats_table(ctx))
        blocks += present(_reliability_table(ctx))
        spread = _repeats_chart(ctx)
        if spread is not None:
            blocks.append(spread)
        else:
            unavailable["run-to-run spread"] = (
                "every cell ran one measured window: set `measurement.repeats` to 2 or more"
            )
        charts, missing = _box_charts(ctx)
        blocks += charts
        unavailable.update(missing)
    sources = rank_sources(ctx)
    if sources:
        blocks.append(_ranks_table(sources))
        blocks += [_phase_chart(s) for s in _chart_order(sources)]
        unavailable.update(_rank_unavailable(sources))
    else:
        unavailable["per-rank spread and phase times"] = (
            "no run of two or more ranks finished ok: no other rank to compare with"
        )
    if unavailable:
        blocks.append(Unavailable(items=unavailable))
    return Section(id="latency", title="Throughput and latency", blocks=blocks)
