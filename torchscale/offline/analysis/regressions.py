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

Regressions (docs/regressions.md): `judge_change` is the rule, over the per-run figures of both
sides when each holds several runs of the cell (`pool_runs`: on a shared host whole runs drift
apart by more than their windows do, so runs are the units that are independent enough), else
over the per-repeat figures of one run (each repeat is one barrier-bounded window); `compare`
says what is counted.
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

from torchscale.contracts.thresholds import OTHER_CORES_PER_RANK
from torchscale.offline.analysis.numbers import finite, parse_repeats
from torchscale.offline.analysis.reliability import judge as judge_reliability
from torchscale.offline.analysis.uncertainty import (
    LEVEL,
    SMALL,
    median_of_runs,
    ratio_of_medians,
)

# The rule's parameters (docs/regressions.md; measured by benchmarks/regression_detection.py).
TEST = "two-sided Welch t-test on the log figures"
ALPHA = 0.05  # the test's significance level, over the per-unit figures of both sides
MIN_EFFECT = 0.05  # the smallest |ratio of medians - 1| ever flagged; the interval must clear it
POWER = 0.95  # `detectable`: the change the rule finds this often at the spread it saw
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


def min_p_value(n_baseline: int, n_current: int) -> float:
    """The smallest two-sided p-value a distribution-free test (an exact rank or permutation
    test) can give for these sample sizes (every value of one side beyond every value of the
    other): 2 / C(n1 + n2, n1). The rule's floor on the sample sizes (`RegressionRule.enough`):
    where it is not below alpha, no arrangement of the figures is evidence of a change without
    assuming their distribution (3 vs 3: 0.1), so the parametric test is not asked either."""
    if n_baseline < 1 or n_current < 1:
        return 1.0
    return min(1.0, 2 / math.comb(n_baseline + n_current, n_baseline))


@dataclass(frozen=True)
class RegressionRule:
    """When a change is a regression (or an improvement): the stated test at `alpha` AND a
    change of at least `min_effect` AND the 95 % (uncertainty.LEVEL) bootstrap interval of the
    ratio of medians entirely beyond 1 -/+ `min_effect`. Sample sizes with which no
    distribution-free test could reach `alpha` (`min_p_value`) are "not enough repeats",
    never a verdict."""

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
            f"per-run figures of both sides when each holds several runs of the cell (each "
            f"run's median; the same config run again, each its own launch), else on the "
            f"per-repeat figures of one run (each repeat is one measured window): the "
            f"{self.test} gives p < {self.alpha:g}; the ratio of the medians (now / "
            f"baseline) differs from 1 by at least {e}; and its {LEVEL * 100:g} % "
            f"interval (percentile bootstrap; Welch's t on the log ratio when a side holds "
            f"fewer than {SMALL}) lies entirely beyond 1 - {e} (or 1 + {e}). With too few "
            f"runs or repeats for any distribution-free test to reach p < {self.alpha:g} "
            f"(3 vs 3 give at best {min_p_value(3, 3):.2g}) the verdict is "
            '"not enough repeats" '
            f"(need {self.repeats_needed} per side), never a regression: not judged, its "
            "change shown. When either side ran on a "
            "busy machine (its host-load record: other processes took its cores), the pair is "
            "judged only if both were loaded alike (other processes' cores within "
            f"{OTHER_CORES_PER_RANK:g} per rank) and each side holds several runs; otherwise "
            'it is "not judged: busy machine", neither a regression nor a pass.'
        )


RULE = RegressionRule()


@dataclass(frozen=True)
class Metric:
    """A compared metric: its column, whether higher is better, the column of its per-repeat
    figures when it is judged by the rule (None: shown only), and what judges it. `points`: a
    share or percentage (efficiency, exposed communication), whose `<key>_change` is the
    difference now - baseline (printed in percentage points), never a relative change."""

    key: str
    label: str
    higher_is_better: bool
    repeats: str | None
    judged_by: str
    points: bool = False

    @property
    def tested(self) -> bool:
        return self.repeats is not None


