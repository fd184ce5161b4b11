"""The report's header, for a stakeholder who reads ten seconds (docs/reporting.md, "The decision
first"): the headline sentence (`usability`), the `Decision` per model, the hardware, the dates
and the configs' description, each a figure the report already holds; a source without a sweep
gets its runs' own verdict (`run_verdicts`). Its words are the catalogue's `headline.*`
(contracts/wording/report.py)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.run_kinds import PATH_CHECK_MARK
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.wording.report import words
from torchscale.contracts.wording.spell import of, with_unit
from torchscale.interfaces.report.estimates import efficiency_phrase
from torchscale.interfaces.report.model import Decision, Severity, Text
from torchscale.interfaces.report.parts.best import (
    NO_CLEAR_BEST,
    NONE_NAMED,
    Pick,
    by_cost,
    by_throughput,
    lead_text,
    none_named_why,
    unusable_why,
)
from torchscale.interfaces.report.parts.comparison import largest_change_items, unconfirmed
from torchscale.interfaces.report.parts.context import (
    Context,
    efficiency_severity,
    first_screen_throughput,
    fmt,
    integer,
    interval,
    is_trusted,
    names,
    ranks,
    records,
    repeats_of,
)
from torchscale.interfaces.report.parts.decision import calls, gpu_name, uncalled
from torchscale.interfaces.report.parts.findings import action_text
from torchscale.interfaces.report.parts.gpu_summary import gpu_phrase
from torchscale.interfaces.report.parts.run_verdicts import (
    ordered_profiles,
    profile_lines,
    run_verdict,
)
from torchscale.interfaces.report.parts.usability import judge
from torchscale.interfaces.report.parts.usable import Usability
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.analysis.ranking import comparable, left_out_findings
from torchscale.offline.analysis.regressions import RUN_COLUMN, Comparison
from torchscale.offline.analysis.run_purpose import PATH_CHECK, is_path_check, run_purpose

MAX_MODEL_LINES = 6  # one line per model; more are counted (the summary's table lists all)
MAX_GROUPS = 4  # configurations named in a model's line; beyond, the lowest and highest
MAX_PROFILE_LINES = 2  # profiled runs named under a sweep's models
MAX_ACTIONS = 4
MAX_DESCRIPTION = 300  # characters of the configs' description in the header
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


# ---------------------------------------------------------------- hardware, dates, description


@dataclass(frozen=True)
class _Run:
    """What one result says about the machine it ran on."""

    device: str
    world_size: int
    nodes: int
    environment: dict[str, Any]

    @classmethod
    def of(cls, result: CellResult, environment: dict[str, Any]) -> _Run:
        cell = result.cell
        return cls(str(cell.device), cell.world_size, cell.nodes or 1, environment)


def _runs(ctx: Context) -> list[_Run]:
    """Every result with its device and size: the ok cells first (what the figures are of),
    else any cell, else the profiled runs and comm runs. A result that recorded no
    environment takes its experiment's env.json."""
    hosts = {
        s.name: s.experiment.environment
        for s in ctx.sources.experiments
        if s.experiment is not None
    }
    cells = [(row, ctx.result(row)) for row in records(ctx.cells)]
    ok = [pair for pair in cells if pair[0]["status"] == "ok"] or cells
    runs = [_Run.of(r, r.environment or hosts.get(str(row["experiment"])) or {}) for row, r in ok]
    if runs:
        return runs
    for source in ctx.sources.experiments:
        runs += [_Run.of(p.result, p.result.environment) for p in source.profiles if p.result]
        for comm in source.comm:
            environment = dict(comm.environment)
            if comm.device_name:
                environment["device_name"] = comm.device_name
            runs.append(_Run(comm.device, comm.world_size, comm.nodes, environment))
    return runs


