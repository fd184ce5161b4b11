"""Results against a baseline: which cells match, how each key metric changed, and which changes
are regressions by a stated rule. Pure functions over cells tables (`Experiment.cells`
columns) and steps tables (`Experiment.steps`); no I/O.

Matching. A cell is first matched by `definition_sha256`, the hash of everything that shapes
its measurement: the same hash is the same experiment, re-run. The hash also covers settings
that do not change what is compared (step counts, repeats, telemetry, threads, a torchscale
version that hashes another field), so a cell left unmatched is then matched on its identity,
MATCH_KEY (model label, batch per GPU, world size, precision, strategy, device), when exactly
one unmatched cell on each side has that key; `matched_by` says which rule matched, so a pair
whose settings may differ is visible as such. A key shared by several unmatched cells on one
side is ambiguous and is not guessed: those cells are reported on one side only, with why.

Regressions (docs/regressions.md): `judge_change` is the rule, over the per-repeat figures of
both sides (each repeat is one barrier-bounded window, the unit that is independent enough to
test); `compare` says what is counted.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from torchscale.analysis.uncertainty import LEVEL, ratio_of_medians

# The rule's parameters (docs/regressions.md; measured by benchmarks/regression_detection.py).
TEST = "two-sided Mann-Whitney U"
ALPHA = 0.05  # the test's significance level, over the per-repeat figures of both sides
MIN_EFFECT = 0.05  # the smallest |ratio of medians - 1| ever flagged; the interval must clear it
MATCH_KEY = ["model_label", "batch_size", "world_size", "precision", "strategy", "device"]
FAILURES = frozenset({"failed", "oom", "timeout"})
STEP_REPEATS = "step_p50_s_repeats"  # added by `with_step_repeats` from the steps table
Outcome = Literal[
    "regression",
    "improvement",
    "no significant change",
    "busy machine",
    "not enough repeats",
    "n/a",
]
PairVerdict = Literal[
    "regression",
    "improvement",
    "no significant change",
    "busy machine",
    "not enough repeats",
    "not compared",
]
JUDGED_OUTCOMES = ("regression", "improvement", "no significant change")
BUSY_COLUMN = "busy_machine"  # the cell's host-load record: other processes took its cores
BUSY_WHY = (
    "not judged: the machine was busy during the {side} windows (other processes used "
    "{cores} core(s)); on a busy host whole runs drift apart by more than the changes this rule "
    "looks for (unchanged reruns differed by 11 % median, up to 40-58 %, on this project's 2-core "
    "VM under one CPU hog: docs/regressions.md), so neither a regression nor a pass"
)


def min_p_value(n_baseline: int, n_current: int) -> float:
    """The smallest two-sided p-value the exact Mann-Whitney U test can give for these sample
    sizes (every value of one side beyond every value of the other): 2 / C(n1 + n2, n1)."""
    if n_baseline < 1 or n_current < 1:
        return 1.0
    return min(1.0, 2 / math.comb(n_baseline + n_current, n_baseline))


@dataclass(frozen=True)
class RegressionRule:
    """When a change is a regression (or an improvement): the stated test at `alpha` AND a
    change of at least `min_effect` AND the 95 % (uncertainty.LEVEL) bootstrap interval of the
    ratio of medians entirely beyond 1 -/+ `min_effect`. Sample sizes whose smallest
    attainable p-value is not below `alpha` are "not enough repeats", never a verdict."""

    alpha: float = ALPHA
    min_effect: float = MIN_EFFECT
    test: str = TEST

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), not {self.alpha}")
        if not 0 <= self.min_effect < 1:
            raise ValueError(f"min_effect must be in [0, 1), not {self.min_effect}")

    @property
    def repeats_needed(self) -> int:
        """The fewest repeats per side (equal sides) with which the test can reach `alpha`."""
        n = 2
        while min_p_value(n, n) >= self.alpha:
            n += 1
        return n

    def enough(self, n_baseline: int, n_current: int) -> bool:
        """Whether these sample sizes can give a verdict at all (2+ per side for an interval)."""
        return min(n_baseline, n_current) >= 2 and min_p_value(n_baseline, n_current) < self.alpha

    def describe(self) -> str:
        """The rule in one paragraph, with its parameters (printed in every report)."""
        e = f"{self.min_effect * 100:g} %"
        return (
            f"A change is a regression (or an improvement) only when all three hold, on the "
            f"per-repeat figures of both sides (each repeat is one measured window): the "
            f"{self.test} test gives p < {self.alpha:g}; the ratio of the medians (now / "
            f"baseline) differs from 1 by at least {e}; and its {LEVEL * 100:g} % "
            f"bootstrap interval lies entirely beyond 1 - {e} (or 1 + {e}). With too few "
            f"repeats for the test to ever reach p < {self.alpha:g} (3 vs 3 gives at best "
            f'{min_p_value(3, 3):.2g}) the verdict is "not enough repeats" (need '
            f"{self.repeats_needed} per side), never a regression. A cell whose baseline or "
            "current windows ran on a busy machine (its host-load record: other processes took "
            'its cores) is "not judged: busy machine", neither a regression nor a pass.'
        )


RULE = RegressionRule()


@dataclass(frozen=True)
class Metric:
    """A compared metric: its column, whether higher is better, the column of its per-repeat
    figures when it is judged by the rule (None: shown only), and what judges it."""

    key: str
    label: str
    higher_is_better: bool
    repeats: str | None
    judged_by: str

    @property
    def tested(self) -> bool:
        return self.repeats is not None


METRICS = (
    Metric(
        "samples_per_s",
        "throughput",
        higher_is_better=True,
        repeats="samples_per_s_repeats",
        judged_by="the rule, over the global samples/s of each repeat",
    ),
    Metric(
        "step_p50_s",
        "step time p50",
        higher_is_better=False,
        repeats=STEP_REPEATS,
        judged_by="the rule, over each repeat's median synchronised step time (all ranks)",
    ),
    Metric(
        "scaling_efficiency",
        "scaling efficiency",
        higher_is_better=True,
        repeats=None,
        judged_by="a ratio of two cells' medians: no per-repeat figures",
    ),
    Metric(
        "comm_overhead",
        "exposed communication",
        higher_is_better=False,
        repeats=None,
        judged_by="one figure per cell, from the medians of two windows: no per-repeat figures",
    ),
    Metric(
        "peak_memory_bytes",
        "peak memory",
        higher_is_better=False,
        repeats=None,
        judged_by="a maximum over the whole run: no per-repeat figures",
    ),
)


@dataclass(frozen=True)
class Verdict:
    """One metric's change by the rule: the change of the medians (now / baseline - 1) with
    its bootstrap interval, the test's p-value, the repeats on each side, the outcome and why."""

    change: float | None
    low: float | None
    high: float | None
    p_value: float | None
    n_baseline: int
    n_current: int
    outcome: Outcome
    reason: str


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def parse_repeats(value: Any) -> list[float]:
    """Per-repeat figures from a cells-table value: a ';'-joined string (as in
    `samples_per_s_repeats`) or a sequence; missing values and non-numbers give none."""
    if isinstance(value, str):
        parts: Sequence[Any] = [p for p in value.split(";") if p.strip()]
    elif isinstance(value, (list, tuple, np.ndarray)):
        parts = list(value)
    else:
        return []
    numbers = [_number(p) for p in parts]
    return [n for n in numbers if n is not None]


