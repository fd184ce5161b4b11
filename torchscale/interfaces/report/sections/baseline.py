"""Against the baseline (only with --baseline): matched cells, the change of each key metric
with its interval, cells on one side only, and a verdict per cell by the stated rule
(`analysis.baseline.judge_change`, docs/regressions.md), which the section prints with its
parameters. Improvements are shown and never counted; cells with too few repeats are "not
enough repeats", never a regression."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from torchscale.contracts.wording.spell import as_set, p_figure, pct_set
from torchscale.interfaces.report.model import (
    Band,
    Block,
    Chart,
    KeyFigure,
    KeyFigures,
    Report,
    Section,
    Series,
    Severity,
    Table,
    Text,
    Unavailable,
)
from torchscale.interfaces.report.parts.comparison import (
    LARGEST_CHANGES,
    NO_CHANGE,
    change_text,
    regression_figure,
    short_verdict,
)
from torchscale.interfaces.report.parts.context import (
    Context,
    RankUnits,
    col,
    interval,
    records,
    text,
)
from torchscale.interfaces.report.parts.words import footnote, plain, term_column
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.analysis.regression_rule import METRICS, POWER, RegressionRule, min_p_value
from torchscale.offline.analysis.regressions import Comparison, PairVerdict, largest_changes
from torchscale.offline.analysis.uncertainty import LEVEL, SMALL

MATCH_TEXT = {"definition": "same definition", "key": "same key (settings differ)"}
# key figure labels, also read back by `gate_summary` (the CLI's exit code)
MATCHED = "Cells matched"
REGRESSIONS = "Regressions"
NOT_JUDGED = "Not judged"
LARGEST_TABLE = 10  # rows of the largest-changes table (the changes table has every cell)
LARGEST_TABLE_ID = "baseline-largest"
VERDICT_LABELS: dict[PairVerdict, str] = {
    "regression": REGRESSIONS,
    "improvement": "Improvements",
    "no significant change": "No significant change",
    "busy machine": "Not judged: busy machine",
    "not enough repeats": "Not enough repeats",
}


def rule_text(rule: RegressionRule, units: RankUnits) -> str:
    """The rule in words, with its parameters, and what else decides or is only shown."""
    shown = "; ".join(f"{m.label} ({m.judged_by})" for m in METRICS if not m.tested)
    return (
        f"{rule.describe()} Throughput is judged over the global samples/s of each repeat (a run's "
        "figure: their median); step time p50 over each repeat's median synchronised step (every "
        "rank), where the step records are there. A cell that ran ok in the baseline and fails "
        "now is a regression whatever its figures; a cell is a regression when any judged metric "
        f"is. Shown with their change, never judged: {shown}. Cells are matched by definition "
        f"hash, else by model, batch per {units.one}, {units.many}, precision, strategy and device."
    )


def _rule_table(rule: RegressionRule) -> Table:
    """The rule's parameters as data (the JSON report carries them as they were applied)."""
    e = rule.min_effect
    rows = [
        {
            "parameter": "test",
            "value": rule.test,
            "meaning": "on the per-run (else per-repeat) figures; its smallest p is not set "
            "by how few they are (4 vs 4 reach p < alpha whenever the sides are far apart "
            "for their spread)",
        },
        {"parameter": "alpha", "value": as_set(rule.alpha), "meaning": "p must be below it"},
        {
            "parameter": "minimum effect",
            "value": pct_set(e),
            "meaning": "|ratio of medians - 1| must reach it",
        },
        {
            "parameter": "interval",
            "value": f"{pct_set(LEVEL)} percentile bootstrap of the ratio of medians "
            f"(Welch's t on the log ratio when a side holds fewer than {SMALL})",
            "meaning": f"must lie entirely below {as_set(1 - e)} (or above {as_set(1 + e)})",
        },
        {
            "parameter": "repeats needed",
            "value": f"{rule.repeats_needed} per side",
            "meaning": "fewer: no test free of distribution assumptions can reach p < "
            f"{as_set(rule.alpha)} (3 vs 3: at best {p_figure(min_p_value(3, 3))}): not enough "
            "repeats, not judged",
        },
    ]
    return Table(
        id="baseline-rule",
        title="Regression rule",
        columns=[col("parameter", "Parameter"), col("value", "Value"), col("meaning", "Meaning")],
        rows=rows,
        note="docs/regressions.md: why these values, and the measured false-positive and "
        "detection rates",
    )


