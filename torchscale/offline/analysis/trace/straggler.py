"""Which rank makes the others wait, and in which phase it loses the time (the arrival-order
cross-check: docs/profiling.md, "How each figure is computed").

Who: the rank whose matched collectives are most often the shortest (it arrived last; clock
free), named only when it stands out: its share of "last" is at least min(2 x uniform,
(1 + uniform) / 2), uniform = 1 / ranks in the collective (2 ranks: 75 %; 4: 50 %); the
binomial tail P(X >= k | n, uniform) times the ranks (Bonferroni: any rank could have been the
top one) is at most P_VALUE; and on the instances where it is last, the others' median wait
averages at least MIN_LATENESS_US (below that is timer and scheduling noise).

Where: per step, its `effective_us` per phase (`steps.phase_table`: busy time, not duration,
for phases that hold communication) minus the median of the other ranks in the same step; the
phase with the largest positive median gap over steps, named only if that gap explains at least
PHASE_MIN_SHARE of its lateness (else the delay is outside the marked phases, or spread over
them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd

from torchscale.contracts.finding import Finding
from torchscale.offline.analysis.trace.clock import Arrivals
from torchscale.offline.analysis.trace.collective_matching import Matched, stack_steps

P_VALUE = 0.05
MIN_LATENESS_US = 10.0
PHASE_MIN_SHARE = 0.2


@dataclass
class Straggler:
    """The rank that arrives last, how often, how late, and the phase that makes it late."""

    rank: int
    share_last: float  # share of its matched collectives where it arrived last
    instances_last: int
    instances: int
    expected_share: float  # what chance alone would give
    p_value: float  # binomial tail x ranks
    mean_lateness_us: float  # clock free: mean over its last arrivals of the others' median wait
    mean_arrival_lateness_us: float | None  # from aligned clocks, when arrivals are given
    op: str  # the collective op it was most often last at
    phase: str | None = None
    phase_gap_us: float | None = None  # median over steps of (its effective time - others')
    phase_gap_pct: float | None = None  # of its median step time


@dataclass
class StragglerAnalysis:
    """`straggler` is None when no rank stands out; `reason` says why (or summarises the
    verdict: an `arrival.*` code, contracts/wording/diagnosis_checks.py); `shares` keeps every
    rank's share of being last."""

    straggler: Straggler | None
    reason: Finding
    shares: dict[int, float] = field(default_factory=dict)


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in log space (exact, no scipy)."""
    if k <= 0:
        return 1.0
    if k > n or p <= 0:
        return 0.0
    if p >= 1:
        return 1.0
    logfact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))))
    j = np.arange(k, n + 1)
    logpmf = logfact[n] - logfact[j] - logfact[n - j] + j * np.log(p) + (n - j) * np.log1p(-p)
    top = float(logpmf.max())
    return float(min(1.0, np.exp(top) * np.sum(np.exp(logpmf - top))))


def decided_instances(matched: Matched) -> pd.DataFrame:
    """The usable rows of the instances with a clear last arriver (one rank strictly shortest)."""
    use = matched.usable
    if use.empty:
        return use
    return use[use.groupby(["group", "index"])["last_by_duration"].transform("any").astype(bool)]


def others_wait_us(decided: pd.DataFrame, rank: int) -> pd.Series:
    """Per instance `rank` arrived last at (of `decided_instances`): the other ranks' median wait
    for it, in us. Its mean is a straggler's lateness; its sum, the wait its late arrivals cost
    the others in all (how often it is last, weighted by how late)."""
    last = decided["last_by_duration"].astype(bool)
    keys = decided[(decided["rank"] == rank) & last].set_index(["group", "index"]).index
    others = decided[decided["rank"] != rank].set_index(["group", "index"])
    others = others[others.index.isin(keys)]
    return others.groupby(level=[0, 1])["wait_us"].median()


def _said(code: str, **figures: object) -> Finding:
    return Finding(code=f"arrival.{code}", figures=figures)


def attribute_straggler(
    matched: Matched,
    arrivals: Arrivals | None,
    phases_by_rank: Mapping[int, pd.DataFrame],
    steps_by_rank: Mapping[int, pd.DataFrame] | None = None,
) -> StragglerAnalysis:
    """Name the straggler and its phase (rules in the module doc)."""
    if matched.usable.empty:
        return StragglerAnalysis(None, Finding(code="arrival.none_matched"))
    decided = decided_instances(matched)
    decided = decided.assign(_size=decided.groupby(["group", "index"])["rank"].transform("size"))
    if decided.empty:
        return StragglerAnalysis(None, Finding(code="arrival.none_clear"))
    per_rank = decided.groupby("rank").agg(
        instances=("index", "size"),
        last=("last_by_duration", "sum"),
        expected=("_size", lambda s: float(np.mean(1.0 / s.to_numpy(np.float64)))),
    )
    per_rank["share"] = per_rank["last"] / per_rank["instances"]
    shares = {int(r): float(s) for r, s in per_rank["share"].items()}
    unnamed = partial(StragglerAnalysis, None, shares=shares)
    ordered = per_rank.sort_values(["share", "last"], ascending=False)
    top = int(ordered.index[0])
    row = ordered.iloc[0]
    n, k, p = int(row["instances"]), int(row["last"]), float(row["expected"])
    share = float(row["share"])
    threshold = min(2.0 * p, (1.0 + p) / 2.0)
    p_value = min(1.0, binomial_tail(k, n, p) * len(per_rank))
    if share < threshold:
        return unnamed(_said("none_stands_out", rank=top, share=share, threshold=threshold))
    if len(ordered) > 1 and float(ordered["share"].iloc[1]) == share:
        return unnamed(_said("tie", rank=top, other=int(ordered.index[1])))
    if p_value > P_VALUE:
        return unnamed(_said("chance", rank=top, last=k, matched=n, p=p_value))
    mine = decided[(decided["rank"] == top) & decided["last_by_duration"].astype(bool)]
    keys = mine.set_index(["group", "index"]).index
    lateness = float(others_wait_us(decided, top).mean())
    if not lateness >= MIN_LATENESS_US:
        late = lateness if math.isfinite(lateness) else None  # no other rank waited
        return unnamed(_said("noise", rank=top, late_us=late, min_us=MIN_LATENESS_US))
    arrival_late = None
    if arrivals is not None and not arrivals.table.empty:
        a = arrivals.table[arrivals.table["rank"] == top].set_index(["group", "index"])
        a = a[a.index.isin(keys)]
        if len(a):
            arrival_late = float(a["arrival_lateness_us"].mean())
    op = str(mine["op"].value_counts().index[0])
    found = Straggler(top, share, k, n, p, p_value, lateness, arrival_late, op)
    _attribute_phase(found, phases_by_rank, steps_by_rank)
    reason = _said("last", rank=top, share=share, expected=p, late_us=lateness)
    return StragglerAnalysis(found, reason, shares)


def _attribute_phase(
    s: Straggler,
    phases_by_rank: Mapping[int, pd.DataFrame],
    steps_by_rank: Mapping[int, pd.DataFrame] | None,
) -> None:
    """Fill the phase fields of `s` in place."""
    mine = phases_by_rank.get(s.rank)
    others = {r: t for r, t in phases_by_rank.items() if r != s.rank and not t.empty}
    if mine is None or mine.empty or not others:
        return
    other = pd.concat(list(others.values()), ignore_index=True)
    ref = other.groupby(["step", "phase"])["effective_us"].median().rename("ref")
    joined = mine.set_index(["step", "phase"])[["effective_us"]].join(ref, how="inner")
    if joined.empty:  # no step in common with the other ranks
        return
    joined["gap"] = joined["effective_us"] - joined["ref"]
    gaps = joined.groupby(level="phase")["gap"].median()
    best = str(gaps.idxmax())
    gap = float(gaps.max())
    if gap <= 0 or gap < PHASE_MIN_SHARE * s.mean_lateness_us:  # see the module doc
        return
    s.phase = best
    s.phase_gap_us = gap
    if steps_by_rank is not None:
        st = stack_steps({s.rank: steps_by_rank[s.rank]}) if s.rank in steps_by_rank else None
        if st is not None and len(st):
            med = float(st["step_us"].median())
            s.phase_gap_pct = 100.0 * gap / med if med > 0 else None
