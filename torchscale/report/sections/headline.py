"""The report's header, for a stakeholder who reads ten seconds: the hardware, the dates the runs
started, the configs' description, and one sentence of verdict ("On 8 x H100 80GB HBM3, gpt2
scales at 92-96 % of linear to 8 GPUs at $0.41 per M tokens; 2 of 24 cells noisy.").

The verdict says only what the report already holds, one value per quantity: each model's
scaling efficiency as its 95 % interval (the summary's figure, the same row), its cost there
when priced, and how many cells are noisy, failed, unreadable or regressed. An efficiency whose
interval holds 100 % is "linear within noise" and one that cannot be told is "not measurable",
never a bare figure inside its noise; CPU ranks are "CPU ranks", never "GPUs"."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from torchscale.analysis.numbers import finite
from torchscale.analysis.regressions import RUN_COLUMN, Comparison
from torchscale.report.estimates import efficiency_kind
from torchscale.report.model import Severity, Text
from torchscale.report.sections.baseline import largest_change_items, unconfirmed
from torchscale.report.sections.context import (
    Context,
    efficiency_severity,
    fmt,
    integer,
    plural,
    ranks,
    records,
    reliability_counts,
    throughput_text,
)
from torchscale.report.sections.summary import largest_scaled, pooled_priced, weak_scaling
from torchscale.schema.cell_result import CellResult

MAX_NAMED_MODELS = 2  # more: the least efficient is named, the others counted
MAX_DESCRIPTION = 300  # characters of the configs' description in the header
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_VENDOR_PREFIX = re.compile(r"^NVIDIA\s+", re.IGNORECASE)


# ---------------------------------------------------------------- hardware, dates, description


@dataclass(frozen=True)
class _Run:
    """What one result says about the machine it ran on."""

    device: str
    world_size: int
    nodes: int
    environment: dict[str, Any]


def _runs(ctx: Context) -> list[_Run]:
    """Every result with its device and size: the ok cells first (what the figures are of),
    else any cell, else the profiled runs and comm runs. A result that recorded no
    environment (older ones) takes its experiment's env.json."""
    hosts = {
        s.name: s.experiment.environment
        for s in ctx.sources.experiments
        if s.experiment is not None
    }
    cells = [(row, ctx.result(row)) for row in records(ctx.cells)]
    ok = [pair for pair in cells if pair[0]["status"] == "ok"] or cells
    runs = [
        _Run(
            str(r.cell.device),
            r.cell.world_size,
            r.cell.nodes or 1,
            r.environment or hosts.get(str(row["experiment"])) or {},
        )
        for row, r in ok
    ]
    if runs:
        return runs
    for source in ctx.sources.experiments:
        results: list[CellResult] = [p.result for p in source.profiles if p.result is not None]
        runs += [
            _Run(str(r.cell.device), r.cell.world_size, r.cell.nodes or 1, r.environment)
            for r in results
        ]
        for comm in source.comm:
            environment = dict(comm.environment)
            if comm.device_name:
                environment["device_name"] = comm.device_name
            runs.append(_Run(comm.device, comm.world_size, comm.nodes, environment))
    return runs


def gpu_name(environment: dict[str, Any]) -> str | None:
    """The GPU a rank ran on ('H100 80GB HBM3'; NVIDIA's prefix dropped, the rest as the
    driver names it), or None when not recorded."""
    name = environment.get("device_name")
    if not name:
        gpus = environment.get("gpus")
        name = gpus[0] if isinstance(gpus, list) and gpus else None
    if not name:
        return None
    return _VENDOR_PREFIX.sub("", str(name)).strip() or None


def _cpu_name(environment: dict[str, Any]) -> str:
    model = str(environment.get("cpu_model") or "CPU model not recorded")
    cores = integer(environment.get("usable_cores") or environment.get("cpu_count"))
    return f"{model}, {plural(cores, 'core')}" if cores else model