def _cpu_name(environment: dict[str, Any]) -> str:
    model = str(environment.get("cpu_model") or words("headline.cpu_unknown"))
    cores = integer(environment.get("usable_cores") or environment.get("cpu_count"))
    return words("headline.cpu_cores", model=model, cores=cores) if cores else model


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
        name = gpu_name(run.environment) or words("headline.devices_unknown", device=run.device)
        gpus[name] = max(gpus[name], run.world_size)
        gpu_nodes = max(gpu_nodes, run.nodes)
    parts = [of(count, name) for name, count in gpus.items()]
    if parts and gpu_nodes > 1:
        parts[-1] = words("headline.on_nodes", gpus=parts[-1], nodes=gpu_nodes)
    for name, nodes in cpus.items():
        hosts = "headline.cpu_hosts" if nodes > 1 else "headline.cpu_host"
        parts.append(words(hosts, nodes=nodes, name=name))
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
    return dates[0] if len(dates) == 1 else words("headline.dates", first=dates[0], last=dates[-1])


def _descriptions(ctx: Context) -> list[str]:
    """The configs' `description:` on one line each, each different one once."""
    found = []
    for source in ctx.sources.experiments:
        config = source.experiment.config if source.experiment is not None else {}
        text = " ".join(str(config.get("description") or "").split())
        if text and text not in found:
            found.append(text)
    return found


def description(ctx: Context) -> str | None:
    """The configs' `description:` (each different one once), on one line, cut to
    MAX_DESCRIPTION characters."""
    joined = "; ".join(_descriptions(ctx))
    if len(joined) > MAX_DESCRIPTION:
        joined = joined[: MAX_DESCRIPTION - 1].rstrip() + "…"
    return joined or None


# ---------------------------------------------------------------- the verdict


def _marked_path_check(ctx: Context) -> bool:
    """Whether every measured cell's own record carries the workload level's mark: a run kept
    without its config.yaml is still known for what it is."""
    rows = [row for row in records(ctx.cells) if row["status"] == "ok"]
    marked = [
        any(w.finding.code == PATH_CHECK_MARK for w in ctx.result(row).warnings) for row in rows
    ]
    return bool(marked) and all(marked)


def purpose(ctx: Context) -> list[Finding]:
    """What the sweep's figures can be used for (`run_purpose`), from its cells, its configs'
    mark and the GPUs its node has."""
    counts = [len(r.environment.get("gpus") or []) for r in _runs(ctx) if r.device != "cpu"]
    path_check = is_path_check(_descriptions(ctx)) or _marked_path_check(ctx)
    return run_purpose(ctx.cells, path_check=path_check, node_gpus=max(counts, default=0) or None)


def purpose_text(findings: list[Finding]) -> str:
    """The purpose findings as the headline's opening sentences ('' for none)."""
    return "".join(f"{wording.say(f)}. " for f in findings)


def _span(row: dict[str, Any]) -> str:
    """'from 1 to 2 CPU ranks', 'to 8 GPUs' (from one rank: its base is plain)."""
    base = integer(row["base_world_size"])
    to = ranks(row["world_size"], row["device"])
    return words(
        "headline.span_from" if base and base > 1 else "headline.span_to", base=base, to=to
    )


def _group_names(ctx: Context, rows: list[dict[str, Any]]) -> list[str]:
    """What tells a model's configurations apart, plainly: 'batch 16' where only the batch
    differs, else the group's name ('b16 fp32 ddp')."""
    keys = ("precision", "strategy", "device", "experiment")
    if all(len({str(r.get(k)) for r in rows}) == 1 for k in keys):
        return [words("headline.batch", batch=integer(r["batch_size"])) for r in rows]
    return [ctx.group_name(r) for r in rows]


def _largest_per_group(scaled: pd.DataFrame) -> list[dict[str, Any]]:
    """Each configuration's row at its largest world size (the fastest there), batch order.
    Over plain rows: a 500-cell sweep has a hundred groups."""

    def key(row: dict[str, Any]) -> tuple[float, float]:
        return finite(row["world_size"]) or 0.0, finite(row["samples_per_s"]) or 0.0

    best: dict[Any, dict[str, Any]] = {}
    for row in records(scaled):
        held = best.get(row["group"])
        if held is None or key(row) > key(held):
            best[row["group"]] = row
    return sorted(best.values(), key=lambda r: (integer(r["batch_size"]) or 0, str(r["group"])))


