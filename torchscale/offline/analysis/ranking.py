"""Is the first of a ranking clearly ahead of the second? Pure functions, no I/O.

A "best configuration" read off the highest median can change from one run of a sweep to the
next when the top two are inside each other's noise (the summary's best changed between two
runs of the same config). `lead` says by how much the first is ahead, as the ratio of their
medians with its 95 % interval (`uncertainty.ratio_of_medians`: a percentile bootstrap from 4
figures a side, Welch's t on the log ratio below that), and `judge_lead` judges it by that
interval alone, as a finding: clear where the whole interval lies above 0 and is no wider
than the lead; ahead but unsized where it lies above 0 yet is wider than the lead (the order
holds, its size is unknown); within noise where it reaches 0. One figure a side has no
interval: its spread is unknown, never clear.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torchscale.contracts.schema.finding import Finding
from torchscale.offline.analysis.uncertainty import ratio_method, ratio_of_medians


@dataclass(frozen=True)
class Lead:
    """How far the first is ahead of the second: ratio - 1 with its 95 % interval."""

    change: float
    low: float | None
    high: float | None
    method: str

    @property
    def clear(self) -> bool:
        """The whole 95 % interval of the ratio lies above 1 (first ahead beyond noise)."""
        return self.low is not None and self.low > 0.0

    @property
    def wider_than_itself(self) -> bool:
        """The interval is wider than the lead: it says the order at most, not the size."""
        return (
            self.low is not None
            and self.high is not None
            and self.high - self.low > abs(self.change)
        )


def judge_lead(ahead: Lead | None, repeats: int) -> Finding:
    """The lead judged by its interval (`repeats`: the fewer units a side), as a finding:
    'lead.clear', 'lead.ahead_unsized', 'lead.within_noise' or 'lead.spread_unknown'."""
    if ahead is None or ahead.low is None or ahead.high is None:
        change = ahead.change if ahead is not None else None
        return Finding(code="lead.spread_unknown", figures={"change": change, "repeats": repeats})
    figures = {"change": ahead.change, "low": ahead.low, "high": ahead.high, "repeats": repeats}
    if not ahead.clear:
        return Finding(code="lead.within_noise", figures=figures)
    code = "lead.ahead_unsized" if ahead.wider_than_itself else "lead.clear"
    return Finding(code=code, figures=figures)


def lead(first: Sequence[float], second: Sequence[float], *, scale: float = 1.0) -> Lead | None:
    """How far `first` is ahead of `second` (per-repeat or per-run figures, higher is better),
    as median(first) / median(second) x `scale` - 1 with its 95 % interval (`scale`: a known
    constant between the two, e.g. the ratio of their prices when comparing cost through
    throughput). None when a side has no positive figure."""
    top = [float(v) for v in first if v is not None and v > 0]
    bottom = [float(v) for v in second if v is not None and v > 0]
    if not top or not bottom:
        return None
    ratio, low, high = ratio_of_medians(top, bottom)
    method = ratio_method(len(top), len(bottom))
    if low is None or high is None:
        return Lead(ratio * scale - 1.0, None, None, method)
    return Lead(ratio * scale - 1.0, low * scale - 1.0, high * scale - 1.0, method)