def _severity(row: pd.Series) -> Severity:
    if bool(row["regression"]):
        return "bad"
    if bool(row["improvement"]):
        return "good"
    return "warn" if row["verdict"] in ("not enough repeats", "busy machine") else "info"


def _verdict(row: pd.Series, rule: RegressionRule) -> str:
    if row["status_change"] in ("broke", "fixed"):
        return short_verdict(row)
    verdict = str(row["verdict"])
    alike = "; busy machine, loaded alike on both sides" if row.get("load_note") else ""
    if verdict in ("regression", "improvement"):
        which = [m.label for m in METRICS if m.tested and row[f"{m.key}_verdict"] == verdict]
        return f"{verdict} ({', '.join(which)}){alike}"
    if verdict == "no significant change":
        return f"{verdict}{alike}"
    if verdict == "busy machine":
        if str(row.get("units")) == "repeats" and "one run a side" in str(row.get("load_note")):
            return (
                "not judged: busy machine, one run a side (run the config 4 times a side to "
                "judge on a shared machine)"
            )
        return (
            "not judged: the machine's load differed between the runs (rerun both under the "
            "same load, best a quiet machine)"
        )
    if verdict == "not enough repeats":
        counted = str(row["samples_per_s_repeats"])
        if not counted.endswith("runs"):
            counted += " repeats"
        return f"not enough repeats ({counted}; need {rule.repeats_needed} per side)"
    return verdict


def _tested_table(ctx: Context, comparison: Comparison) -> Table:
    rows = [
        {
            "cell": ctx.label(row),
            "matched_by": MATCH_TEXT.get(str(row["matched_by"]), str(row["matched_by"])),
            "thr_base": finite(row["samples_per_s_baseline"]),
            "thr_now": finite(row["samples_per_s_current"]),
            "thr_change": finite(row["samples_per_s_change"]),
            "thr_low": finite(row["samples_per_s_change_low"]),
            "thr_high": finite(row["samples_per_s_change_high"]),
            "thr_p": finite(row["samples_per_s_p_value"]),
            "thr_detectable": finite(row["samples_per_s_detectable"]),
            "repeats": text(row["samples_per_s_repeats"]),
            "runs": text(row.get("runs")),
            "step_change": finite(row["step_p50_s_change"]),
            "step_p": finite(row["step_p50_s_p_value"]),
            "verdict": _verdict(row, comparison.rule),
            "_severity": _severity(row),
        }
        for row in records(comparison.pairs)
    ]
    level = pct_set(LEVEL)
    found = f"{pct_set(POWER)} of the time"
    return Table(
        id="baseline-changes",
        title="Throughput and step time against the baseline",
        columns=[
            col("cell", "Cell"),
            col("matched_by", "Matched by"),
            col("thr_base", "Samples/s (baseline)", "rate"),
            col("thr_now", "Samples/s (now)", "rate"),
            col("thr_change", "Change", "change_pct"),
            col("thr_low", f"{level} low", "change_pct"),
            col("thr_high", f"{level} high", "change_pct"),
            col("thr_p", "p", "float"),
            col("thr_detectable", f"Drop found {found}", "ratio_pct"),
            col("runs", "Runs (baseline vs now)"),
            term_column("repeats", "units"),
            col("step_change", "Step p50 change", "change_pct"),
            col("step_p", "Step p50 p", "float"),
            col("verdict", "Verdict"),
        ],
        rows=rows,
        note=f"change: median now / median baseline - 1; low, high: its {level} interval "
        f"(bootstrap; Welch's t on the log ratio below {SMALL} a side); p: the test on the per-run "
        "figures where both sides hold several runs of the cell (figures compared end in 'runs'), "
        f"else on one run's per-repeat figures (none: too few); drop found {found}: the smallest "
        f"throughput drop the rule would flag {found} at the spread these figures show (an "
        "approximation from the interval's width): a 'no significant change' says nothing about "
        "smaller drops. Verdict by the rule above. " + footnote(["units"]),
    )