def _scaling_line(ctx: Context, model: str, rows: list[dict[str, Any]]) -> str:
    """'tiny-gpt2, scaling to 2 CPU ranks: linear within noise with batch 16, 74-84 % of
    linear with batch 32': every configuration of the model at its largest world size; beyond
    MAX_GROUPS the lowest and the highest, with the count."""
    groups = _group_names(ctx, rows)
    spans = {_span(r) for r in rows}
    shared = spans.pop() if len(spans) == 1 else None
    phrases = [
        words(
            "headline.with" if shared else "headline.span_with",
            efficiency=efficiency_phrase(*interval(r, "efficiency"), repeats_of(r)),
            span=_span(r),
            config=g,
        )
        for g, r in zip(groups, rows, strict=True)
    ]
    code = "headline.scaling" if shared else "headline.scaling_spans"
    if len(rows) <= MAX_GROUPS:
        return words(code, model=model, span=shared, phrases=phrases)
    order = sorted(range(len(rows)), key=lambda i: finite(rows[i]["efficiency"]) or 0.0)
    low, high = phrases[order[0]], phrases[order[-1]]
    return words(f"{code}_range", model=model, span=shared, n=len(rows), low=low, high=high)


def _single_size_line(ctx: Context, model: str) -> str:
    """A model measured at one world size: its best throughput, of how many configurations
    that may be ranked (FSDP on one device is not: said beside them)."""
    measured = ctx.measured_pooled[ctx.measured_pooled["model_label"] == model]
    ranked = comparable(measured)
    pool = measured if ranked.empty else ranked
    best = dict(pool.loc[pd.to_numeric(pool["samples_per_s"]).idxmax()])
    where = ranks(best["world_size"], best["device"])
    runs = finite(best.get(RUN_COLUMN)) or 1
    median = words("headline.median", runs=int(runs)) if runs > 1 else ""
    of = ""
    if len(ranked) > 1:  # 'fastest' only where the best line names it beyond noise
        pick = by_throughput(ctx, model)
        first = pick is not None and pick.row["cell_id"] == best["cell_id"]
        fastest = "headline.fastest"
        if first and pick is not None and pick.unsized:
            fastest = "headline.fastest_unsized"
        elif not (first and pick is not None and pick.clear):
            fastest = "headline.none_fastest"
        of = words(fastest, n=len(ranked))
    for why in left_out_findings(measured):
        of += f"; {wording.say(why)}"
    config = (
        words("headline.with_config", config=ctx.label(best, model=False))
        if len(measured) > 1
        else ""
    )
    figure = first_screen_throughput(best)
    said = {"model": model, "where": where, "config": config, "of": of, "figure": figure}
    if figure.startswith("not measurable"):
        return words("headline.not_measurable", **said)
    busy = f" ({unusable_why(best)})" if unusable_why(best) else ""  # as the best line says
    rate = with_unit(figure, "samples/s")
    return words("headline.reaches", **said, rate=rate, median=median, busy=busy)


def _cheapest(ctx: Context, pick: Pick | None) -> str:
    """'; cheapest $0.06 per M tokens (b8 x2 fp32 ddp)', ' at $0.41 per M tokens' where one
    configuration was priced, '' without a price."""
    if pick is None:
        return ""
    row = pick.row
    tokens = finite(row.get("cost_per_m_tokens"))
    money = (
        words("headline.per_m_tokens", cost=fmt(tokens, "money"))
        if tokens is not None
        else words(
            "headline.per_m_samples", cost=fmt(finite(row.get("cost_per_m_samples")), "money")
        )
    )
    if pick.runner_up is None:  # one priced configuration: its cost, nothing to compare
        return words("headline.priced_at", cost=money)
    return words("headline.cheapest", cost=money, config=ctx.label(row, model=False))


