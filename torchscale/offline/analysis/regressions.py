"""Results against a baseline: which cells match, how each key metric changed, and which changes
are regressions by a stated rule (docs/reporting.md, "Baseline comparison"; docs/regressions.md).
Pure functions over cells tables (`Experiment.cells` columns) and steps tables
(`Experiment.steps`); no I/O. Cells match by `definition_sha256` first; as the hash also covers
settings that do not change what is compared (step counts, repeats, telemetry, threads), a cell
left unmatched is then matched on MATCH_KEY when exactly one unmatched cell on each side has it
(`matched_by` says which rule); an ambiguous key is never guessed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from torchscale.contracts.thresholds import OTHER_CORES_PER_RANK
from torchscale.contracts.wording.cell_warnings import level_word
from torchscale.contracts.wording.spell import as_set, joined_repeats, one_decimal
from torchscale.offline.analysis.numbers import finite, parse_repeats
from torchscale.offline.analysis.regression_rule import (
    METRICS,
    RULE,
    STEP_REPEATS,
    Judgement,
    Metric,
    Outcome,
    RegressionRule,
    Verdict,
    judge_change,
)
from torchscale.offline.analysis.reliability import judge as judge_reliability
from torchscale.offline.analysis.stats import spread_from_median
from torchscale.offline.analysis.uncertainty import median_of_runs

MATCH_KEY = ["model_label", "batch_size", "world_size", "precision", "strategy", "device"]
FAILURES = frozenset({"failed", "oom", "timeout"})
PairVerdict = Literal[Judgement, "not compared"]
JUDGED_OUTCOMES = ("regression", "improvement", "no significant change")
BUSY_COLUMN = "busy_machine"  # the cell's host-load record: other processes took its cores
OTHER_COLUMN = "other_cpu_cores"  # how many cores other processes used during its windows
LOAD_WHY = (
    "not judged: the machine's load differed between the runs (other processes used {base} "
    "core(s) during the baseline windows and {now} during the current ones; {why}); a busy "
    "host slows and spreads a run by more than the changes this rule looks for, so a "
    "difference in load would read as a change in the code: neither a regression nor a pass"
)
ONE_RUN_WHY = (
    "not judged: {alike}, but one run a side: on a busy host whole runs drift apart by more "
    "than their repeats show (unchanged reruns under one CPU hog differed by a median 4-7 %, "
    "up to 28 %, on this project's 2-core VM: docs/regressions.md), and one run cannot see it; "
    "run the config at least {runs} times a side (the runs of each side are pooled) to judge "
    "on this machine"
)
ALIKE_NOTE = (
    "a busy machine, loaded alike on both sides (other processes used {base} and {now} "
    "core(s)): judged like for like"
)


def with_step_repeats(cells: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """`cells` with STEP_REPEATS: per cell, each repeat's median synchronised step time over
    every rank (';'-joined, in repeat order); a cell without step records gets none (its step
    time is then not judged)."""
    table = cells.copy()
    keys = ["experiment", "cell_id"]
    if "experiment" not in cells.columns or "experiment" not in steps.columns:
        keys = ["cell_id"]
    table[STEP_REPEATS] = None
    if steps.empty or table.empty:
        return table
    sync = steps[steps["window"] == "sync"]
    medians = sync.groupby([*keys, "repeat"], sort=True)["time_s"].median()
    joined = medians.groupby(level=list(range(len(keys)))).agg(joined_repeats)
    lookup: dict[Any, str] = {(k if isinstance(k, tuple) else (k,)): v for k, v in joined.items()}
    table[STEP_REPEATS] = [
        lookup.get(tuple(row)) for row in table[keys].itertuples(index=False, name=None)
    ]
    return table


def _unique(rows: pd.DataFrame, columns: list[str]) -> dict[Hashable, int]:
    """value of `columns` -> row label, for values held by exactly one row (missing values
    never match)."""
    values = [tuple(v) for v in rows[columns].itertuples(index=False)]
    counts = Counter(values)
    return {
        v: int(i)
        for i, v in zip(rows.index, values, strict=True)
        if counts[v] == 1 and not any(pd.isna(part) for part in v)
    }


def match_cells(
    current: pd.DataFrame, baseline: pd.DataFrame
) -> tuple[list[tuple[int, int, str]], dict[int, str], dict[int, str]]:
    """Pairs (current row, baseline row, 'definition' | 'key'), then the rows of each side left
    unmatched -> why. Rows are index labels of the tables given (unique integer labels)."""
    pairs: list[tuple[int, int, str]] = []
    cur_left, base_left = current, baseline
    for rule, columns in (("definition", ["definition_sha256"]), ("key", MATCH_KEY)):
        base_unique = _unique(base_left, columns)
        for value, row in _unique(cur_left, columns).items():
            if value in base_unique:
                pairs.append((row, base_unique[value], rule))
        cur_left = cur_left[~cur_left.index.isin([p[0] for p in pairs])]
        base_left = base_left[~base_left.index.isin([p[1] for p in pairs])]
    return pairs, _why_unmatched(cur_left, base_left), _why_unmatched(base_left, cur_left)


def _why_unmatched(side: pd.DataFrame, other: pd.DataFrame) -> dict[int, str]:
    keys = [tuple(row) for row in side[MATCH_KEY].itertuples(index=False)]
    other_keys = {tuple(row) for row in other[MATCH_KEY].itertuples(index=False)}
    why = {}
    for row, key in zip(side.index, keys, strict=True):
        if keys.count(key) > 1 or key in other_keys:
            why[int(row)] = "several cells share its key (model, batch, GPUs, precision, "
            why[int(row)] += "strategy, device) and none has the same definition: ambiguous"
        else:
            why[int(row)] = "no cell with the same definition or key on the other side"
    return why


@dataclass(frozen=True)
class Comparison:
    """`pairs`: one row per matched cell (see `compare`); `only_current` / `only_baseline`:
    the cells of one side only, with `why`; `rule`: what judged the pairs."""

    pairs: pd.DataFrame
    only_current: pd.DataFrame
    only_baseline: pd.DataFrame
    rule: RegressionRule = field(default=RULE)

    def count(self, verdict: PairVerdict) -> int:
        """Matched cells with this pair verdict."""
        return int((self.pairs["verdict"] == verdict).sum()) if len(self.pairs) else 0

    @property
    def regressions(self) -> int:
        return self.count("regression")

    @property
    def improvements(self) -> int:
        return self.count("improvement")

    @property
    def unchanged(self) -> int:
        return self.count("no significant change")

    @property
    def busy_machine(self) -> int:
        return self.count("busy machine")

    @property
    def not_enough_repeats(self) -> int:
        return self.count("not enough repeats")

    @property
    def largest_undetectable(self) -> float | None:
        """Over the cells judged "no significant change", the largest throughput drop the rule
        would find 95 % of the time (`samples_per_s_detectable`): a drop up to about this size
        may hide behind those verdicts. None when no such cell has the figure."""
        if not len(self.pairs) or "samples_per_s_detectable" not in self.pairs.columns:
            return None
        unchanged = self.pairs[self.pairs["verdict"] == "no significant change"]
        values = pd.to_numeric(unchanged["samples_per_s_detectable"], errors="coerce").dropna()
        return float(values.max()) if len(values) else None

    @property
    def judged(self) -> int:
        """Matched cells that got a verdict (regression, improvement or no significant change):
        0 means the comparison could not judge anything."""
        return self.regressions + self.improvements + self.unchanged

    @property
    def not_judged(self) -> int:
        """Matched cells ok on both sides that the rule could not judge: too few repeats or a
        busy machine. Neither regressions nor passes."""
        return self.busy_machine + self.not_enough_repeats

    @property
    def regression_count(self) -> int | None:
        """The regressions, or None when nothing was judged (no matched cell got a verdict and
        none newly fails): "not judged" is its own state, never a 0 that reads as a pass."""
        return self.regressions if self.judged else None


def largest_changes(comparison: Comparison, limit: int | None = None) -> pd.DataFrame:
    """The matched pairs, most telling first: regressions, then the largest throughput change
    (|now / baseline - 1|) whatever its verdict, judged or not (a halving on 2 repeats a side
    is listed as much as a judged one); pairs without a throughput change last. At most
    `limit` rows (None: all)."""
    pairs = comparison.pairs
    if not len(pairs):
        return pairs
    size = pd.to_numeric(pairs["samples_per_s_change"], errors="coerce").abs()
    later = ~pairs["regression"].astype(bool)  # False, so first: the regressions
    order = pd.DataFrame({"regression": later, "missing": size.isna(), "size": -size.fillna(0.0)})
    ranked = pairs.loc[order.sort_values(["regression", "missing", "size"], kind="stable").index]
    return (ranked if limit is None else ranked.head(limit)).reset_index(drop=True)


def _peak_memory(cur: pd.Series, base: pd.Series) -> tuple[float | None, float | None, str]:
    """Peak memory of both sides on the same basis: CUDA peak allocated where both have it,
    else the largest process peak RSS; never one of each."""
    for column, kind in (("peak_allocated_bytes", "allocated"), ("peak_rss_bytes", "rss")):
        pair = finite(cur.get(column)), finite(base.get(column))
        if pair[0] is not None and pair[1] is not None:
            return pair[0], pair[1], kind
    return None, None, ""


def _relative(then: float | None, now: float | None) -> float | None:
    return None if then is None or now is None or then <= 0 else (now - then) / then


def _points(then: float | None, now: float | None) -> float | None:
    """The change of a share: now - then (0.302 -> 0.417: +0.115, +11.5 points)."""
    return None if then is None or now is None else now - then


def _busy(row: pd.Series) -> bool:
    return row.get(BUSY_COLUMN) is True or row.get(BUSY_COLUMN) == 1.0


def load_check(cur: pd.Series, base: pd.Series) -> tuple[str | None, str | None]:
    """Whether the two runs of a pair ran under comparable load, like for like (the rule and
    why: docs/regressions.md, "busy machine"): (why it is not judged, None) when a side's
    machine was busy and the other-process load of the two sides differs by
    OTHER_CORES_PER_RANK cores per rank or more, or cannot be compared; (None, note) when both
    were loaded alike (one run a side is still not judged: `_pair_row`); (None, None) when
    neither was busy or the results have no host-load record."""
    if not (_busy(cur) or _busy(base)):
        return None, None
    now, then = finite(cur.get(OTHER_COLUMN)), finite(base.get(OTHER_COLUMN))
    shown = {k: "?" if v is None else one_decimal(v) for k, v in (("base", then), ("now", now))}
    if now is None or then is None:
        why = "one side has no host-load record, so the loads cannot be compared"
        return LOAD_WHY.format(**shown, why=why), None
    ranks = finite(cur.get("world_size")) or 1.0
    limit = OTHER_CORES_PER_RANK * ranks
    if abs(now - then) >= limit:
        gap = abs(now - then)
        per_rank = as_set(OTHER_CORES_PER_RANK)
        why = f"{one_decimal(gap)} core(s) apart, at least {as_set(limit)} ({per_rank} per rank)"
        return LOAD_WHY.format(**shown, why=why), None
    return None, ALIKE_NOTE.format(**shown)


RUNS_SUFFIX = "_runs"  # per-run figures of a metric, added by `pool_runs`
RUN_COLUMN = "runs"  # how many runs of the experiment a (pooled) row holds
RUN_EXPERIMENTS = "run_experiments"  # a pooled row's experiments, one per run (a tuple)
# a pooled row's (value, low, high) over its runs (`_over_runs`)
OVER_RUNS = (
    ("samples_per_s", "samples_per_s_low", "samples_per_s_high"),
    ("step_p50_s", "step_p50_low_s", "step_p50_high_s"),
    ("scaling_efficiency", "scaling_efficiency_low", "scaling_efficiency_high"),
)
MEDIAN_OVER_RUNS = ("tokens_per_s", "samples_per_s_per_device")
STATUS_ORDER = ("failed", "oom", "timeout", "skipped")  # a pooled row's status: the worst


def _run_figure(row: pd.Series, metric: Metric) -> float | None:
    """One run's figure of a tested metric: the median of its per-repeat figures, else its
    headline value."""
    assert metric.repeats is not None
    repeats = parse_repeats(row.get(metric.repeats))
    return float(np.median(repeats)) if repeats else finite(row.get(metric.key))


def _pooled_row(rows: pd.DataFrame) -> dict[str, Any]:
    """Several runs of one cell (same definition, different experiments) as one row: the
    figures of each run for the tested metrics (RUNS_SUFFIX), every run's repeats together,
    the median over runs of the shown figures, the worst status, and the host load of all."""
    first = rows.iloc[0]
    out: dict[str, Any] = first.to_dict()
    out[RUN_COLUMN] = len(rows)
    out["experiment"] = ", ".join(str(e) for e in rows["experiment"])
    bad = [status for status in map(str, rows["status"]) if status != "ok"]
    out["status"] = next((s for s in STATUS_ORDER if s in bad), bad[0] if bad else "ok")
    for metric in METRICS:
        if metric.tested:
            assert metric.repeats is not None
            figures = [_run_figure(row, metric) for _, row in rows.iterrows()]
            out[f"{metric.key}{RUNS_SUFFIX}"] = joined_repeats(v for v in figures if v is not None)
            column = rows[metric.repeats] if metric.repeats in rows.columns else []
            everything = [v for value in column for v in parse_repeats(value)]
            out[metric.repeats] = joined_repeats(everything) or None
        values = [finite(v) for v in rows[metric.key]] if metric.key in rows.columns else []
        known = [v for v in values if v is not None]
        if known:
            out[metric.key] = float(np.median(known))
    for column in ("peak_allocated_bytes", "peak_rss_bytes"):
        if column in rows.columns:
            known = [v for v in (finite(x) for x in rows[column]) if v is not None]
            out[column] = max(known) if known else None
    if BUSY_COLUMN in rows.columns:
        flags = [v is True or v == 1.0 for v in rows[BUSY_COLUMN]]
        unknown = [v is None or (isinstance(v, float) and math.isnan(v)) for v in rows[BUSY_COLUMN]]
        out[BUSY_COLUMN] = True if any(flags) else (None if any(unknown) else False)
    if OTHER_COLUMN in rows.columns:
        cores = [finite(v) for v in rows[OTHER_COLUMN]]
        out[OTHER_COLUMN] = None if None in cores else float(np.mean(cores))  # type: ignore[arg-type]
    out[RUN_EXPERIMENTS] = tuple(str(e) for e in rows["experiment"])
    _over_runs(rows, out)
    return out


def _over_runs(rows: pd.DataFrame, out: dict[str, Any]) -> None:
    """A pooled row's shown figures over its runs (OVER_RUNS: `median_of_runs`;
    MEDIAN_OVER_RUNS: the median), and its reliability over the runs (noisy when they disagree
    or any run was noisy): never the best run nor the first run's own interval."""
    for value, low, high in OVER_RUNS:
        if value not in rows.columns:
            continue
        known = [v for v in (finite(x) for x in rows[value]) if v is not None]
        if not known:
            continue
        estimate = median_of_runs(known, lower=None)
        out[value] = estimate.value
        out[low], out[high] = estimate.low, estimate.high
    for column in MEDIAN_OVER_RUNS:
        if column in rows.columns:
            known = [v for v in (finite(x) for x in rows[column]) if v is not None]
            out[column] = float(np.median(known)) if known else None
    runs = [v for v in (finite(x) for x in rows.get("samples_per_s", [])) if v is not None]
    out["throughput_spread"] = spread_from_median(runs)  # over the runs, as the reason says
    if "reliability" not in rows.columns or finite(out.get("samples_per_s")) is None:
        return
    cv = [v for v in (finite(x) for x in rows.get("step_cv", [])) if v is not None]
    over = judge_reliability(
        out.get("samples_per_s"),
        out.get("samples_per_s_low"),
        out.get("samples_per_s_high"),
        len(rows),
        float(np.median(cv)) if cv else None,
        figures=runs,
        unit="run",
    )
    noisy = sum(str(v) == "varies" for v in rows["reliability"])
    reason = f"median of {len(rows)} runs: {over.reason}"
    if noisy:
        reason += f"; {noisy} of {len(rows)} runs {level_word('varies')} on their own"
    out["reliability"] = "varies" if noisy else over.level
    out["reliability_reason"] = reason