def describe_hardware(runs: Iterable[_Run]) -> str | None:
    """'8 x H100 80GB HBM3', '16 x H100 80GB HBM3 on 2 nodes', 'a CPU-only host (Intel Xeon,
    16 cores)': the most GPUs of each kind one run used (a run is what the figures are of),
    and the CPU for CPU runs. None when no result recorded anything."""
    gpus: Counter[str] = Counter()
    gpu_nodes = 1
    cpus: dict[str, int] = {}
    for run in runs:
        if run.device == "cpu":
            name = _cpu_name(run.environment)
            cpus[name] = max(cpus.get(name, 1), run.nodes)
            continue
        name = gpu_name(run.environment) or f"{run.device} devices (model not recorded)"
        gpus[name] = max(gpus[name], run.world_size)
        gpu_nodes = max(gpu_nodes, run.nodes)
    parts = [f"{count} x {name}" for name, count in gpus.items()]
    if parts and gpu_nodes > 1:
        parts[-1] += f" on {gpu_nodes} nodes"
    for name, nodes in cpus.items():
        parts.append(
            f"{nodes} CPU-only hosts ({name})" if nodes > 1 else f"a CPU-only host ({name})"
        )
    return " and ".join(parts) or None


def hardware(ctx: Context) -> str | None:
    """What the report's figures ran on, in words (see `describe_hardware`)."""
    return describe_hardware(_runs(ctx))


def measured_dates(ctx: Context) -> str | None:
    """'2026-11-20' or '2026-11-20 to 2026-11-22': the UTC dates the runs started (None when
    no result recorded when)."""
    stamps: list[str | None] = [ctx.result(row).started_at for row in records(ctx.cells)]
    for source in ctx.sources.experiments:
        stamps += [p.result.started_at for p in source.profiles if p.result is not None]
    dates = sorted({s[:10] for s in stamps if s and _DATE.match(s)})
    if not dates:
        return None
    return dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"


def description(ctx: Context) -> str | None:
    """The configs' `description:` (each different one once), on one line, cut to
    MAX_DESCRIPTION characters."""
    found = []
    for source in ctx.sources.experiments:
        config = source.experiment.config if source.experiment is not None else {}
        text = " ".join(str(config.get("description") or "").split())
        if text and text not in found:
            found.append(text)
    joined = "; ".join(found)
    if len(joined) > MAX_DESCRIPTION:
        joined = joined[: MAX_DESCRIPTION - 1].rstrip() + "…"
    return joined or None


# ---------------------------------------------------------------- the verdict


def pct_range(low: float, high: float) -> str:
    """'92-96 %': an interval of ratios in whole percent, with one decimal where whole percent
    would print the two ends alike."""
    lo, hi = f"{low * 100:.0f}", f"{high * 100:.0f}"
    if lo == hi or high - low < 0.02:
        lo, hi = f"{low * 100:.1f}", f"{high * 100:.1f}"
    return f"{lo}-{hi} %"


def scaling_clause(
    model: str,
    efficiency: float | None,
    low: float | None,
    high: float | None,
    span: str,
    cost: str = "",
) -> str:
    """How a model scales, in one value: its efficiency's 95 % interval ('gpt2 scales at
    92-96 % of linear to 8 GPUs'), 'linearly within noise' when the interval holds 100 %, and
    'not measurable' where there is no figure to tell (above linear on one repeat). `span`:
    'to 8 GPUs'; `cost`: ' at $0.41 per M tokens' or ''."""
    kind = efficiency_kind(efficiency, low, high)
    note = ""
    if efficiency is None or kind == "above linear":
        main = f"the scaling of {model} {span} is not measurable"
        note = "above linear on one repeat" if efficiency is not None else ""
    elif kind == "linear within noise":
        main = f"{model} scales linearly within noise {span}"
    elif low is None or high is None:
        main = f"{model} scales at {fmt(efficiency, 'ratio_pct')} of linear {span}"
        note = "one repeat: spread unknown"
    elif kind == "super-linear":
        main = f"{model} scales super-linearly {span}"
        note = f"{pct_range(low, high)} of linear: check for cache effects"
    else:
        main = f"{model} scales at {pct_range(low, high)} of linear {span}"
    return main + cost + (f" ({note})" if note else "")