def _other_table(ctx: Context, comparison: Comparison) -> Table:
    memory_kinds = {"allocated": "CUDA peak allocated", "rss": "peak RSS"}
    rows = [
        {
            "cell": ctx.label(row),
            "eff_base": finite(row["scaling_efficiency_baseline"]),
            "eff_now": finite(row["scaling_efficiency_current"]),
            "eff_change": finite(row["scaling_efficiency_change"]),
            "comm_base": finite(row["comm_overhead_baseline"]),
            "comm_now": finite(row["comm_overhead_current"]),
            "mem_base": finite(row["peak_memory_bytes_baseline"]),
            "mem_now": finite(row["peak_memory_bytes_current"]),
            "mem_change": finite(row["peak_memory_bytes_change"]),
            "mem_kind": memory_kinds.get(text(row["peak_memory_kind"]) or ""),
        }
        for row in records(comparison.pairs)
    ]
    return Table(
        id="baseline-other",
        title="Efficiency, communication and memory against the baseline (not judged)",
        columns=[
            col("cell", "Cell"),
            col("eff_base", "Efficiency (baseline)", "ratio_pct"),
            col("eff_now", "Efficiency (now)", "ratio_pct"),
            col("eff_change", "Change", "change_pts"),
            col("comm_base", f"{plain('exposed_comm')} (baseline)", "ratio_pct"),
            col("comm_now", f"{plain('exposed_comm')} (now)", "ratio_pct"),
            col("mem_base", "Peak memory (baseline)", "bytes"),
            col("mem_now", "Peak memory (now)", "bytes"),
            col("mem_change", "Change", "change_pct"),
            col("mem_kind", "Memory basis"),
        ],
        rows=rows,
        note="no per-repeat figures for these: shown, never counted as regressions; the "
        "efficiency's change is in percentage points (now - baseline), memory's relative. "
        + footnote(["exposed_comm"]),
    )


# the baseline chart's legend: one series per verdict, each in its verdict's colour
CHART_VERDICTS: dict[Severity, str] = {
    "bad": "regression",
    "good": "improvement",
    "info": "within noise",
    "warn": "not judged (too few repeats or busy machine)",
}


def _change_chart(ctx: Context, comparison: Comparison) -> Chart | None:
    """The throughput change per cell, each bar in the colour of its verdict, over the band
    of changes the rule never judges (within the minimum effect)."""
    usable = comparison.pairs[comparison.pairs["samples_per_s_change"].notna()]
    if usable.empty:
        return None
    rows = records(usable)
    labels: list[float | int | str] = [ctx.label(r) for r in rows]
    verdicts = [_severity(r) for r in rows]
    e = comparison.rule.min_effect
    series = []
    for severity, name in CHART_VERDICTS.items():
        if severity not in verdicts:
            continue

        # every cell on each series' x, None where the cell has another verdict: the cells
        # keep the table's order, and no two series share a bar
        def mine(column: str, severity: Severity = severity) -> list[float | None]:
            values = zip(usable[column], verdicts, strict=True)
            return [finite(v) if verdict == severity else None for v, verdict in values]

        y, low, high = (mine(f"samples_per_s_change{end}") for end in ("", "_low", "_high"))
        series.append(Series(name=name, x=labels, y=y, low=low, high=high, severity=severity))
    return Chart(
        id="baseline-throughput-change",
        title="Throughput change against the baseline",
        kind="bar",
        x_label="cell",
        y_label="change",
        y_format="change_pct",
        series=series,
        bands=[Band(low=-e, high=e, label=f"noise band: within ±{pct_set(e)}, never judged")],
        note=f"colour: the cell's verdict by the rule; whiskers: the {pct_set(LEVEL)} "
        "bootstrap interval of the change; a change is judged only when the whole interval lies "
        f"beyond -{pct_set(e)} or +{pct_set(e)} (outside the grey band) and the test "
        "agrees",
    )