def pool_runs(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per cell, with its runs pooled: cells of the same definition in different
    experiments become one row whose RUN_COLUMN counts them and whose `<metric>_runs` hold one
    figure per run (`_pooled_row`); other cells get runs = 1. Why: on a busy host whole runs
    drift apart by more than their repeats do, so a test that sees one run per side mistakes
    that drift for a change; runs as the units see it."""
    table = cells.reset_index(drop=True).copy()
    table[RUN_COLUMN] = 1
    if table.empty or "experiment" not in table.columns or "definition_sha256" not in table:
        return table
    # each definition's rows found once: a filter of the whole table per row is quadratic
    groups = table.groupby("definition_sha256", sort=False).indices
    records = table.to_dict("records")
    rows: list[dict[str, Any]] = []
    done: set[int] = set()
    for index, row in enumerate(records):
        if index in done:
            continue
        sha = row.get("definition_sha256")
        members = groups.get(sha, ()) if pd.notna(sha) else ()
        same = table.iloc[members] if len(members) > 1 else None
        if same is not None and same["experiment"].nunique() == len(same):
            rows.append(_pooled_row(same))
            done.update(int(i) for i in members)
        else:
            rows.append(row)
            done.add(index)
    return pd.DataFrame(rows)


def _pair_verdict(outcomes: list[Outcome], status_change: str | None, both_ok: bool) -> PairVerdict:
    """One verdict per cell: a broken cell or any regressed metric is a regression (it wins
    over an improvement elsewhere), then improvement, then no significant change; not enough
    repeats only when no metric could be judged."""
    if status_change == "broke" or "regression" in outcomes:
        return "regression"
    if status_change == "fixed" or "improvement" in outcomes:
        return "improvement"
    if not both_ok:
        return "not compared"
    for outcome in ("no significant change", "busy machine", "not enough repeats"):
        if outcome in outcomes:
            return outcome
    return "not compared"


def _pair_row(
    cur: pd.Series, base: pd.Series, matched_by: str, rule: RegressionRule
) -> dict[str, Any]:
    status, base_status = str(cur["status"]), str(base["status"])
    row: dict[str, Any] = {
        "cell_id": cur["cell_id"],
        "baseline_cell_id": base["cell_id"],
        **{c: cur[c] for c in MATCH_KEY},
        "matched_by": matched_by,
        "status": status,
        "baseline_status": base_status,
    }
    if "experiment" in cur.index:
        row["experiment"] = cur["experiment"]
        row["baseline_experiment"] = base.get("experiment")
    both_ok = status == "ok" and base_status == "ok"
    memory_now, memory_base, memory_kind = _peak_memory(cur, base)
    row["peak_memory_kind"] = memory_kind or None
    outcomes: list[Outcome] = []
    differed, alike = load_check(cur, base) if both_ok else (None, None)
    runs = [int(finite(side.get(RUN_COLUMN)) or 1) for side in (base, cur)]
    # judged over runs when both sides hold several runs of the cell, else over one run's
    # repeats (its windows: the between-run drift unseen)
    units = "runs" if min(runs) >= 2 else "repeats"
    if alike is not None and units == "repeats":
        differed, alike = ONE_RUN_WHY.format(alike=alike, runs=rule.repeats_needed), None
    row["load_note"] = differed or alike
    row["units"] = units
    row["runs"] = " vs ".join(map(str, runs))
    for metric in METRICS:
        if metric.key == "peak_memory_bytes":
            now, then = memory_now, memory_base
        else:
            now, then = finite(cur.get(metric.key)), finite(base.get(metric.key))
        if not both_ok:
            now = then = None
        row[f"{metric.key}_baseline"] = then
        row[f"{metric.key}_current"] = now
        row[f"{metric.key}_change"] = (_points if metric.points else _relative)(then, now)
        if metric.repeats is None:
            continue
        column = f"{metric.key}{RUNS_SUFFIX}" if units == "runs" else metric.repeats
        if both_ok:
            samples = parse_repeats(base.get(column)), parse_repeats(cur.get(column))
            higher = metric.higher_is_better
            verdict = judge_change(*samples, higher_is_better=higher, rule=rule, unit=units)
        else:
            verdict = Verdict(None, None, None, None, 0, 0, "n/a", "not ok on both sides")
        if differed is not None and verdict.outcome in JUDGED_OUTCOMES:
            verdict = replace(verdict, outcome="busy machine", reason=differed)
        elif alike is not None and verdict.outcome in JUDGED_OUTCOMES:
            verdict = replace(verdict, reason=f"{verdict.reason}; {alike}")
        in_runs = " runs" if units == "runs" else ""
        repeats = f"{verdict.n_baseline} vs {verdict.n_current}{in_runs}" if both_ok else None
        v = verdict
        tested = (v.low, v.high, v.p_value, v.detectable, repeats, v.outcome, v.reason)
        row.update({f"{metric.key}_{s}": x for s, x in zip(TESTED_SUFFIXES, tested, strict=True)})
        outcomes.append(verdict.outcome)
    broke = base_status == "ok" and status in FAILURES
    fixed = base_status in FAILURES and status == "ok"
    row["status_change"] = "broke" if broke else "fixed" if fixed else None
    row["verdict"] = _pair_verdict(outcomes, row["status_change"], both_ok)
    row["regression"] = row["verdict"] == "regression"
    row["improvement"] = row["verdict"] == "improvement"
    return row


PAIR_KEYS = ["cell_id", "baseline_cell_id", *MATCH_KEY, "matched_by", "status", "baseline_status"]
TESTED_SUFFIXES = (
    "change_low",
    "change_high",
    "p_value",
    "detectable",
    "repeats",
    "verdict",
    "why",
)


def pair_columns() -> list[str]:
    """The columns of `Comparison.pairs` (without the optional experiment columns)."""
    columns = [*PAIR_KEYS, "peak_memory_kind", "load_note", "units", "runs"]
    for metric in METRICS:
        columns += [f"{metric.key}_{s}" for s in ("baseline", "current", "change")]
        if metric.tested:
            columns += [f"{metric.key}_{s}" for s in TESTED_SUFFIXES]
    return [*columns, "status_change", "verdict", "regression", "improvement"]


def compare(
    current: pd.DataFrame, baseline: pd.DataFrame, rule: RegressionRule = RULE
) -> Comparison:
    """Match the cells of `current` with `baseline` and judge each matched pair by `rule`:
    every metric of METRICS gets its baseline, current value and change; the tested ones
    (per-repeat figures: `Metric.judged_by`; step time needs `with_step_repeats`) a verdict,
    and the pair one verdict (`_pair_verdict`). `Comparison.regressions` counts cells, not
    metrics."""
    cur, base = pool_runs(current), pool_runs(baseline)
    pairs, only_cur, only_base = match_cells(cur, base)
    rows = [_pair_row(cur.loc[c], base.loc[b], how, rule) for c, b, how in pairs]
    columns = pair_columns()
    if "experiment" in cur.columns:
        columns = [*columns, "experiment", "baseline_experiment"]
    table = pd.DataFrame(rows, columns=columns)
    return Comparison(table, _one_side(cur, only_cur), _one_side(base, only_base), rule)


def _one_side(table: pd.DataFrame, why: dict[int, str]) -> pd.DataFrame:
    rows = table.loc[sorted(why)].copy()
    rows["why"] = [why[i] for i in sorted(why)]
    return rows.reset_index(drop=True)