def _cost(priced: pd.DataFrame | None, row: dict[str, Any]) -> str:
    """' at $0.41 per M tokens' (samples where the model has no tokens) for the cell `row`;
    '' when it has no price."""
    if priced is None:
        return ""
    match = priced[
        (priced["cell_id"] == row["cell_id"]) & (priced["experiment"] == row["experiment"])
    ]
    if match.empty:
        return ""
    cost = match.iloc[0]
    tokens = finite(cost["cost_per_m_tokens"])
    if tokens is not None:
        return f" at {fmt(tokens, 'money')} per M tokens"
    samples = finite(cost["cost_per_m_samples"])
    return "" if samples is None else f" at {fmt(samples, 'money')} per M samples"


@dataclass(frozen=True)
class _Clause:
    text: str
    efficiency: float | None
    severity: Severity


def _model_clause(
    ctx: Context,
    model: str,
    weak: pd.DataFrame,
    priced: pd.DataFrame | None,
    subject: str | None = None,
) -> _Clause:
    """'gpt2 scales at 92-96 % of linear to 8 GPUs at $0.41 per M tokens', or for a model
    measured at one size, its best throughput there. `subject` names the model in the
    sentence (default: its label)."""
    subject = subject or model
    row = largest_scaled(weak, model)
    if row is None:
        pooled = ctx.pooled
        measured = pooled[
            (pooled["model_label"] == model) & pd.to_numeric(pooled["samples_per_s"]).notna()
        ]
        best = dict(measured.loc[pd.to_numeric(measured["samples_per_s"]).idxmax()])
        where = ranks(best["world_size"], best["device"])
        runs = finite(best.get(RUN_COLUMN)) or 1
        median = f" (median of {int(runs)} runs)" if runs > 1 else ""
        text = f"{subject} reaches {throughput_text(best)} samples/s{median} on {where}"
        return _Clause(text + _cost(priced, best), None, "info")
    efficiency = finite(row["efficiency"])
    low, high = finite(row["efficiency_low"]), finite(row["efficiency_high"])
    base = integer(row["base_world_size"])
    to = ranks(row["world_size"], row["device"])
    span = f"from {base} to {to}" if base and base > 1 else f"to {to}"
    text = scaling_clause(subject, efficiency, low, high, span, _cost(priced, row))
    return _Clause(text, efficiency, efficiency_severity(efficiency, low, high))


def _model_clauses(ctx: Context, priced: pd.DataFrame | None) -> list[_Clause]:
    """One clause per model, or beyond MAX_NAMED_MODELS the least efficient one named and the
    others counted (a sentence, not a table)."""
    measured = ctx.ok[pd.to_numeric(ctx.ok["samples_per_s"]).notna()]
    models = sorted(set(measured["model_label"].astype(str)))
    weak = weak_scaling(ctx)
    clauses = {model: _model_clause(ctx, model, weak, priced) for model in models}
    if len(clauses) <= MAX_NAMED_MODELS:
        return list(clauses.values())
    scaled = [m for m, c in clauses.items() if c.efficiency is not None]
    if scaled:
        worst = min(scaled, key=lambda m: clauses[m].efficiency or 0.0)
        subject = f"the least efficient of {len(models)} models, {worst},"
    else:
        worst = models[0]
        subject = f"the first of {len(models)} models, {worst},"
    others = plural(len(models) - 1, "other model")
    return [
        _model_clause(ctx, worst, weak, priced, subject),
        _Clause(f"{others} in the summary", None, "info"),
    ]