def _model_line(
    ctx: Context, model: str, weak: pd.DataFrame, priced: pd.DataFrame | None, usable: bool
) -> Text:
    """One plain line per model over every configuration it ran (never one batch
    size standing for the model)."""
    scaled = weak[(weak["model_label"] == model) & (weak["world_size"] > weak["base_world_size"])]
    if not usable:  # as its cards: no figure (no efficiency, throughput, cost or MFU), only why
        return Text(text=_unused_line(model, _largest_per_group(scaled)), severity="info")
    cost = _cheapest(ctx, by_cost(priced, model)) + gpu_phrase(ctx, model)
    if scaled.empty:
        return Text(text=_single_size_line(ctx, model) + cost, severity="info")
    rows = _largest_per_group(scaled)
    trusted = all(is_trusted(r) for r in records(weak[weak["model_label"] == model]))
    severity = _worst(efficiency_severity(*interval(r, "efficiency")) for r in rows)
    if severity == "good" and not trusted:  # a check mark only from quiet, reliable cells
        severity = "info"
    return Text(text=_scaling_line(ctx, model, rows) + cost, severity=severity)


def _unused_line(model: str, rows: list[dict[str, Any]]) -> str:
    """'tiny-gpt2, scaling to 2 CPU ranks over 4 configurations: not usable (these numbers
    cannot be used)': what was measured, no figure; the headline above says why."""
    spans = {_span(r) for r in rows}
    over = words("headline.over", n=len(rows)) if len(rows) > 1 else ""
    code = "headline.unused_scaling" if len(spans) == 1 else "headline.unused"
    return words(code, model=model, span=spans.pop() if spans else None, over=over)


def _alike_once(lines: list[tuple[str, Text]]) -> list[Text]:
    """Models whose lines say the same thing but for their names, as one line naming them all
    ('scale-model-1, scale-model-2, scale-model-3 and 2 more (5 models), scaling to ...'):
    five identical lines took the first screen from the decision."""
    grouped: dict[tuple[str, Severity], list[str]] = {}
    for model, line in lines:  # a model's line opens with its name
        rest = line.text.removeprefix(model) if line.text.startswith(model) else line.text
        key = (rest, line.severity) if rest != line.text else (f"\0{model}", line.severity)
        grouped.setdefault(key, []).append(model)
    said = []
    for (rest, severity), models in grouped.items():
        if rest.startswith("\0"):  # a line that does not open with its model: as it was
            said.append(next(t for m, t in lines if m == models[0]))
            continue
        who = (
            models[0]
            if len(models) == 1
            else words("headline.alike", models=names(models), n=len(models))
        )
        said.append(Text(text=who + rest, severity=severity))
    return said


def _model_lines(ctx: Context, priced: pd.DataFrame | None, usable: bool) -> list[Text]:
    models = ctx.models
    weak = ctx.weak_scaling
    lines = _alike_once(
        [(m, _model_line(ctx, m, weak, priced, usable)) for m in models[:MAX_MODEL_LINES]]
    )
    if len(models) > MAX_MODEL_LINES:
        more = words("headline.more_models", n=len(models) - MAX_MODEL_LINES)
        lines.append(Text(text=more, severity="info"))
    return lines


def _best_line(ctx: Context, priced: pd.DataFrame | None, usable: Usability) -> Text | None:
    """'Best configuration by cost: tiny-gpt2 b32 x2 fp32 ddp (b16 x2 fp32 ddp costs +35 %
    [+20, +52] more per sample); tiny-mlp: no clear best (within noise: ...)'. A best is named
    only where it leads the next beyond noise, and none where the numbers cannot be used."""
    models = ctx.models[:MAX_MODEL_LINES]
    if not models:
        return None
    if usable.usable == "no":
        return Text(text=words("headline.best_unusable", none_named=NONE_NAMED))
    by = "cost" if priced is not None else "throughput"
    picks = [
        (by_cost(priced, m) if priced is not None else None) or by_throughput(ctx, m)
        for m in models
    ]
    parts = []
    for model, pick in zip(models, picks, strict=True):
        if pick is None:
            why = none_named_why(ctx, model)
            if why is not None:
                parts.append(
                    words("headline.best_none", model=model, none_named=NONE_NAMED, why=why)
                )
            continue
        other = ctx.label(pick.runner_up) if pick.runner_up is not None else None
        named = pick.runner_up is None or pick.clear or pick.unsized
        parts.append(
            words(
                "headline.best_clear" if named else "headline.best_unclear",
                model=pick.model,
                config=ctx.label(pick.row),
                lead=lead_text(pick, other),
                no_clear_best=NO_CLEAR_BEST,
            )
        )
    clear = all(p is not None and p.clear for p in picks)
    trusted = all(
        p is not None and is_trusted(p.row) and p.runner_up is not None and is_trusted(p.runner_up)
        for p in picks
    )
    return Text(
        text=words(f"headline.best_by_{by}", parts=parts),
        severity="good" if clear and trusted else "info",
    )


