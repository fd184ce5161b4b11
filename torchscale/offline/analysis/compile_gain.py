"""Compiled against eager: the one estimator of a compile gain, so the workload level and the
report print one figure for one pair (they printed 1.52x [1.52, 1.85] and 1.57x [1.53, 1.84]).

The gain is the ratio of the two cells' median throughputs, compiled over eager, over their
units (per repeat, per run where runs are pooled: `ranking.units`), with the 95 % interval of
`ranking.lead` (`uncertainty.ratio_of_medians`: a percentile bootstrap from 4 a side, Welch's t
on the log ratio below), the interval every other comparison of two configurations uses. Its
units are independent repeats, so drift between repeats is in it (a median step's interval,
over steps of one run, left it out). An interval wider than the gain itself (`figures.too_wide`,
1.51x [1.14, 1.99] over 2 + 2 repeats) makes the gain not measurable: no surface prints its
digits, though the order holds where the interval excludes 1. FSDP on one device is never
compared (`shards_nothing`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.figures import too_wide
from torchscale.offline.analysis.ranking import (
    lead,
    positive,
    units,
    why_left_out,
)

METHOD = (
    "median throughput compiled / eager over the cells' repeats (runs where pooled); 95 % "
    "interval: percentile bootstrap of the ratio of medians from 4 a side, Welch's t on the "
    "log ratio below that"
)
FASTER = "ranking.compiled_faster"
SLOWER = "ranking.compiled_slower"
UNCLEAR = "ranking.compile_no_clear_difference"
NO_INTERVAL = "ranking.compile_no_interval"
NOT_MEASURABLE = "ranking.compile_not_measurable"


def compile_gain(compiled: Mapping[str, Any], eager: Mapping[str, Any]) -> Finding | None:
    """Compiled over eager for one pair of cells-table rows of the same shape: faster or slower
    where the interval excludes 1, no clear difference where it holds it, not measurable where
    it is wider than the gain (`beyond`: 'faster' or 'slower' where it still excludes 1), no
    interval with one unit a side; FSDP on one device and ranks sharing a GPU not compared.
    None when a side has no throughput."""
    left = why_left_out(compiled) or why_left_out(eager)
    if left is not None:
        return left
    (top, unit), (bottom, _) = units(compiled), units(eager)
    ahead = lead(top, bottom)
    if ahead is None:
        return None
    figures: dict[str, Any] = {
        "ratio": 1.0 + ahead.change,
        "compiled_units": len(positive(top)),
        "eager_units": len(positive(bottom)),
        "unit": unit,
    }
    if ahead.low is None or ahead.high is None:
        return Finding(code=NO_INTERVAL, figures=figures)
    figures |= {"low": 1.0 + ahead.low, "high": 1.0 + ahead.high}
    beyond = "faster" if ahead.low > 0 else "slower" if ahead.high < 0 else None
    if too_wide(ahead.change, ahead.low, ahead.high):
        return Finding(code=NOT_MEASURABLE, figures=figures | {"beyond": beyond})
    code = FASTER if beyond == "faster" else SLOWER if beyond == "slower" else UNCLEAR
    return Finding(code=code, figures=figures)


def slower(gain: Finding | None) -> bool:
    """Compiled slower than eager beyond the interval, sized or not: the workload level's WARN."""
    if gain is None:
        return False
    return gain.code == SLOWER or (
        gain.code == NOT_MEASURABLE and gain.figures.get("beyond") == "slower"
    )
