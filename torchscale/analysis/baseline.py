"""Results against a baseline: which cells match, how each key metric changed, and which changes
are regressions beyond the noise. Pure functions over cells tables (`Experiment.cells`
columns); no I/O.

Matching. A cell is first matched by `definition_sha256`, the hash of everything that shapes
its measurement: the same hash is the same experiment, re-run. The hash also covers settings
that do not change what is compared (step counts, repeats, telemetry, threads, a torchscale
version that hashes another field), so a cell left unmatched is then matched on its identity,
MATCH_KEY (model label, batch per GPU, world size, precision, strategy, device), when exactly
one unmatched cell on each side has that key; `matched_by` says which rule matched, so a pair
whose settings may differ is visible as such. A key shared by several unmatched cells on one
side is ambiguous and is not guessed: those cells are reported on one side only, with why.

Regressions: see `judge_change` (the rule) and `compare` (what is counted).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

# Floor of the spread rule, %: repeats of one sweep run back to back on one machine state, so
# their range (from as few as 2 runs) understates the noise between two sweeps run apart.
MIN_NOISE_PCT = 1.0
MATCH_KEY = ["model_label", "batch_size", "world_size", "precision", "strategy", "device"]
FAILURES = frozenset({"failed", "oom", "timeout"})
Outcome = Literal["regression", "improvement", "noise", "n/a"]
Rule = Literal["spread", "noise_pct"]


@dataclass(frozen=True)
class Metric:
    """A compared metric: its column, whether higher is better, and whether a change of it is
    tested for regression (only throughput and step time have a known run-to-run noise)."""

    key: str
    label: str
    higher_is_better: bool
    tested: bool


METRICS = (
    Metric("samples_per_s", "throughput", higher_is_better=True, tested=True),
    Metric("step_p50_s", "step time p50", higher_is_better=False, tested=True),
    Metric("scaling_efficiency", "scaling efficiency", higher_is_better=True, tested=False),
    Metric("comm_overhead", "exposed communication", higher_is_better=False, tested=False),
    Metric("peak_memory_bytes", "peak memory", higher_is_better=False, tested=False),
)


@dataclass(frozen=True)
class Verdict:
    """One metric's change: relative change, the threshold it was judged against, which rule
    set that threshold, and the outcome."""

    change: float | None
    threshold: float | None
    rule: Rule | None
    outcome: Outcome


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def judge_change(
    baseline: float | None,
    current: float | None,
    *,
    higher_is_better: bool,
    baseline_spread: float | None,
    current_spread: float | None,
    noise_pct: float,
    min_noise_pct: float = MIN_NOISE_PCT,
) -> Verdict:
    """Whether `current` is a regression from `baseline` beyond the noise.

    change = (current - baseline) / baseline.

    With the run-to-run spread of both sides known (spread = (max - min) / median of the
    repeats, so `spread x value` is the range of the repeats), the noise band is the two
    half-ranges together: threshold = (baseline_spread x baseline + current_spread x current)
    / 2 / baseline. The medians must be further apart than half of each side's range together:
    for ranges centred on their medians, exactly when the two ranges do not overlap. The band
    is never narrower than `min_noise_pct` / 100 (1 %): repeats run back to back understate
    the noise between two sweeps run apart.

    Otherwise (a side ran one repeat, or its spread is unknown) the threshold is
    `noise_pct` / 100, the documented default noise.

    Outcome: `regression` when the change is worse than the threshold (throughput lower by
    more than it, step time higher by more than it); `improvement` when it is better by more;
    `noise` when within (a change equal to the threshold is noise); `n/a` when a value is
    missing or the baseline is not positive.
    """
    base, now = _number(baseline), _number(current)
    if base is None or now is None or base <= 0:
        return Verdict(None, None, None, "n/a")
    change = (now - base) / base
    spreads = (_number(baseline_spread), _number(current_spread))
    threshold: float
    rule: Rule
    if spreads[0] is not None and spreads[1] is not None:
        threshold = max((spreads[0] * base + spreads[1] * now) / 2 / base, min_noise_pct / 100)
        rule = "spread"
    else:
        threshold = noise_pct / 100
        rule = "noise_pct"
    worse = -change if higher_is_better else change
    if worse > threshold:
        outcome: Outcome = "regression"
    elif -worse > threshold:
        outcome = "improvement"
    else:
        outcome = "noise"
    return Verdict(change, threshold, rule, outcome)


def _spread(row: pd.Series) -> float | None:
    """The repeats' spread of a cell, or None when it ran fewer than two repeats."""
    repeats = _number(row.get("repeats"))
    if repeats is None or repeats < 2:
        return None
    return _number(row.get("throughput_spread"))


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
    the cells of one side only, with `why`."""

    pairs: pd.DataFrame
    only_current: pd.DataFrame
    only_baseline: pd.DataFrame
    noise_pct: float

    @property
    def regressions(self) -> int:
        return int(self.pairs["regression"].sum()) if len(self.pairs) else 0

    @property
    def improvements(self) -> int:
        return int(self.pairs["improvement"].sum()) if len(self.pairs) else 0


def _peak_memory(cur: pd.Series, base: pd.Series) -> tuple[float | None, float | None, str]:
    """Peak memory of both sides on the same basis: CUDA peak allocated where both have it,
    else the largest process peak RSS; never one of each."""
    for column, kind in (("peak_allocated_bytes", "allocated"), ("peak_rss_bytes", "rss")):
        pair = _number(cur.get(column)), _number(base.get(column))
        if pair[0] is not None and pair[1] is not None:
            return pair[0], pair[1], kind
    return None, None, ""


def _pair_row(cur: pd.Series, base: pd.Series, matched_by: str, noise_pct: float) -> dict[str, Any]:
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
    spreads = (_spread(base), _spread(cur))
    outcomes = []
    for metric in METRICS:
        if metric.key == "peak_memory_bytes":
            now, then = memory_now, memory_base
        else:
            now, then = _number(cur.get(metric.key)), _number(base.get(metric.key))
        if not both_ok:
            now = then = None
        verdict = judge_change(
            then,
            now,
            higher_is_better=metric.higher_is_better,
            baseline_spread=spreads[0] if metric.tested else None,
            current_spread=spreads[1] if metric.tested else None,
            noise_pct=noise_pct,
        )
        row[f"{metric.key}_baseline"] = then
        row[f"{metric.key}_current"] = now
        row[f"{metric.key}_change"] = verdict.change
        if metric.tested:
            row[f"{metric.key}_threshold"] = verdict.threshold
            row[f"{metric.key}_rule"] = verdict.rule
            row[f"{metric.key}_verdict"] = verdict.outcome
            outcomes.append(verdict.outcome)
    broke = base_status == "ok" and status in FAILURES
    fixed = base_status in FAILURES and status == "ok"
    row["status_change"] = "broke" if broke else "fixed" if fixed else None
    row["regression"] = broke or "regression" in outcomes
    row["improvement"] = not row["regression"] and (fixed or "improvement" in outcomes)
    return row


PAIR_KEYS = ["cell_id", "baseline_cell_id", *MATCH_KEY, "matched_by", "status", "baseline_status"]


def pair_columns() -> list[str]:
    """The columns of `Comparison.pairs` (without the optional experiment columns)."""
    columns = [*PAIR_KEYS, "peak_memory_kind"]
    for metric in METRICS:
        columns += [f"{metric.key}_{s}" for s in ("baseline", "current", "change")]
        if metric.tested:
            columns += [f"{metric.key}_{s}" for s in ("threshold", "rule", "verdict")]
    return [*columns, "status_change", "regression", "improvement"]


def compare(current: pd.DataFrame, baseline: pd.DataFrame, noise_pct: float = 5.0) -> Comparison:
    """Match the cells of `current` with `baseline` and judge each matched pair.

    Per pair, every metric of METRICS gets its baseline and current value and the relative
    change (peak memory on one basis for both sides: CUDA peak allocated, else peak RSS);
    throughput and step time p50 are judged by `judge_change`, both with the throughput's
    repeats spread (the window's mean step time is batch / per-rank throughput, so its
    run-to-run spread is the same). The other metrics are shown, never flagged: nothing says
    how noisy they are.

    A pair is a regression when a tested metric regressed, or when the cell was ok in the
    baseline and failed now (failed / oom / timeout: `status_change` 'broke'); an improvement
    when not a regression and a tested metric improved or a failed cell now runs ('fixed').
    `Comparison.regressions` counts regressing pairs (cells, not metrics); improvements are
    never counted as regressions.
    """
    if noise_pct < 0 or not math.isfinite(noise_pct):
        raise ValueError(f"noise_pct must be >= 0, not {noise_pct}")
    cur, base = current.reset_index(drop=True), baseline.reset_index(drop=True)
    pairs, only_cur, only_base = match_cells(cur, base)
    rows = [_pair_row(cur.loc[c], base.loc[b], rule, noise_pct) for c, b, rule in pairs]
    columns = pair_columns()
    if "experiment" in cur.columns:
        columns = [*columns, "experiment", "baseline_experiment"]
    table = pd.DataFrame(rows, columns=columns)
    return Comparison(
        pairs=table,
        only_current=_one_side(cur, only_cur),
        only_baseline=_one_side(base, only_base),
        noise_pct=noise_pct,
    )


def _one_side(table: pd.DataFrame, why: dict[int, str]) -> pd.DataFrame:
    rows = table.loc[sorted(why)].copy()
    rows["why"] = [why[i] for i in sorted(why)]
    return rows.reset_index(drop=True)
