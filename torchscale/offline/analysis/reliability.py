"""Is a cell's measurement steady enough to act on? One verdict per cell, stored as a finding
(a code and its figures, worded by contracts/wording/cell_warnings.py):

Each verdict's level is its code's key (`varies`, ...), data a program compares; its word
("noisy", ...) is the catalogue's (`noise.level.*`, `cell_warnings.level_word`):

- varies (`noise.varies`, said "noisy"): the figures really vary, a repeat lies farther than
  the threshold from the repeats' median (their spread, `stats.spread_from_median`: the one
  the report's Spread column shows) or the step-time CV passes it (the steps inside a window
  disagree);
- too_few_repeats (`noise.too_few_repeats`): the throughput's 95 % interval is wider than the
  threshold either side of the median, yet nothing measured varies past it: the width is the
  count's (Student t on 2 repeats has 1 degree of freedom, t = 12.7, so two repeats 4 % apart
  get ±29 %), and more repeats, not a quieter machine, settle it;
- spread_unknown (`noise.spread_unknown`): one repeat, no run-to-run spread to judge by, and
  no sign of noise in the steps either;
- busy_machine (`noise.busy_machine`): steady by the three conditions below, but other
  processes took its cores or GPUs during its windows (the host-load verdict,
  contracts/busy_machine.py): steady figures of a contended machine measure the contention,
  so such a cell is never called reliable;
- reliable (`noise.reliable`) otherwise: the interval within ±threshold, every repeat
  within it of their median and the step-time CV at most it (three conditions, all named).

The threshold is `torchscale.contracts.thresholds.CV_WARN_THRESHOLD`, which is also the config's
`measurement.cv_warn_threshold` default (the one the worker warns at): one constant, so the two
can never drift apart. Pure functions over numbers and the cells table (pandas), no I/O.
docs/methodology.md, "Uncertainty".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

import pandas as pd

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.thresholds import CV_WARN_THRESHOLD
from torchscale.offline.analysis.numbers import finite, parse_repeats
from torchscale.offline.analysis.stats import spread_from_median

Level = Literal["reliable", "varies", "too_few_repeats", "spread_unknown", "busy_machine"]
LEVELS: tuple[Level, ...] = get_args(Level)
# levels whose throughput interval is too wide to act on: for a cause that varies, or too few
UNSETTLED: tuple[Level, ...] = ("varies", "too_few_repeats")


@dataclass(frozen=True)
class Reliability:
    """A cell's verdict: its finding (code and figures); the level and words follow from it."""

    finding: Finding

    @property
    def level(self) -> Level:
        return cast(Level, self.finding.code.removeprefix("noise."))

    @property
    def reason(self) -> str:
        return wording.say(self.finding)


def judge(
    samples_per_s: float | None,
    low: float | None,
    high: float | None,
    repeats: int,
    step_cv: float | None,
    threshold: float = CV_WARN_THRESHOLD,
    *,
    figures: Sequence[float] = (),
    unit: str = "repeat",
) -> Reliability:
    """The verdict of one measured cell from its throughput interval over `repeats` units
    (`unit`: repeats, or runs of a pooled cell), the units' own `figures` and the pooled
    step-time CV. Evidence of noise wins over a missing spread: one repeat with a CV of 0.5 is
    noisy, not merely unknown; without the units' figures a wide interval is laid to the count,
    as nothing seen varies."""
    cv = finite(step_cv)
    value, low, high = finite(samples_per_s), finite(low), finite(high)
    half: float | None = None  # half the interval's width over the value: its ± either side
    if repeats >= 2 and value is not None and low is not None and high is not None and value > 0:
        half = (high - low) / 2 / value
    spread = spread_from_median([v for v in figures if v > 0])
    said = {
        "repeats": repeats,
        "unit": unit,
        "half": half,
        "spread": spread,
        "step_cv": cv,
        "bound": threshold,
    }
    if (spread is not None and spread > threshold) or (cv is not None and cv > threshold):
        code = "noise.varies"
    elif half is not None and half > threshold:
        code = "noise.too_few_repeats"
    elif half is None:
        code = "noise.spread_unknown"
    else:
        code = "noise.reliable"
    return Reliability(Finding(code=code, figures=said))


def on_busy_machine(row: Mapping[str, Any]) -> bool:
    """Whether a cells-table row ran on a shared machine: its load telemetry judged a host
    busy, or other compute processes ran on its GPUs (a cell without that telemetry cannot be
    shown busy)."""
    busy = row.get("busy_machine")
    gpus = finite(row.get("other_gpu_processes"))
    return busy is True or busy == 1.0 or (gpus is not None and gpus > 0)


def busy(verdict: Reliability) -> Reliability:
    """A steady verdict on a busy machine: the figures it rests on, never 'reliable'."""
    if verdict.level != "reliable":
        return verdict
    return Reliability(Finding(code="noise.busy_machine", figures=verdict.finding.figures))


def repeat_count(repeats: Any) -> int:
    """Number of per-repeat throughputs in a `samples_per_s_repeats` cell (';'-joined)."""
    if not isinstance(repeats, str) or not repeats.strip():
        return 0
    return sum(1 for part in repeats.split(";") if finite(part) is not None)


def row_verdict(row: Mapping[str, Any], threshold: float = CV_WARN_THRESHOLD) -> Reliability | None:
    """One cells-table row's verdict (code and figures), None where nothing ok was measured:
    the table's `reliability` and `reliability_reason` are its level and words."""
    if row.get("status") != "ok" or finite(row.get("samples_per_s")) is None:
        return None
    value, low, high = (row.get(f"samples_per_s{end}") for end in ("", "_low", "_high"))
    figures = parse_repeats(row.get("samples_per_s_repeats"))
    cv = row.get("step_cv")
    verdict = judge(value, low, high, len(figures), cv, threshold, figures=figures)
    return busy(verdict) if on_busy_machine(row) else verdict


def add_reliability(table: pd.DataFrame, threshold: float = CV_WARN_THRESHOLD) -> pd.DataFrame:
    """`table` with `reliability` and `reliability_reason` for every ok cell with a throughput
    (None elsewhere: nothing was measured to judge)."""
    out = table.copy()
    verdicts = [row_verdict(row, threshold) for row in out.to_dict("records")]
    levels = [None if v is None else v.level for v in verdicts]
    reasons = [None if v is None else v.reason for v in verdicts]
    out["reliability"] = pd.Series(levels, index=out.index, dtype=object)
    out["reliability_reason"] = pd.Series(reasons, index=out.index, dtype=object)
    return out