METRICS = (
    Metric(
        "samples_per_s",
        "throughput",
        higher_is_better=True,
        repeats="samples_per_s_repeats",
        judged_by="the rule, over the global samples/s of each run (its repeats' median) "
        "where each side holds several runs, else of each repeat",
    ),
    Metric(
        "step_p50_s",
        "step time p50",
        higher_is_better=False,
        repeats=STEP_REPEATS,
        judged_by="the rule, over each run's (or each repeat's) median synchronised step "
        "time (all ranks)",
    ),
    Metric(
        "scaling_efficiency",
        "scaling efficiency",
        higher_is_better=True,
        repeats=None,
        judged_by="a ratio of two cells' medians: no per-repeat figures",
        points=True,
    ),
    Metric(
        "comm_overhead",
        "exposed communication",
        higher_is_better=False,
        repeats=None,
        judged_by="one figure per cell, from the medians of two windows: no per-repeat figures",
        points=True,
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
    its bootstrap interval, the test's p-value, the repeats on each side, the outcome and why;
    `detectable`: the smallest regression (a fraction, e.g. 0.14) the rule would find with
    probability POWER at the spread these figures show (`detectable_regression`), None where
    there is no interval."""

    change: float | None
    low: float | None
    high: float | None
    p_value: float | None
    n_baseline: int
    n_current: int
    outcome: Outcome
    reason: str
    detectable: float | None = None


def detectable_regression(
    low: float,
    high: float,
    min_effect: float,
    *,
    higher_is_better: bool,
    units: int,
    power: float = POWER,
) -> float | None:
    """The smallest regression that the rule would flag with probability `power`, at the
    spread the interval (low, high) of the ratio of medians shows, over `units` figures of
    both sides together: a fraction of the baseline (0.14: throughput 14 % lower, or step
    time 14 % higher).

    On the log of the ratio: its standard error is the interval's width over 2 z (z the
    normal quantile of the interval's level: a percentile bootstrap interval is a normal one
    around the plug-in spread, too narrow in small samples); a change is flagged when the
    interval clears the minimum effect, which happens with probability `power` once the true
    log ratio lies (t_level + t_power) standard errors beyond log(1 -/+ min_effect), t the
    Student quantiles with units - 2 degrees of freedom. Checked by simulation (log-normal
    runs, 4-12 a side, spread 4-8 %): a drop of the stated size was found 90-100 % of the
    time (normal quantiles throughout: 81-98 %). Why at all: a "no significant change" over
    runs that spread 8 % cannot see a 15 % slowdown, and the reader must know that rather than
    read it as a pass (docs/regressions.md). None when the interval is not positive or there
    are too few units."""
    if not 0 < low <= high or units < 3:
        return None
    z = float(scipy_stats.norm.ppf(0.5 + LEVEL / 2))
    se = (math.log(high) - math.log(low)) / (2 * z)
    t_level = float(scipy_stats.t.ppf(0.5 + LEVEL / 2, units - 2))
    shift = (t_level + float(scipy_stats.t.ppf(power, units - 2))) * se
    if higher_is_better:
        return 1 - (1 - min_effect) * math.exp(-shift)
    return (1 + min_effect) * math.exp(shift) - 1


def _pct(value: float) -> str:
    return f"{value * 100:+.1f} %"


def welch_log_p(baseline: Sequence[float], current: Sequence[float]) -> float:
    """The two-sided p-value of Welch's t-test (unequal variances) on the logs of two sides'
    positive figures: a change that scales every run alike is a shift of the logs. 1 when
    every figure is the same; with no spread on either side, 0 when the sides differ.

    Why not a rank test: with 4 units a side, the exact Mann-Whitney U test reaches p < 0.05
    only when every figure of one side lies beyond every figure of the other (2 / 70 =
    0.029); a single run on the wrong side of one other run gives 4 / 70 = 0.057 however
    large the change, so a 41 % drop with one slow baseline run would read "no significant
    change". Welch's test weighs how far apart the sides are against their spread, so its
    smallest p is not capped by the arrangement of a few figures; the minimum effect and the
    interval condition keep its false alarms down (docs/regressions.md: simulated
    false-positive and detection rates of both tests)."""
    logs_b = np.log(np.asarray(baseline, dtype=float))
    logs_c = np.log(np.asarray(current, dtype=float))
    if len(set(logs_b.tolist()) | set(logs_c.tolist())) == 1:
        return 1.0  # every figure the same: no evidence of any change
    diff = float(logs_c.mean() - logs_b.mean())
    var = float(logs_b.var(ddof=1) / logs_b.size + logs_c.var(ddof=1) / logs_c.size)
    if var <= 0:
        return 0.0 if diff != 0 else 1.0
    result = scipy_stats.ttest_ind(logs_c, logs_b, equal_var=False)
    return float(result.pvalue)


def judge_change(
    baseline: Sequence[float],
    current: Sequence[float],
    *,
    higher_is_better: bool,
    rule: RegressionRule = RULE,
    unit: str = "repeats",
) -> Verdict:
    """Whether the per-repeat figures `current` regressed from `baseline`, by `rule`.

    change = median(current) / median(baseline) - 1, with the 95 % interval of that ratio
    (`uncertainty.ratio_of_medians`: the percentile bootstrap, each side resampled on its
    own; Welch's t on the log ratio when a side holds fewer than 4 figures).

    Outcome: `not enough repeats` when a side has fewer than 2 repeats or the smallest p-value
    a distribution-free test can attain with these sizes is not below alpha (3 vs 3: 0.1;
    `min_p_value`); otherwise `regression` / `improvement` when the test (`welch_log_p`:
    Welch's t-test on the log figures) gives p < alpha AND |change| >= min_effect AND
    the interval lies entirely beyond -/+ min_effect (worse: lower throughput, higher step
    time); else `no significant change`. `n/a` when a side has no figures or the baseline's
    median is not positive. Why: repeats run back to back on one machine state, and two runs
    apart drift by a few percent; the test alone would flag that drift once it has enough
    repeats, the minimum effect does not, and the interval keeps a lucky split from passing.
    """
    base = [v for v in (finite(x) for x in baseline) if v is not None]
    now = [v for v in (finite(x) for x in current) if v is not None]
    nb, nc = len(base), len(now)
    if not base or not now:
        side = "baseline" if not base else "current"
        return Verdict(None, None, None, None, nb, nc, "n/a", f"no per-repeat figures ({side})")
    if float(np.median(base)) <= 0:
        return Verdict(None, None, None, None, nb, nc, "n/a", "baseline median not positive")
    if min(base + now) <= 0:
        return Verdict(None, None, None, None, nb, nc, "n/a", "a figure is not positive")
    ratio, low, high = ratio_of_medians(now, base)
    change = ratio - 1
    if not rule.enough(nb, nc) or low is None or high is None:
        floor = min_p_value(nb, nc)
        why = (
            f"one of the {unit} has no spread"
            if min(nb, nc) < 2
            else f"too few for a test free of assumptions to reach p < {rule.alpha:g} (at best "
            f"{floor:.2g})"
        )
        reason = f"{nb} vs {nc} {unit}: {why}; need {rule.repeats_needed} per side"
        lo = None if low is None else low - 1
        hi = None if high is None else high - 1
        return Verdict(change, lo, hi, None, nb, nc, "not enough repeats", reason)
    p_value = welch_log_p(base, now)
    lo, hi = low - 1, high - 1
    beyond = hi < -rule.min_effect if change < 0 else lo > rule.min_effect
    interval = f"{LEVEL * 100:g} % interval {_pct(lo)} to {_pct(hi)}"
    evidence = f"p = {p_value:.2g} over {nb} vs {nc} {unit}, change {_pct(change)}, {interval}"
    e = f"{rule.min_effect * 100:g} %"
    blind = detectable_regression(
        low, high, rule.min_effect, higher_is_better=higher_is_better, units=nb + nc
    )
    if p_value >= rule.alpha:
        why = f"p >= {rule.alpha:g}"
    elif abs(change) < rule.min_effect:
        why = f"the change is smaller than {e}"
    elif not beyond:
        why = f"the interval reaches within {e} of no change"
    else:
        worse = change < 0 if higher_is_better else change > 0
        outcome: Outcome = "regression" if worse else "improvement"
        return Verdict(change, lo, hi, p_value, nb, nc, outcome, evidence, blind)
    sees = ""
    if blind is not None:
        sees = (
            f"; at this spread only a regression of about {blind * 100:.0f} % or more would be "
            f"found {POWER * 100:g} % of the time"
        )
    reason = f"{why} ({evidence}){sees}"
    return Verdict(change, lo, hi, p_value, nb, nc, "no significant change", reason, blind)


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
    order = pd.DataFrame(
        {
            "regression": ~pairs["regression"].astype(bool),
            "missing": size.isna(),
            "size": -size.fillna(0.0),
        },
        index=pairs.index,
    )
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
    """Whether the two runs of a pair ran under comparable load: (why it is not judged, None)
    when the machine was busy on a side (telemetry's host-load record) and the other-process
    load of the two sides differs by OTHER_CORES_PER_RANK cores per rank or more, or cannot be
    compared; (None, note) when both were loaded alike (judged when each side holds several
    runs, with the note; one run a side is not judged: `_pair_row`); (None, None) when neither
    was busy or the results predate the host-load record. Why like for like and not "never on
    a busy machine": a CI runner that is always shared is loaded alike on both sides, and the
    rule's false-positive rate there, over runs, is measured (docs/regressions.md)."""
    if not (_busy(cur) or _busy(base)):
        return None, None
    now, then = finite(cur.get(OTHER_COLUMN)), finite(base.get(OTHER_COLUMN))
    shown = {k: "?" if v is None else f"{v:.1f}" for k, v in (("base", then), ("now", now))}
    if now is None or then is None:
        why = "one side has no host-load record, so the loads cannot be compared"
        return LOAD_WHY.format(**shown, why=why), None
    ranks = finite(cur.get("world_size")) or 1.0
    limit = OTHER_CORES_PER_RANK * ranks
    if abs(now - then) >= limit:
        gap = abs(now - then)
        why = f"{gap:.1f} core(s) apart, at least {limit:g} ({OTHER_CORES_PER_RANK:g} per rank)"
        return LOAD_WHY.format(**shown, why=why), None
    return None, ALIKE_NOTE.format(**shown)


RUNS_SUFFIX = "_runs"  # per-run figures of a metric, added by `pool_runs`
RUN_COLUMN = "runs"  # how many runs of the experiment a (pooled) row holds
RUN_EXPERIMENTS = "run_experiments"  # a pooled row's experiments, one per run (a tuple)
# figures a pooled row gives as the median over its runs with the bootstrap interval of that
# median over the runs (value, low, high): not the first run's interval, nor the best run
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


def _pooled_status(statuses: list[str]) -> str:
    if all(status == "ok" for status in statuses):
        return "ok"
    for status in STATUS_ORDER:
        if status in statuses:
            return status
    return next(status for status in statuses if status != "ok")


def _pooled_row(rows: pd.DataFrame) -> dict[str, Any]:
    """Several runs of one cell (same definition, different experiments) as one row: the
    figures of each run for the tested metrics (RUNS_SUFFIX), every run's repeats together,
    the median over runs of the shown figures, the worst status, and the host load of all."""
    first = rows.iloc[0]
    out: dict[str, Any] = first.to_dict()
    out[RUN_COLUMN] = len(rows)
    out["experiment"] = ", ".join(str(e) for e in rows["experiment"])
    out["status"] = _pooled_status([str(v) for v in rows["status"]])
    for metric in METRICS:
        if metric.tested:
            assert metric.repeats is not None
            figures = [_run_figure(row, metric) for _, row in rows.iterrows()]
            out[f"{metric.key}{RUNS_SUFFIX}"] = ";".join(
                f"{v:.6g}" for v in figures if v is not None
            )
            column = rows[metric.repeats] if metric.repeats in rows.columns else []
            everything = [v for value in column for v in parse_repeats(value)]
            out[metric.repeats] = ";".join(f"{v:.6g}" for v in everything) or None
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
    """A pooled row's shown figures over its runs (OVER_RUNS: the median and its interval
    over the runs' figures, `median_of_runs`; MEDIAN_OVER_RUNS: the median), and its
    reliability judged over the runs: noisy when the runs disagree by more than the threshold
    or any run was noisy. Why: the headline of four runs is their median with the runs'
    spread, never the best run nor the first run's own interval."""
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
    if "reliability" not in rows.columns or finite(out.get("samples_per_s")) is None:
        return
    cv = [v for v in (finite(x) for x in rows.get("step_cv", [])) if v is not None]
    over = judge_reliability(
        out.get("samples_per_s"),
        out.get("samples_per_s_low"),
        out.get("samples_per_s_high"),
        len(rows),
        float(np.median(cv)) if cv else None,
    )
    noisy = sum(str(v) == "noisy" for v in rows["reliability"])
    reason = f"median of {len(rows)} runs: " + over.reason.replace(" repeats", " runs")
    if noisy:
        reason += f"; {noisy} of {len(rows)} runs noisy on their own"
    out["reliability"] = "noisy" if noisy else over.level
    out["reliability_reason"] = reason


def pool_runs(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per cell, with its runs pooled: cells of the same definition in different
    experiments (the same config run several times, each its own torchrun, as a CI job that
    wants verdicts on a shared machine does) become one row whose RUN_COLUMN counts them and
    whose `<metric>_runs` hold one figure per run (`_pooled_row`). Other cells get runs = 1.
    Why: on a busy host whole runs drift apart by more than their repeats do, so a test that
    sees one run per side mistakes that drift for a change; runs as the units see it."""
    table = cells.reset_index(drop=True).copy()
    table[RUN_COLUMN] = 1
    if table.empty or "experiment" not in table.columns or "definition_sha256" not in table:
        return table
    # each definition's rows found once: a filter of the whole table per row was quadratic
    # (a second of a 500-cell report)
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


def _units(cur: pd.Series, base: pd.Series) -> str:
    """'runs' when both sides hold several runs of the cell, else 'repeats' (one run's
    windows: between-run drift unseen)."""
    runs = (finite(cur.get(RUN_COLUMN)) or 1, finite(base.get(RUN_COLUMN)) or 1)
    return "runs" if min(runs) >= 2 else "repeats"


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
    units = _units(cur, base)
    if alike is not None and units == "repeats":
        differed, alike = ONE_RUN_WHY.format(alike=alike, runs=rule.repeats_needed), None
    row["load_note"] = differed or alike
    row["units"] = units
    row["runs"] = (
        f"{int(finite(base.get(RUN_COLUMN)) or 1)} vs {int(finite(cur.get(RUN_COLUMN)) or 1)}"
    )
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
            verdict = judge_change(
                parse_repeats(base.get(column)),
                parse_repeats(cur.get(column)),
                higher_is_better=metric.higher_is_better,
                rule=rule,
                unit=units,
            )
        else:
            verdict = Verdict(None, None, None, None, 0, 0, "n/a", "not ok on both sides")
        if differed is not None and verdict.outcome in JUDGED_OUTCOMES:
            verdict = replace(verdict, outcome="busy machine", reason=differed)
        elif alike is not None and verdict.outcome in JUDGED_OUTCOMES:
            verdict = replace(verdict, reason=f"{verdict.reason}; {alike}")
        row[f"{metric.key}_change_low"] = verdict.low
        row[f"{metric.key}_change_high"] = verdict.high
        row[f"{metric.key}_p_value"] = verdict.p_value
        row[f"{metric.key}_detectable"] = verdict.detectable
        repeats = f"{verdict.n_baseline} vs {verdict.n_current}"
        if units == "runs":
            repeats += " runs"
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
    cur, base = pool_runs(current), pool_runs(baseline)
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