def _one_side(ctx: Context, comparison: Comparison) -> Table | None:
    sides = (("now only", comparison.only_current), ("baseline only", comparison.only_baseline))
    rows = [
        {
            "cell": ctx.label(row),
            "side": side,
            "status": str(row["status"]),
            "samples_per_s": finite(row["samples_per_s"]),
            "why": str(row["why"]),
        }
        for side, frame in sides
        for row in records(frame)
    ]
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
    rows = [
        {
            "name": source.name,
            "path": str(source.path),
            "cells": len(experiment.results) if experiment else 0,
            "versions": ", ".join(
                str(v) for v in sorted({r.schema_version for r in experiment.results})
            )
            if experiment
            else None,
        }
        for source in (baseline.experiments if baseline else [])
        for experiment in [source.experiment]
    ]
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


def not_judged_text(comparison: Comparison) -> str | None:
    """A warning when matched cells could not be judged for too few repeats (None when all
    could). Said in the report and by `torchscale report` on stderr."""
    busy = comparison.busy_machine
    busy_text = (
        f"{busy} of {len(comparison.pairs)} matched cell(s) not judged: busy machine (the load "
        "differed between the baseline and current runs, or one run a side on a busy machine, "
        "which cannot see how far whole runs drift apart; neither regressions nor passes: run "
        "the config 4 times a side under the same load, or on a quiet machine)"
        if busy
        else None
    )
    short = comparison.not_enough_repeats
    if not short:
        return busy_text
    need = comparison.rule.repeats_needed
    if comparison.judged == 0 and comparison.regressions == 0:
        head = f"Nothing could be judged: all {short} compared cell(s) ran too few repeats"
    else:
        head = f"{short} of {len(comparison.pairs)} matched cell(s) could not be judged"
        head += ": too few repeats"
    runs = "units" in comparison.pairs.columns and (comparison.pairs["units"] == "runs").any()
    more = "more runs of the config, or measurement.repeats" if runs else "measurement.repeats"
    text = (
        f"{head} for the rule (need {need} per side; more to catch a small change: "
        f"{more}). They are neither regressions nor passes."
    )
    return f"{text} {busy_text}." if busy_text else text


def _largest_table(ctx: Context, comparison: Comparison) -> Table:
    """The cells that changed most against the baseline, judged or not, each change with its
    interval and a short verdict: what the first screen, the Markdown and the CI gate's
    stderr list."""
    rows = [
        {
            "cell": ctx.label(row),
            "change": change_text(*interval(row, "samples_per_s_change")),
            "verdict": short_verdict(row),
            "_severity": _severity(row),
        }
        for row in records(largest_changes(comparison, LARGEST_TABLE))
    ]
    level = pct_set(LEVEL)
    return Table(
        id=LARGEST_TABLE_ID,
        title="Largest changes against the baseline (judged or not)",
        columns=[
            col("cell", "Cell"),
            col("change", f"Throughput change [{level} interval]"),
            col("verdict", "Verdict"),
        ],
        rows=rows,
        note=f"regressions first, then by the size of the throughput change (median now / "
        f"median baseline - 1, its {level} bootstrap interval in brackets, whole percent); "
        "'not judged': too few repeats or runs for the rule, or a busy machine: neither a "
        "regression nor a pass, the change is still what was measured",
    )