def _counts(ctx: Context) -> tuple[list[str], Severity]:
    """'6 of 8 cells readable', '2 failed', '2 of 24 cells noisy' / 'all 24 cells reliable',
    regressions against the baseline; and the worst severity among them."""
    parts: list[str] = []
    severity: Severity = "good"
    cells = ctx.cells
    readable, unreadable = len(cells), ctx.unreadable
    if unreadable:
        parts.append(f"{readable} of {readable + unreadable} cells readable")
        severity = "bad"
    failed = int(cells["status"].isin(["failed", "oom", "timeout"]).sum())
    if failed:
        parts.append(f"{failed} of {len(cells)} cells failed")
        severity = "bad"
    measured = ctx.ok[pd.to_numeric(ctx.ok["samples_per_s"]).notna()]
    found = reliability_counts(measured)
    noisy, unknown = len(found["noisy"]), len(found["spread unknown"])
    if noisy:
        parts.append(f"{noisy} of {len(measured)} cells noisy")
    if unknown:
        parts.append(f"{unknown} of {len(measured)} of one repeat (spread unknown)")
    if len(measured) and not noisy and not unknown:
        parts.append(
            f"all {len(measured)} cells reliable" if len(measured) > 1 else "measured reliably"
        )
    if (noisy or unknown) and severity == "good":
        severity = "warn"
    if ctx.comparison is not None:
        against = ", ".join(s.name for s in ctx.baseline.experiments) if ctx.baseline else ""
        largest = largest_change_items(ctx, ctx.comparison, 1)
        phrase, baseline_severity = baseline_phrase(
            ctx.comparison, against, largest[0] if largest else None
        )
        parts.append(phrase)
        severity = _worst([severity, baseline_severity])
    return parts, severity


def baseline_phrase(
    comparison: Comparison, against: str, largest: str | None = None
) -> tuple[str, Severity]:
    """'2 regressions against X', 'no regression against X in 12 judged cells (3 not
    judged)', or 'none of 3 matched cells could be judged against X': "no regression" only
    where the rule judged something (nothing judged is no pass); each with the largest change,
    judged or not (`largest`: 'tiny-gpt2 b16 x2 fp32 ddp -49 % [-61, -33], not judged: 2
    repeats a side')."""
    matched, judged = len(comparison.pairs), comparison.judged
    tail = f"; largest change: {largest}" if largest else ""
    if comparison.regressions:
        return (
            f"{plural(comparison.regressions, 'regression')} against {against}"
            + (f" ({tail[2:]})" if tail else ""),
            "bad",
        )
    if not matched:
        return f"no cell matched {against}", "warn"
    if not judged:
        return (
            f"none of {plural(matched, 'matched cell')} could be judged against {against}"
            + (f" ({tail[2:]})" if tail else ""),
            "warn",
        )
    notes = [f"{matched - judged} not judged"] if matched > judged else []
    notes += [tail[2:]] if tail else []
    said = f" ({'; '.join(notes)})" if notes else ""
    hidden = unconfirmed(comparison)
    severity: Severity = "warn" if matched > judged or hidden else "good"
    return f"no regression against {against} in {plural(judged, 'judged cell')}{said}", severity


_ORDER: dict[Severity, int] = {"good": 0, "info": 1, "warn": 2, "bad": 3}


def _worst(severities: Iterable[Severity]) -> Severity:
    """The worst severity that says something ('info' is neutral: it only stands alone)."""
    said = [s for s in severities if s != "info"]
    return max(said, key=lambda s: _ORDER[s], default="info")


def verdict(ctx: Context) -> Text | None:
    """The one-sentence verdict (see the module docstring); None when the sources hold nothing
    to judge."""
    where = hardware(ctx)
    opening = f"On {where}, " if where else "On hardware not recorded, "
    counts, count_severity = _counts(ctx)
    if ctx.ok.empty or pd.to_numeric(ctx.ok["samples_per_s"]).notna().sum() == 0:
        if len(ctx.cells):
            body = "no cell finished ok"
        elif ctx.unreadable:
            body = "no cell result could be read"
        else:
            body = f"no benchmark sweep ({ctx.other_contents()}; see the sections below)"
        tail = f"; {', '.join(counts)}" if counts else ""
        severity: Severity = "bad" if len(ctx.cells) or ctx.unreadable else "info"
        return Text(text=f"{opening}{body}{tail}.", severity=severity)
    clauses = _model_clauses(ctx, pooled_priced(ctx))
    body = "; ".join(c.text for c in clauses)
    tail = f"; {', '.join(counts)}" if counts else ""
    severity = _worst([count_severity, *(c.severity for c in clauses)])
    return Text(text=f"{opening}{body}{tail}.", severity=severity)
