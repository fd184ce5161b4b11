"""Is a cell's measurement steady enough to act on? One verdict per cell, with a one-line reason:
"noisy" when the throughput's 95 % interval is wider than the threshold either side of the
median (the repeats disagree) or the step-time CV passes it (the steps inside a window
disagree); "spread unknown" with one repeat (no run-to-run spread to judge by) and no sign of
noise in the steps either; "reliable" otherwise.

The threshold is `torchscale.contracts.thresholds.CV_WARN_THRESHOLD`, which is also the config's
`measurement.cv_warn_threshold` default (the one the worker warns at): one constant, so the two
can never drift apart. Pure functions over numbers and the cells table (pandas), no I/O.
docs/methodology.md, "Uncertainty".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from torchscale.contracts.thresholds import CV_WARN_THRESHOLD
from torchscale.offline.analysis.numbers import finite

Level = Literal["reliable", "noisy", "spread unknown"]
LEVELS: tuple[Level, ...] = ("reliable", "noisy", "spread unknown")


@dataclass(frozen=True)
class Reliability:
    """A cell's verdict and why, in one line."""

    level: Level
    reason: str


def _pct(value: float) -> str:
    return f"{value * 100:.1f} %"


def judge(
    samples_per_s: float | None,
    low: float | None,
    high: float | None,
    repeats: int,
    step_cv: float | None,
    threshold: float = CV_WARN_THRESHOLD,
) -> Reliability:
    """The verdict of one measured cell from its throughput interval (over `repeats` repeats)
    and its pooled step-time CV. Evidence of noise wins over a missing spread: one repeat
    with a CV of 0.5 is noisy, not merely unknown."""
    cv = finite(step_cv)
    value, low, high = finite(samples_per_s), finite(low), finite(high)
    half: float | None = None  # half the interval's width over the value: its ± either side
    if repeats >= 2 and value is not None and low is not None and high is not None and value > 0:
        half = (high - low) / 2 / value
    limit = f"{threshold * 100:g} %"
    problems = []
    if half is not None and half > threshold:
        problems.append(
            f"throughput's 95 % interval is ±{_pct(half)} of the median over {repeats} "
            f"repeats, above ±{limit}"
        )
    if cv is not None and cv > threshold:
        problems.append(f"step-time CV {_pct(cv)} is above {limit}")
    if problems:
        return Reliability("noisy", "; ".join(problems))
    cv_text = f"step-time CV {_pct(cv)}" if cv is not None else "step-time CV not recorded"
    if half is None:
        why = "one repeat" if repeats < 2 else "no throughput interval"
        return Reliability(
            "spread unknown", f"{why}: no run-to-run spread to judge throughput by; {cv_text}"
        )
    return Reliability(
        "reliable",
        f"throughput's 95 % interval ±{_pct(half)} of the median over {repeats} repeats and "
        f"{cv_text}, both within {limit}",
    )


def repeat_count(repeats: Any) -> int:
    """Number of per-repeat throughputs in a `samples_per_s_repeats` cell (';'-joined)."""
    if not isinstance(repeats, str) or not repeats.strip():
        return 0
    return sum(1 for part in repeats.split(";") if finite(part) is not None)


def add_reliability(table: pd.DataFrame, threshold: float = CV_WARN_THRESHOLD) -> pd.DataFrame:
    """`table` with `reliability` and `reliability_reason` for every ok cell with a throughput
    (None elsewhere: nothing was measured to judge)."""
    out = table.copy()
    verdicts: list[Reliability | None] = []
    for row in out.to_dict("records"):
        if row.get("status") != "ok" or finite(row.get("samples_per_s")) is None:
            verdicts.append(None)
            continue
        value, low, high = (row.get(f"samples_per_s{end}") for end in ("", "_low", "_high"))
        repeats = repeat_count(row.get("samples_per_s_repeats"))
        verdicts.append(judge(value, low, high, repeats, row.get("step_cv"), threshold))
    levels = [None if v is None else v.level for v in verdicts]
    reasons = [None if v is None else v.reason for v in verdicts]
    out["reliability"] = pd.Series(levels, index=out.index, dtype=object)
    out["reliability_reason"] = pd.Series(reasons, index=out.index, dtype=object)
    return out