def _figures(comparison: Comparison) -> KeyFigures:
    pairs = comparison.pairs
    counts = {verdict: comparison.count(verdict) for verdict in VERDICT_LABELS}
    notes: dict[PairVerdict, str] = {
        "regression": "by the rule (throughput, step time) or newly failing",
        "improvement": "shown, never counted as regressions",
        "no significant change": "judged: no change beyond the rule",
        "busy machine": "load differed, or one run a side on a busy machine",
        "not enough repeats": f"need {comparison.rule.repeats_needed} repeats per side",
    }
    severities: dict[PairVerdict, Severity] = {
        "regression": "bad",  # the figure itself: `regression_figure`
        "improvement": "good" if counts["improvement"] else "info",
        "no significant change": "info",
        "busy machine": "warn" if counts["busy machine"] else "info",
        "not enough repeats": "warn" if counts["not enough repeats"] else "info",
    }
    return KeyFigures(
        figures=[
            KeyFigure(label=MATCHED, value=len(pairs), format="int"),
            *(
                regression_figure(comparison, label)
                if verdict == "regression"
                else KeyFigure(
                    label=label,
                    value=counts[verdict],
                    format="int",
                    note=notes[verdict],
                    severity=severities[verdict],
                )
                for verdict, label in VERDICT_LABELS.items()
                if verdict != "busy machine" or counts[verdict]  # said only when it happened
            ),
            KeyFigure(
                label=NOT_JUDGED,
                value=comparison.not_judged,
                format="int",
                note="matched cells the rule could not judge (too few repeats, busy machine): "
                "neither regressions nor passes",
                severity="warn" if comparison.not_judged else "info",
            ),
            KeyFigure(label="Now only", value=len(comparison.only_current), format="int"),
            KeyFigure(label="Baseline only", value=len(comparison.only_baseline), format="int"),
        ]
    )


@dataclass(frozen=True)
class GateSummary:
    """What `--fail-on-regression` needs from a built report: matched cells per verdict and
    the section's warning about cells it could not judge."""

    matched: int
    counts: dict[str, int]
    warning: str | None
    changes: list[str] = field(default_factory=list)  # the largest, 'cell: -49 % [...], why'

    @property
    def regressions(self) -> int:
        return self.counts.get("regression", 0)

    @property
    def judged(self) -> int:
        return sum(self.counts.get(v, 0) for v in ("regression", "improvement", NO_CHANGE))

    @property
    def nothing_judged(self) -> bool:
        """No matched cell got a verdict (or none matched): the gate cannot pass or fail on
        evidence (`--fail-on-regression` exits EXIT_NOT_JUDGED)."""
        return self.judged == 0


def gate_summary(report: Report) -> GateSummary | None:
    """Read back from the report's baseline section (None without --baseline)."""
    section = report.section("baseline")
    if section is None:
        return None
    labels: dict[str, str] = {label: verdict for verdict, label in VERDICT_LABELS.items()}
    counts: dict[str, int] = {}
    matched: int | None = None
    warning: str | None = None
    changes: list[str] = []
    for block in section.blocks:
        if isinstance(block, KeyFigures):
            for figure in block.figures:
                if not isinstance(figure.value, (int, float)):
                    continue
                if figure.label == MATCHED:
                    matched = int(figure.value)
                elif figure.label in labels:
                    counts[labels[figure.label]] = int(figure.value)
        elif isinstance(block, Text) and block.severity == "warn" and warning is None:
            warning = block.text
        elif isinstance(block, Table) and block.id == LARGEST_TABLE_ID:
            changes = [
                f"{row['cell']}: {row['change'] or 'no change measured'}, {row['verdict']}"
                for row in block.rows[:LARGEST_CHANGES]
            ]
    if matched is None:
        return None
    return GateSummary(matched=matched, counts=counts, warning=warning, changes=changes)


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
    blocks.append(_figures(comparison))
    warning = not_judged_text(comparison)
    if warning is not None:
        blocks.append(Text(text=warning, severity="warn"))
    if len(pairs):
        blocks.append(_largest_table(ctx, comparison))
    blocks.append(Text(text=rule_text(comparison.rule, ctx.units)))
    blocks.append(_rule_table(comparison.rule))
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
