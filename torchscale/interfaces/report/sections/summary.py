"""Executive summary: how many cells measured reliably (and, where the telemetry says so, how many
ran on a busy machine), the best configuration of each model (throughput, and cost when a price
is given) with its 95 % interval, its scaling efficiency at the largest world size, and the top
findings, one line each. A check mark goes only to a reliable cell's figures. The cards' notes and
the lines are worded by the catalogue's `summary.*` (contracts/wording/report.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from torchscale.contracts.thresholds import CV_WARN_THRESHOLD
from torchscale.contracts.wording.cell_warnings import level_word, plain
from torchscale.contracts.wording.figures import too_wide
from torchscale.contracts.wording.report import blind_below, words
from torchscale.contracts.wording.spell import tokens_per_s
from torchscale.interfaces.report.estimates import (
    PLUS_MINUS_NOTE,
    SUPER_LINEAR_NOTE,
    efficiency_kind,
    efficiency_phrase,
    efficiency_text,
    not_measurable,
    supported_figure,
    supported_rate,
    two_scopes_note,
)
from torchscale.interfaces.report.model import (
    MAX_CARDS,
    Block,
    KeyFigure,
    KeyFigures,
    ReportFinding,
    Section,
    Severity,
    Table,
    Text,
    Unavailable,
    ValueFormat,
)
from torchscale.interfaces.report.parts.best import (
    AHEAD_UNSIZED,
    NO_CLEAR_BEST,
    NONE_NAMED,
    Pick,
    by_cost,
    by_throughput,
    lead_text,
    none_named_why,
)
from torchscale.interfaces.report.parts.comparison import (
    LARGEST_CHANGES,
    largest_change_items,
    regression_figure,
    unconfirmed,
)
from torchscale.interfaces.report.parts.context import (
    Context,
    RankUnits,
    col,
    efficiency_severity,
    first_screen_throughput,
    fmt,
    integer,
    interval,
    is_quiet,
    is_reliable,
    is_trusted,
    names,
    present,
    rank_unit,
    ranks,
    rate_shown,
    rate_text_value,
    records,
    reliability_counts,
    reliability_severity,
    repeats_of,
    said_level,
    step_text,
    throughput_fields,
    throughput_text,
)
from torchscale.interfaces.report.parts.diagnosis import diagnoses_table
from torchscale.interfaces.report.parts.findings import no_finding_text
from torchscale.interfaces.report.parts.gpu_summary import gpu_table
from torchscale.interfaces.report.parts.tables import NO_PRICE
from torchscale.interfaces.report.parts.words import HOST_FIRST, term_column
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.analysis.regressions import RUN_COLUMN, Comparison
from torchscale.offline.analysis.reliability import LEVELS, UNSETTLED, row_verdict
from torchscale.offline.analysis.scaling_efficiency import REASON_COLUMN
from torchscale.offline.results import profile_figures
from torchscale.offline.results.sweep_progress import PENDING, UNREACHED

MAX_MODEL_FIGURES = 6  # per-model key figures; the table lists every model
TOP_FINDINGS = 5
# telemetry of other load on the machine during the windows (used only where the results have it)
BUSY_COLUMNS = ("other_cpu_cores", "load_avg_1m", "other_gpu_processes", "busy_machine")
BUSY_FLAG = "busy_machine"  # True where the telemetry judged the machine busy
BUSY_WARNING = "busy machine"  # the same verdict in the cell's warnings
BASELINE_FIGURE = "Regressions against the baseline"
NOT_JUDGED_FIGURE = "Not judged against the baseline"


def price_text(priced: pd.DataFrame, units: RankUnits) -> str:
    """'at $2.50 per GPU-hour' (the one price the cells were costed at, from the command line
    or the config's cost.per_gpu_hour), or 'at each result set's price per GPU-hour'."""
    prices = sorted(set(pd.to_numeric(priced["price_per_gpu_hour"]).dropna().astype(float)))
    price = "summary.price" if len(prices) == 1 else "summary.price_each"
    return words(price, price=prices[0] if prices else None, unit=units.one)


def _config(ctx: Context, row: Mapping[str, Any] | pd.Series) -> str:
    return ctx.label(row, model=False)


def _best_rows(ctx: Context, priced: pd.DataFrame | None) -> list[dict[str, Any]]:
    """Per model its best configuration by throughput and, when priced, by cost (one row when
    the same cell wins both), each with its lead over the next one: a best is called so only
    where that lead is beyond noise ("no clear best (within noise)" otherwise)."""
    rows: list[dict[str, Any]] = []
    for model in ctx.models:
        fastest = by_throughput(ctx, model)
        if fastest is None:
            why = none_named_why(ctx, model)
            if why is not None:  # the table says what the headline says: no best
                rows.append(
                    {"model": model, "best_by": NONE_NAMED, "lead": why, "_severity": "warn"}
                )
            continue
        picks: list[tuple[str, Pick]] = [("throughput", fastest)]
        cheapest = by_cost(priced, model)
        if cheapest is not None:
            if cheapest.row["cell_id"] != fastest.row["cell_id"]:
                picks.append(("cost", cheapest))
            else:
                picks = [("throughput_and_cost", fastest), ("", cheapest)]
        for by, pick in picks:
            row = pick.row
            lead = lead_text(pick, ctx.label(pick.runner_up) if pick.runner_up else None)
            if not by:  # the same cell's lead by cost, beside its lead by throughput
                rows[-1]["lead"] += words("summary.by_cost", lead=lead)
                continue
            best_by = words(f"summary.best_by.{by}")
            if not (pick.clear or pick.runner_up is None):
                unclear = AHEAD_UNSIZED if pick.unsized else NO_CLEAR_BEST
                best_by = words("summary.best_by_unclear", by=best_by, unclear=unclear)
            out = {
                "model": model,
                "best_by": best_by,
                "lead": lead,
                "config": _config(ctx, row),
                "gpus": integer(row["world_size"]),
                "batch_per_gpu": integer(row["batch_size"]),
                **throughput_fields(row),
                "tokens_per_s": rate_shown(row, "tokens_per_s"),
                "efficiency": finite(row["scaling_efficiency"]),
                "efficiency_low": finite(row["scaling_efficiency_low"]),
                "efficiency_high": finite(row["scaling_efficiency_high"]),
                "efficiency_text": _efficiency_cell(row),
                # the first screen: no number for a figure its interval does not support
                "samples_per_s_text": first_screen_throughput(row),
                "step_p50_s": finite(row["step_p50_s"]),
                "step_p50_text": step_text(row, "p50"),
                "reliability": said_level(row["reliability"]),
                "_severity": "warn" if row["reliability"] in UNSETTLED else "info",
            }
            if priced is not None:
                match = priced[
                    (priced["cell_id"] == row["cell_id"])
                    & (priced["experiment"] == row["experiment"])
                ]
                cost = match.iloc[0] if len(match) else {}
                out["cost_per_m_samples"] = finite(cost.get("cost_per_m_samples"))
                out["cost_per_m_tokens"] = finite(cost.get("cost_per_m_tokens"))
            rows.append(out)
    if ctx.usability is not None and ctx.usability.usable == "no":  # the headline's decision
        why = words("usable.unusable_why", reason=ctx.usability.reason)
        firsts = {r["model"]: r for r in reversed(rows)}  # one row a model, its first, no figure
        rows = [
            {
                "model": r["model"],
                "best_by": NONE_NAMED,
                "lead": why if "config" in r else r["lead"],  # a row with no figure: its why
                "_severity": "warn",
            }
            for r in rows
            if firsts[r["model"]] is r
        ]
    return rows


def _efficiency_cell(row: dict[str, Any]) -> str | None:
    """A cell's own scaling efficiency as the tables show it (its base: '(base)'; 'no base'
    where no smaller world size was measured in its group: no figure, never 100 %)."""
    efficiency, low, high = interval(row, "scaling_efficiency")
    reason = str(row.get(REASON_COLUMN) or "")
    if efficiency is None and reason.startswith("no base"):
        return "no base"
    base = reason.startswith("base") or (efficiency == 1.0 and low is None and not reason)
    if not base and too_wide(efficiency, low, high):
        return not_measurable(repeats_of(row))
    return efficiency_text(efficiency, low, high, base=base)


def largest_scaled(weak: pd.DataFrame, model: str) -> dict[str, Any] | None:
    """The row a model's scaling is judged by: at its largest GPU count that has a smaller one
    to compare with (one GPU count alone would read a trivial 100 %), the fastest there; None
    when no configuration of the model ran at two GPU counts. One pick, so the summary and the
    headline say the same figure."""
    scaled = weak[(weak["model_label"] == model) & (weak["world_size"] > weak["base_world_size"])]
    if scaled.empty:
        return None
    at_largest = scaled[scaled["world_size"] == scaled["world_size"].max()]
    return dict(at_largest.loc[pd.to_numeric(at_largest["samples_per_s"]).idxmax()])


def _efficiency_figure(ctx: Context, model: str, weak: pd.DataFrame) -> KeyFigure:
    """Efficiency at the model's largest GPU count that has a smaller one to compare with, with its
    95 % interval: above 1 it reads "linear within noise" unless the interval is above 1 too."""
    row = largest_scaled(weak, model)
    if row is None:
        return KeyFigure(
            label=f"Scaling efficiency: {model}",
            value=None,
            format="ratio_pct",
            note=words("summary.scaling_none"),
        )
    largest = ranks(row["world_size"], row["device"])
    efficiency, low, high = interval(row, "efficiency")
    kind = efficiency_kind(efficiency, low, high)
    against = {"config": _config(ctx, row), "against": ranks(row["base_world_size"], row["device"])}
    note = words("summary.scaling_against", **against)
    value: float | str | None = kind if kind == "linear within noise" else efficiency
    phrase = efficiency_phrase(efficiency, low, high, repeats_of(row))
    measurable = not phrase.startswith("not measurable")
    if not measurable:  # the headline's words, and no number: the two never disagree
        value = phrase
        note = words("summary.scaling_too_wide", **against)
    else:
        note += f"; {efficiency_text(efficiency, low, high)}"
        note += f"; {SUPER_LINEAR_NOTE}" if kind == "super-linear" else ""
    base = weak[
        (weak["model_label"] == model)
        & (weak["group"] == row["group"])
        & (weak["world_size"] == row["base_world_size"])
    ]
    reliable = is_trusted(row) and all(is_trusted(b) for b in records(base))
    if not reliable:
        note += words("summary.scaling_untrusted")
    shown: ValueFormat = "ratio_pct"
    if isinstance(value, float):  # the digits its interval supports, as the note says it
        value, shown = supported_figure(value, low, high, "ratio_pct")
    return KeyFigure(
        label=f"Scaling efficiency at {largest}: {model}",
        value=value,
        format=shown,
        note=note,
        severity=efficiency_severity(efficiency, low, high, reliable=reliable)
        if measurable
        else "warn",
    )


def _reliability_figure(ctx: Context) -> KeyFigure | None:
    """How many measured cells are reliable, noisy, or of unknown spread (one repeat)."""
    measured = ctx.measured
    if measured.empty:
        return None
    counts = {level: len(rows) for level, rows in reliability_counts(measured).items()}
    others = [
        words("summary.level_count", n=counts[level], level=level_word(level))
        for level in LEVELS[1:]
        if counts[level]
    ]
    note = "summary.reliable_note" if others else "summary.reliable_note_all"
    return KeyFigure(
        label="Cells reliable",
        value=words("summary.count_of", n=counts["reliable"], total=len(measured)),
        note=words(note, others=others, bound=CV_WARN_THRESHOLD),
        severity="good" if counts["reliable"] == len(measured) else "warn",
    )


def _headline(ctx: Context) -> Text | None:
    """'9 of 12 cells reliable; 2 noisy (a, b), 1 spread unknown (c).', and how many cells ran
    on a busy machine where the telemetry recorded it."""
    measured = ctx.measured
    if measured.empty:
        return None
    rows = records(measured)
    found = reliability_counts(measured)
    parts = [
        words(
            "summary.level_cells",
            n=len(found[level]),
            level=level_word(level),
            cells=names(ctx.label(rows[i]) for i in found[level]),
        )
        for level in LEVELS[1:]
        if found[level]
    ]
    clauses = [words("summary.reliable_cells", n=len(found["reliable"]), total=len(rows))]
    clauses += [", ".join(parts)] if parts else []
    busy, calm = _busy(ctx, measured) or (None, True)
    clauses += [busy] if busy is not None else []
    reliable = len(found["reliable"]) == len(rows)
    said = words("summary.headline", clauses=clauses)
    return Text(text=said, severity="good" if reliable and calm else "warn")


def _busy(ctx: Context, measured: pd.DataFrame) -> tuple[str, bool] | None:
    """How many cells ran on a busy machine, from the telemetry's busy-machine warning, out of
    the cells whose telemetry looked, and whether none did (None when no cell has that
    telemetry: then nothing can be said either way)."""
    columns = [c for c in BUSY_COLUMNS if c in measured.columns]
    if not columns:
        return None
    looked = measured[measured[columns].notna().any(axis=1)]
    if looked.empty:
        return None
    if BUSY_FLAG in looked.columns:  # the telemetry's own verdict, where the table has it
        busy = looked[BUSY_FLAG].map(lambda v: v is True or v == 1.0)
    else:
        busy = looked["warnings"].astype(str).str.contains(BUSY_WARNING, case=False)
    warned = looked[busy.astype(bool)]
    if warned.empty:
        return words("summary.busy_none", n=len(looked)), True
    which = names(ctx.label(r) for r in records(warned))
    return words("summary.busy_some", n=len(warned), total=len(looked), cells=which), False


def _cells_figure(ctx: Context) -> KeyFigure:
    """'4 of 8' cells measured, the rest by why: failed, stopped, not reached, skipped by design,
    unreadable (their result file could not be used): every cell file counts."""
    cells = ctx.cells
    ok = int((cells["status"] == "ok").sum())
    failed = int(cells["status"].isin(["failed", "oom", "timeout"]).sum())
    skipped = int((cells["status"] == "skipped").sum())  # by design: the plan's skip
    unreached = ctx.unreached()
    stopped = sum(c.state == "stopped" for _, c in unreached)
    not_reached = sum(c.state == UNREACHED for _, c in unreached)  # the sweep stopped first
    pending = sum(c.state == PENDING for _, c in unreached)  # handed on, or going on
    skipped += sum(c.state == "skipped" for _, c in unreached)  # skipped with no result file
    unreadable = ctx.unreadable
    total = len(cells) + unreadable + len(unreached)
    if not total:
        return KeyFigure(
            label="Cells measured",
            value=None,
            note=words("summary.no_sweep", other=ctx.other_contents()),
        )
    why = (
        (failed, "failed"),
        (stopped, "stopped"),
        (not_reached, "not_reached"),
        (pending, "pending"),
        (skipped, "skipped"),
        (unreadable, "unreadable"),
    )
    note = ", ".join(words(f"summary.cells.{what}", n=count) for count, what in why if count)
    return KeyFigure(
        label="Cells measured",
        value=words("summary.count_of", n=ok, total=total),
        note=note or words("summary.cells.all_ok"),
        severity="good" if ok == total else ("bad" if failed or unreadable else "warn"),
    )


def _figures(ctx: Context, priced: pd.DataFrame | None) -> list[KeyFigure]:
    figures = [_cells_figure(ctx), *present(_reliability_figure(ctx))]
    models = ctx.models
    weak = ctx.weak_scaling
    for model in models[:MAX_MODEL_FIGURES]:
        label = f"Highest throughput: {model}"
        fastest = by_throughput(ctx, model)
        if fastest is None:  # never a highest figure from cells the page calls unusable
            note = none_named_why(ctx, model) or words("summary.no_config")
            figures.append(KeyFigure(label=label, value=NONE_NAMED, note=note, severity="warn"))
            figures.append(_efficiency_figure(ctx, model, weak))
            continue
        best = pd.Series(fastest.row)
        tokens = rate_text_value(best, "tokens_per_s")
        note = words(
            "summary.throughput_at", config=_config(ctx, best), throughput=throughput_text(best)
        )
        runs = finite(best.get(RUN_COLUMN)) or 1
        if runs > 1:
            note += words("summary.median_of_runs", runs=int(runs))
        if tokens is not None:
            note += f"; {tokens_per_s(tokens)}"
        if not is_reliable(best):
            # its verdict in the first screen's words; a median of runs was judged over the runs
            # (its reason says so, as stored in the table)
            verdict = row_verdict(dict(best)) if runs == 1 else None
            note += f"; {plain(verdict.finding) if verdict else best['reliability_reason']}"
        if not is_quiet(best):
            note += words("summary.ran_busy")
        value, low, high = interval(best, "samples_per_s")
        if too_wide(value, low, high):  # the figure says nothing: no number on the card
            note = words("summary.throughput_too_wide", config=_config(ctx, best))
            shown: float | str | None = not_measurable(repeats_of(best))
            figures.append(KeyFigure(label=label, value=shown, note=note, severity="warn"))
        else:
            shown, shown_as = supported_rate(value, low, high)
            severity = reliability_severity(best)
            figures.append(
                KeyFigure(label=label, value=shown, format=shown_as, note=note, severity=severity)
            )
        figures.append(_efficiency_figure(ctx, model, weak))
        costs = priced[priced["model_label"] == model] if priced is not None else None
        if costs is not None and not costs.empty:
            cheapest = costs.loc[pd.to_numeric(costs["cost_per_m_samples"]).idxmin()]
            figures.append(
                KeyFigure(
                    label=f"Cost per million samples: {model}",
                    value=finite(cheapest["cost_per_m_samples"]),
                    format="money",
                    note=words(
                        "summary.cheapest",
                        config=_config(ctx, cheapest),
                        price=fmt(finite(cheapest["price_per_gpu_hour"]), "money"),
                        unit=ctx.units.one,
                    ),
                )
            )
    if priced is None and models:
        figures.append(
            KeyFigure(label="Cost per million samples", value=None, format="money", note=NO_PRICE)
        )
    for ref in ctx.profiles:
        stall = profile_figures.sync_stall_pct(ref.entry.analysis)
        figures.append(
            KeyFigure(
                label=f"Sync stall: {ref.label}",
                value=stall.value,
                format="pct",
                note=stall.reason or words("summary.sync_stall"),
                # a low stall is no verdict on whether the run can be trusted: no check mark
                severity="bad" if stall.value is not None and stall.value >= 10 else "info",
            )
        )
    if ctx.comparison is not None:
        figures += _baseline_figures(ctx.comparison)
    return figures


def _baseline_figures(comparison: Comparison) -> list[KeyFigure]:
    """The regressions against the baseline (a count only where something was judged: "not
    judged: N cells" in amber otherwise), and the matched cells not judged, when some were."""
    figure = regression_figure(comparison, BASELINE_FIGURE)
    blind = comparison.largest_undetectable
    if blind is not None:
        figure = figure.model_copy(update={"note": blind_below(figure.note, blind)})
    figures = [figure]
    if comparison.judged and comparison.not_judged:
        figures.append(
            KeyFigure(
                label=NOT_JUDGED_FIGURE,
                value=words(
                    "summary.cells_of", n=comparison.not_judged, total=len(comparison.pairs)
                ),
                note=words("summary.not_judged"),
                severity="warn",
            )
        )
    return figures


def _changes_line(ctx: Context, comparison: Comparison) -> Text | None:
    """'Largest changes against the baseline: tiny-gpt2 b16 x2 fp32 ddp -49 % [-61, -33],
    not judged: 2 repeats a side; ...': judged or not, each with its interval."""
    items = largest_change_items(ctx, comparison, LARGEST_CHANGES)
    if not items:
        return None
    if comparison.regressions:
        severity: Severity = "bad"
    elif comparison.not_judged or unconfirmed(comparison) or not comparison.judged:
        severity = "warn"
    else:
        severity = "info"
    return Text(text=words("summary.largest_changes", items=items), severity=severity)


def _best_table(ctx: Context, priced: pd.DataFrame | None) -> Table | None:
    rows = _best_rows(ctx, priced)
    if not rows:
        return None
    world, batch = rank_unit(ctx.ok["device"])
    columns = [
        col("model", "Model"),
        col("best_by", "Best by"),
        col("lead", "Ahead of the next"),
        term_column("config", "config"),
        col("gpus", world, "int"),
        col("batch_per_gpu", batch, "int"),
        col("samples_per_s_text", "Samples/s ±95 %"),
    ]
    if any(r.get("tokens_per_s") is not None for r in rows):
        columns.append(col("tokens_per_s", "Tokens/s", "readable"))
    columns += [
        col("efficiency_text", "Scaling efficiency"),
        col("step_p50_text", "Step p50"),
        col("reliability", "Reliability"),
    ]
    if priced is not None:
        columns.append(col("cost_per_m_samples", "$ / M samples", "money"))
        if any(r.get("cost_per_m_tokens") is not None for r in rows):
            columns.append(col("cost_per_m_tokens", "$ / M tokens", "money"))
    note = words(
        "summary.best_note",
        plus_minus=PLUS_MINUS_NOTE,
        no_clear_best=NO_CLEAR_BEST,
        ahead_unsized=AHEAD_UNSIZED,
        scopes=two_scopes_note(bool(ctx.ok["mfu"].notna().any())),
    )
    if priced is not None:
        note += words("summary.best_note_cost", price=price_text(priced, ctx.units))
    if any(r.get("efficiency_text") == "no base" for r in rows):
        note += words("summary.best_note_no_base", unit=ctx.units.one)
    return Table(
        id="summary-best",
        title="Best configuration per model",
        columns=columns,
        rows=rows,
        note=note,
    )


def _lines(ctx: Context) -> list[Block]:
    lines: list[Block] = []
    cells = ctx.cells
    failed = cells[cells["status"].isin(["failed", "oom", "timeout"])]
    if len(failed):
        reasons = names(str(r) for r in failed["error"].dropna())
        which = names(ctx.label(r) for r in records(failed))
        said = words("summary.not_finished", n=len(failed), cells=which, reasons=reasons)
        lines.append(Text(text=said, severity="bad"))
    lines += [
        Text(text=words("summary.no_analysis", name=u.name, reason=u.reason), severity="warn")
        for _, u in ctx.unanalysed
    ]
    if ctx.comparison is not None and ctx.comparison.regressions:
        flagged = ctx.comparison.pairs[ctx.comparison.pairs["regression"]]
        which = names(ctx.label(r) for r in records(flagged))
        said = words("summary.regressions", n=ctx.comparison.regressions, cells=which)
        lines.append(Text(text=said, severity="bad"))
    if ctx.comparison is not None:
        lines += present(_changes_line(ctx, ctx.comparison))
    if ctx.findings and ctx.host_first:
        lines.append(Text(text=HOST_FIRST, severity="bad"))
    for finding, count in grouped_findings(ctx, ctx.findings)[:TOP_FINDINGS]:
        severity: Severity = "info" if ctx.host_first else finding.severity
        cost = (
            "" if finding.cost_pct is None else words("summary.finding_cost", cost=finding.cost_pct)
        )
        where = finding.source  # a label: a cell's, or its profiled run's (never a hashed id)
        said = "" if where in finding.title else words("summary.finding_where", where=where)
        if count > 1:
            said = words("summary.finding_cells", n=count, where=where)
        caveat = words("summary.caveat", caveat=finding.caveat) if finding.caveat else ""
        lines.append(Text(text=f"{cost}{finding.title}{said}.{caveat}", severity=severity))
    if not ctx.findings:
        said = words("summary.no_bottleneck", why=no_finding_text(ctx))
        lines.append(Text(text=said, severity="good"))
    return lines


def grouped_findings(
    ctx: Context, findings: list[ReportFinding]
) -> list[tuple[ReportFinding, int]]:
    """One entry per finding however many cells share it (the same code and figures, the same
    advice): its costliest instance and how many cells it is in, in the order of their
    costliest; at 500 cells the top five are five findings, not one five times."""
    groups: dict[tuple[str, str], list[ReportFinding]] = {}
    for finding in findings:
        key = (finding.group or finding.title, finding.recommendation or "")
        groups.setdefault(key, []).append(finding)
    return [(same[0], len(same)) for same in groups.values()]


MODEL_FIGURES = ("Highest throughput:", "Scaling efficiency", "Cost per million samples:")
FIRST = (BASELINE_FIGURE, "Cells measured", "Cells reliable")  # the cards that come first


def first_cards(figures: list[KeyFigure]) -> tuple[list[KeyFigure], list[KeyFigure]]:
    """(the first screen's cards, the rest): at most MAX_CARDS, the baseline's verdict and the
    cells' counts first (what the decision rests on), then the figures in the order built
    (each model's throughput, then its scaling)."""
    order = sorted(
        range(len(figures)),
        key=lambda i: (0, FIRST.index(figures[i].label)) if figures[i].label in FIRST else (1, i),
    )
    chosen = sorted(order[:MAX_CARDS])
    return [figures[i] for i in chosen], [f for i, f in enumerate(figures) if i not in chosen]


def _unjudged(figure: KeyFigure, why: str) -> KeyFigure:
    """A model's figure from numbers that cannot be used (the headline says why) shows no
    number and no verdict mark, only why: a bare '661,000' or '63.33 %' under "cannot be used"
    read as a clean figure, a red cross as the model's problem. Counts of cells and the
    baseline's verdict keep theirs; the tables further down keep the measurements."""
    if not figure.label.startswith(MODEL_FIGURES):
        return figure
    said = isinstance(figure.value, str) and figure.value.startswith((NONE_NAMED, "not "))
    if figure.value is None or said:  # no figure: its own why stays
        return figure.model_copy(update={"severity": "info"})
    note = words("usable.unusable_why", reason=why)
    value = words("usable.not_used")
    return figure.model_copy(
        update={"value": value, "format": "text", "note": note, "severity": "info"}
    )


def build(ctx: Context) -> Section:
    """The executive summary: key figures, the best configuration per model, top lines."""
    priced = ctx.pooled_priced
    figures = _figures(ctx, priced)
    if ctx.usability is not None and ctx.usability.usable == "no":
        figures = [_unjudged(f, ctx.usability.reason) for f in figures]
    cards, more = first_cards(figures)
    blocks: list[Block] = [KeyFigures(figures=cards)]
    blocks += present(_headline(ctx))
    table = _best_table(ctx, priced)
    if table is not None:
        blocks.append(table)
    elif len(ctx.cells):
        blocks.append(Unavailable(items={"best configuration": ctx.nothing_measured()}))
    blocks += present(gpu_table(ctx, ctx.models))
    if more:  # the figures past the first screen's cards, as a list after the best table
        blocks.append(KeyFigures(figures=more, role="more"))
    blocks += _lines(ctx) + present(diagnoses_table(ctx))
    return Section(id="summary", title="Executive summary", blocks=blocks)