def _sentence(ctx: Context, text: str) -> str:
    """`text` with a capital first letter, unless it opens with a model's name ('gpt2 b16 ...'
    stays as the model is called, never 'Gpt2')."""
    if any(text.startswith(model) for model in ctx.models):
        return text
    return text[:1].upper() + text[1:]


def _baseline_line(ctx: Context) -> Text | None:
    if ctx.comparison is None:
        return None
    against = ", ".join(s.name for s in ctx.baseline.experiments) if ctx.baseline else ""
    largest = largest_change_items(ctx, ctx.comparison, 1)
    phrase, severity = baseline_phrase(ctx.comparison, against, largest[0] if largest else None)
    return Text(text=_sentence(ctx, phrase) + ".", severity=severity)


def _actions(ctx: Context, usable: Usability) -> list[Text]:
    """What to fix or buy, most urgent first: the command that finishes a stopped sweep, the
    host or the repeats where they spoiled the numbers, the failed cells, the regressions, then
    (only where the numbers can be used) the costliest bottleneck's recommendation."""
    said = [*_finish(ctx), *usable.actions]
    if ctx.comparison is not None and ctx.comparison.regressions:
        said.append(words("headline.look_into", n=ctx.comparison.regressions))
    if not usable.host_first and usable.usable in ("yes", "with care") and ctx.findings:
        said.append(action_text(ctx.findings[0]))
    severity: Severity = "bad" if usable.usable == "no" else "warn"
    texts = [
        Text(text=_sentence(ctx, a) + ("" if a.endswith(".") else "."), severity=severity)
        for a in dict.fromkeys(said)
    ]
    return texts[:MAX_ACTIONS]


def baseline_phrase(
    comparison: Comparison, against: str, largest: str | None = None
) -> tuple[str, Severity]:
    """'2 regressions against X', 'no regression against X in 12 judged cells (3 not judged)', or
    'none of 3 matched cells could be judged against X': "no regression" only where the rule judged
    something (nothing judged is no pass); each with the largest change, judged or not (`largest`:
    'tiny-gpt2 b16 x2 fp32 ddp -49 % [-61, -33], not judged: 2 repeats a side')."""
    matched, judged = len(comparison.pairs), comparison.judged
    tail = "_largest" if largest else ""
    said = {"against": against, "largest": largest, "unjudged": matched - judged}
    if comparison.regressions:
        return words(f"headline.regressions{tail}", **said, n=comparison.regressions), "bad"
    if not matched:
        return words("headline.no_match", **said), "warn"
    if not judged:
        return words(f"headline.none_judged{tail}", **said, n=matched), "warn"
    unjudged = "_unjudged" if matched > judged else ""
    hidden = unconfirmed(comparison)
    severity: Severity = "warn" if matched > judged or hidden else "good"
    return words(f"headline.no_regression{unjudged}{tail}", **said, n=judged), severity


_ORDER: dict[Severity, int] = {"good": 0, "info": 1, "warn": 2, "bad": 3}


def _worst(severities: Iterable[Severity]) -> Severity:
    """The worst severity that says something ('info' is neutral: it only stands alone)."""
    said = [s for s in severities if s != "info"]
    return max(said, key=lambda s: _ORDER[s], default="info")


