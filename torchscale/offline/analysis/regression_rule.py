"""The regression rule (docs/regressions.md): its parameters, the metrics it tests and
`judge_change`, the verdict on one metric of one matched pair. Pure; no tables. Matching,
pooling runs and the comparison of two result sets are `regressions.py`'s."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats as scipy_stats

from torchscale.contracts.thresholds import OTHER_CORES_PER_RANK
from torchscale.contracts.wording.figures import change_text
from torchscale.contracts.wording.spell import as_set, p_figure, pct_set, pct_whole
from torchscale.contracts.wording.spell import p_value as p_text
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.analysis.uncertainty import LEVEL, SMALL, ratio_of_medians

# The rule's parameters (docs/regressions.md; measured by benchmarks/regression_detection.py).
TEST = "two-sided Welch t-test on the log figures"
ALPHA = 0.05  # the test's significance level, over the per-unit figures of both sides
MIN_EFFECT = 0.05  # the smallest |ratio of medians - 1| ever flagged; the interval must clear it
POWER = 0.95  # `detectable`: the change the rule finds this often at the spread it saw
STEP_REPEATS = "step_p50_s_repeats"  # added by `with_step_repeats` from the steps table
# a metric's outcome; regressions.PairVerdict is the same but "not compared" for "n/a"
Judgement = Literal[
    "regression", "improvement", "no significant change", "busy machine", "not enough repeats"
]
Outcome = Literal[Judgement, "n/a"]


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
        e = pct_set(self.min_effect)
        return (
            f"A change is a regression (or an improvement) only when all three hold, on the "
            f"per-run figures of both sides when each holds several runs of the cell (each "
            f"run's median; the same config run again, each its own launch), else on the "
            f"per-repeat figures of one run (each repeat is one measured window): the "
            f"{self.test} gives p < {as_set(self.alpha)}; the ratio of the medians (now / "
            f"baseline) differs from 1 by at least {e}; and its {pct_set(LEVEL)} "
            f"interval (percentile bootstrap; Welch's t on the log ratio when a side holds "
            f"fewer than {SMALL}) lies entirely beyond 1 - {e} (or 1 + {e}). With too few "
            f"runs or repeats for any distribution-free test to reach p < {as_set(self.alpha)} "
            f"(3 vs 3 give at best {p_figure(min_p_value(3, 3))}) the verdict is "
            '"not enough repeats" '
            f"(need {self.repeats_needed} per side), never a regression: not judged, its change "
            "shown. When either side ran on a busy machine (its host-load record: other processes "
            "took its cores), the pair is judged only if both were loaded alike (other processes' "
            f"cores within {as_set(OTHER_CORES_PER_RANK)} per rank) and each side holds several "
            'runs; otherwise it is "not judged: busy machine", neither a regression nor a pass.'
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
    time 14 % higher). Why: a "no significant change" over runs that spread 8 % cannot see a
    15 % slowdown, and must not read as a pass. The method: docs/regressions.md, "The drop the
    rule would find". None when the interval is not positive or there are too few units."""
    if not 0 < low <= high or units < 3:
        return None
    z = float(scipy_stats.norm.ppf(0.5 + LEVEL / 2))
    se = (math.log(high) - math.log(low)) / (2 * z)
    t_level = float(scipy_stats.t.ppf(0.5 + LEVEL / 2, units - 2))
    shift = (t_level + float(scipy_stats.t.ppf(power, units - 2))) * se
    if higher_is_better:
        return 1 - (1 - min_effect) * math.exp(-shift)
    return (1 + min_effect) * math.exp(shift) - 1


def welch_log_p(baseline: Sequence[float], current: Sequence[float]) -> float:
    """The two-sided p-value of Welch's t-test (unequal variances) on the logs of two sides'
    positive figures: a change that scales every run alike is a shift of the logs. 1 when
    every figure is the same; with no spread on either side, 0 when the sides differ.

    Not a rank test: with 4 units a side the exact Mann-Whitney U reaches p < 0.05 only when
    the sides do not overlap, however large the change (docs/regressions.md compares both)."""
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
    """Whether the per-repeat figures `current` regressed from `baseline`, by `rule` (see
    `RegressionRule`): change = median(current) / median(baseline) - 1 with the interval of
    `uncertainty.ratio_of_medians`. Why all three conditions: repeats run back to back on one
    machine state, and two runs apart drift by a few percent; the test alone would flag that
    drift once it has enough repeats, the minimum effect does not, and the interval keeps a
    lucky split from passing."""
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
            else f"too few for a test free of assumptions to reach p < {as_set(rule.alpha)} (at "
            f"best {p_figure(floor)})"
        )
        reason = f"{nb} vs {nc} {unit}: {why}; need {rule.repeats_needed} per side"
        lo = None if low is None else low - 1
        hi = None if high is None else high - 1
        return Verdict(change, lo, hi, None, nb, nc, "not enough repeats", reason)
    p_value = welch_log_p(base, now)
    lo, hi = low - 1, high - 1
    beyond = hi < -rule.min_effect if change < 0 else lo > rule.min_effect
    evidence = f"{p_text(p_value)} over {nb} vs {nc} {unit}, change {change_text(change, lo, hi)}"
    e = pct_set(rule.min_effect)
    blind = detectable_regression(
        low, high, rule.min_effect, higher_is_better=higher_is_better, units=nb + nc
    )
    if p_value >= rule.alpha:
        why = f"p >= {as_set(rule.alpha)}"
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
            f"; at this spread only a regression of about {pct_whole(blind)} or more would be "
            f"found {pct_set(POWER)} of the time"
        )
    reason = f"{why} ({evidence}){sees}"
    return Verdict(change, lo, hi, p_value, nb, nc, "no significant change", reason, blind)