def _pct(value: float) -> str:
    return f"{value * 100:+.1f} %"


def judge_change(
    baseline: Sequence[float],
    current: Sequence[float],
    *,
    higher_is_better: bool,
    rule: RegressionRule = RULE,
) -> Verdict:
    """Whether the per-repeat figures `current` regressed from `baseline`, by `rule`.

    change = median(current) / median(baseline) - 1, with the percentile bootstrap interval
    of that ratio (`uncertainty.ratio_of_medians`, each side resampled on its own).

    Outcome: `not enough repeats` when a side has fewer than 2 repeats or the smallest p-value
    the test can attain with these sizes is not below alpha (3 vs 3: 0.1); otherwise
    `regression` / `improvement` when the test gives p < alpha AND |change| >= min_effect AND
    the interval lies entirely beyond -/+ min_effect (worse: lower throughput, higher step
    time); else `no significant change`. `n/a` when a side has no figures or the baseline's
    median is not positive. Why: repeats run back to back on one machine state, and two runs
    apart drift by a few percent; the test alone would flag that drift once it has enough
    repeats, the minimum effect does not, and the interval keeps a lucky split from passing.
    """
    base = [v for v in (_number(x) for x in baseline) if v is not None]
    now = [v for v in (_number(x) for x in current) if v is not None]
    nb, nc = len(base), len(now)
    if not base or not now:
        side = "baseline" if not base else "current"
        return Verdict(None, None, None, None, nb, nc, "n/a", f"no per-repeat figures ({side})")
    if float(np.median(base)) <= 0:
        return Verdict(None, None, None, None, nb, nc, "n/a", "baseline median not positive")
    ratio, low, high = ratio_of_medians(now, base)
    change = ratio - 1
    if not rule.enough(nb, nc) or low is None or high is None:
        floor = min_p_value(nb, nc)
        why = (
            "one repeat has no spread"
            if min(nb, nc) < 2
            else f"the smallest p-value the test can give is {floor:.2g}, not below {rule.alpha:g}"
        )
        reason = f"{nb} vs {nc} repeats: {why}; need {rule.repeats_needed} per side"
        lo = None if low is None else low - 1
        hi = None if high is None else high - 1
        return Verdict(change, lo, hi, None, nb, nc, "not enough repeats", reason)
    if len(set(base) | set(now)) == 1:
        p_value = 1.0  # every repeat the same: no evidence of any change
    else:
        p_value = float(scipy_stats.mannwhitneyu(now, base, alternative="two-sided").pvalue)
    lo, hi = low - 1, high - 1
    beyond = hi < -rule.min_effect if change < 0 else lo > rule.min_effect
    interval = f"{LEVEL * 100:g} % interval {_pct(lo)} to {_pct(hi)}"
    evidence = f"p = {p_value:.2g}, change {_pct(change)}, {interval}"
    e = f"{rule.min_effect * 100:g} %"
    if p_value >= rule.alpha:
        why = f"p >= {rule.alpha:g}"
    elif abs(change) < rule.min_effect:
        why = f"the change is smaller than {e}"
    elif not beyond:
        why = f"the interval reaches within {e} of no change"
    else:
        worse = change < 0 if higher_is_better else change > 0
        outcome: Outcome = "regression" if worse else "improvement"
        return Verdict(change, lo, hi, p_value, nb, nc, outcome, evidence)
    return Verdict(change, lo, hi, p_value, nb, nc, "no significant change", f"{why} ({evidence})")