def _per_experiment(ctx: Context, said: list[tuple[str, str]]) -> list[str]:
    """Each experiment's words, named where the report has several ([] where none said any)."""
    said = [(name, text) for name, text in said if text]
    if len(ctx.progress) == 1:
        return [text for _, text in said]
    return [words("headline.sweep_state", name=name, state=text) for name, text in said]


def _sweep_state(ctx: Context) -> str | None:
    """Each experiment's sweep that did not run every planned cell, in one sentence each
    ('Sweep stopped by SIGTERM during cell 7 of 8.'), the headline's."""
    return (
        " ".join(_per_experiment(ctx, [(n, p.sentence() or "") for n, p in ctx.progress])) or None
    )


def _not_measured(ctx: Context) -> list[Text]:
    """The cells each sweep did not measure, by state with their reasons: a line under the
    headline (the summary's cells card counts them)."""
    said = _per_experiment(ctx, [(n, p.details()) for n, p in ctx.progress])
    return [Text(text=text, severity="warn") for text in said]


def _finish(ctx: Context) -> list[str]:
    """The command that finishes each sweep with cells left to run: the first thing to do."""
    return _per_experiment(ctx, [(n, p.finish()) for n, p in ctx.progress])


def _path_check(ctx: Context, found: list[Finding], usable: Usability) -> tuple[Text, Decision]:
    """The workload level's cells: how many ran, never how usable their figures are (no
    quality of noise makes a path check a figure); no call, no best; the next step is a
    measurement."""
    ok, cells = len(ctx.ok), len(ctx.cells)
    state = _sweep_state(ctx)
    text = purpose_text(found) + words("headline.path_ran", ok=ok, cells=cells)
    severity: Severity = "good" if ok == cells and state is None else "warn"
    headline = Text(text=f"{state} {text}" if state else text, severity=severity)
    finish = [Text(text=t, severity="warn") for t in _finish(ctx)]
    actions = [*finish, Text(text=words("headline.measure_it") + ".", severity="info")]
    models = _not_measured(ctx) + _model_lines(ctx, ctx.pooled_priced, usable.usable != "no")
    models += _diagnosed(ctx)
    return headline, Decision(usable=usable.usable, models=models, actions=actions)


def _diagnosed(ctx: Context) -> list[Text]:
    """The profiled runs' lines that carry a diagnosis, at most MAX_PROFILE_LINES."""
    lines = [
        t
        for t, ref in zip(profile_lines(ctx), ordered_profiles(ctx), strict=True)
        if ref.diagnosis is not None
    ]
    return lines[:MAX_PROFILE_LINES]


def verdict(ctx: Context) -> tuple[Text | None, Decision | None]:
    """The headline sentence and the decision under it (see the module docstring); a
    profile-only or comm-only source gets its own (`run_verdicts`); (None, None) when the
    sources hold nothing to judge."""
    if not len(ctx.cells) and not ctx.unreadable and not ctx.unreached():
        return run_verdict(ctx)
    usable = ctx.usability if ctx.usability is not None else judge(ctx)
    found = purpose(ctx)
    if any(f.code == PATH_CHECK for f in found):
        return _path_check(ctx, found, usable)
    headline = Text(text=usable.sentence(), severity=usable.severity)
    state = _sweep_state(ctx)
    if state is not None:  # how far the sweep got comes first: a stopped one never reads whole
        severity = usable.severity if usable.severity in ("bad", "warn") else "warn"
        headline = Text(text=f"{state} {headline.text}", severity=severity)
    headline.text = purpose_text(found) + headline.text
    priced = ctx.pooled_priced
    measured = usable.usable != "nothing to judge"
    decision = Decision(
        usable=usable.usable,
        models=_not_measured(ctx)
        + (_model_lines(ctx, priced, usable.usable != "no") if measured else [])
        # of the models given a line, those a rerun alone would leave without an MFU call
        + uncalled(ctx, usable.usable, ctx.models[:MAX_MODEL_LINES]),
        best=_best_line(ctx, priced, usable) if measured else None,
        baseline=_baseline_line(ctx),
        actions=_actions(ctx, usable),
        calls=calls(ctx, usable.usable),
    )
    decision.models.extend(_diagnosed(ctx))
    return headline, decision