def with_step_repeats(cells: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """`cells` with STEP_REPEATS: per cell, each repeat's median synchronised step time over
    every rank (';'-joined, in repeat order), the per-repeat figures of step time p50. Cells
    are keyed by (experiment, cell_id) where both tables have `experiment`; a cell without
    step records gets none (its step time is then not judged)."""
    table = cells.copy()
    keys = ["experiment", "cell_id"]
    if "experiment" not in cells.columns or "experiment" not in steps.columns:
        keys = ["cell_id"]
    table[STEP_REPEATS] = None
    if steps.empty or table.empty:
        return table
    sync = steps[steps["window"] == "sync"]
    medians = sync.groupby([*keys, "repeat"], sort=True)["time_s"].median()
    joined = medians.groupby(level=list(range(len(keys)))).agg(
        lambda values: ";".join(f"{v:.6g}" for v in values)
    )
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
    def judged(self) -> int:
        """Matched cells that got a verdict (regression, improvement or no significant change):
        0 means the comparison could not judge anything."""
        return self.regressions + self.improvements + self.unchanged


def _peak_memory(cur: pd.Series, base: pd.Series) -> tuple[float | None, float | None, str]:
    """Peak memory of both sides on the same basis: CUDA peak allocated where both have it,
    else the largest process peak RSS; never one of each."""
    for column, kind in (("peak_allocated_bytes", "allocated"), ("peak_rss_bytes", "rss")):
        pair = _number(cur.get(column)), _number(base.get(column))
        if pair[0] is not None and pair[1] is not None:
            return pair[0], pair[1], kind
    return None, None, ""


def _relative(then: float | None, now: float | None) -> float | None:
    return None if then is None or now is None or then <= 0 else (now - then) / then


def busy_reason(cur: pd.Series, base: pd.Series) -> str | None:
    """Why a pair is not judged because either side ran on a busy machine (None: neither did,
    or the results predate the host-load record)."""
    sides = []
    cores = []
    for side, row in (("baseline", base), ("current", cur)):
        if row.get(BUSY_COLUMN) is True or row.get(BUSY_COLUMN) == 1.0:
            sides.append(side)
            other = _number(row.get("other_cpu_cores"))
            cores.append(f"{other:.1f}" if other is not None else "?")
    if not sides:
        return None
    return BUSY_WHY.format(side=" and ".join(sides), cores=" and ".join(cores))


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
    busy = busy_reason(cur, base) if both_ok else None
    for metric in METRICS:
        if metric.key == "peak_memory_bytes":
            now, then = memory_now, memory_base
        else:
            now, then = _number(cur.get(metric.key)), _number(base.get(metric.key))
        if not both_ok:
            now = then = None
        row[f"{metric.key}_baseline"] = then
        row[f"{metric.key}_current"] = now
        row[f"{metric.key}_change"] = _relative(then, now)
        if metric.repeats is None:
            continue
        if both_ok:
            verdict = judge_change(
                parse_repeats(base.get(metric.repeats)),
                parse_repeats(cur.get(metric.repeats)),
                higher_is_better=metric.higher_is_better,
                rule=rule,
            )
        else:
            verdict = Verdict(None, None, None, None, 0, 0, "n/a", "not ok on both sides")
        if busy is not None and verdict.outcome in JUDGED_OUTCOMES:
            verdict = replace(verdict, outcome="busy machine", reason=busy)
        row[f"{metric.key}_change_low"] = verdict.low
        row[f"{metric.key}_change_high"] = verdict.high
        row[f"{metric.key}_p_value"] = verdict.p_value
        repeats = f"{verdict.n_baseline} vs {verdict.n_current}"
        row[f"{metric.key}_repeats"] = repeats if both_ok else None
        row[f"{metric.key}_verdict"] = verdict.outcome
        row[f"{metric.key}_why"] = verdict.reason
        outcomes.append(verdict.outcome)
    broke = base_status == "ok" and status in FAILURES
    fixed = base_status in FAILURES and status == "ok"
    row["status_change"] = "broke" if broke else "fixed" if fixed else None
    row["verdict"] = _pair_verdict(outcomes, row["status_change"], both_ok)
    row["regression"] = row["verdict"] == "regression"
    row["improvement"] = row["verdict"] == "improvement"
    return row


PAIR_KEYS = ["cell_id", "baseline_cell_id", *MATCH_KEY, "matched_by", "status", "baseline_status"]
TESTED_SUFFIXES = ("change_low", "change_high", "p_value", "repeats", "verdict", "why")


def pair_columns() -> list[str]:
    """The columns of `Comparison.pairs` (without the optional experiment columns)."""
    columns = [*PAIR_KEYS, "peak_memory_kind"]
    for metric in METRICS:
        columns += [f"{metric.key}_{s}" for s in ("baseline", "current", "change")]
        if metric.tested:
            columns += [f"{metric.key}_{s}" for s in TESTED_SUFFIXES]
    return [*columns, "status_change", "verdict", "regression", "improvement"]


def compare(
    current: pd.DataFrame, baseline: pd.DataFrame, rule: RegressionRule = RULE
) -> Comparison:
    """Match the cells of `current` with `baseline` and judge each matched pair by `rule`.

    Per pair, every metric of METRICS gets its baseline and current value and the relative
    change (peak memory on one basis for both sides: CUDA peak allocated, else peak RSS).
    Throughput and step time p50 are judged by `judge_change` over their per-repeat figures
    (`samples_per_s_repeats`; STEP_REPEATS, which `with_step_repeats` adds from the steps
    table: without it step time is "n/a"); the other metrics are shown, never judged (no
    per-repeat figures: see `Metric.judged_by`).

    `verdict` per pair: regression when a judged metric regressed or the cell was ok in the
    baseline and failed now (failed / oom / timeout: `status_change` 'broke'); improvement
    when not a regression and a judged metric improved or a failed cell now runs ('fixed');
    else no significant change, not enough repeats (no metric could be judged), or not
    compared (not ok on both sides). `Comparison.regressions` counts regressing pairs (cells,
    not metrics); improvements are never counted as regressions.
    """
    cur, base = current.reset_index(drop=True), baseline.reset_index(drop=True)
    pairs, only_cur, only_base = match_cells(cur, base)
    rows = [_pair_row(cur.loc[c], base.loc[b], how, rule) for c, b, how in pairs]
    columns = pair_columns()
    if "experiment" in cur.columns:
        columns = [*columns, "experiment", "baseline_experiment"]
    table = pd.DataFrame(rows, columns=columns)
    return Comparison(
        pairs=table,
        only_current=_one_side(cur, only_cur),
        only_baseline=_one_side(base, only_base),
        rule=rule,
    )


def _one_side(table: pd.DataFrame, why: dict[int, str]) -> pd.DataFrame:
    rows = table.loc[sorted(why)].copy()
    rows["why"] = [why[i] for i in sorted(why)]
    return rows.reset_index(drop=True)
