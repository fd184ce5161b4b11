"""The comparison with the baseline in a few words and one figure: what the baseline section, the
summary and the headline all say of it (the largest changes, the regressions figure, the drops the
rule could not confirm), so the three read the same sentence from one place."""

from __future__ import annotations

from typing import Any

import pandas as pd

from torchscale.contracts.wording.spell import change_whole_interval, p_value, pct_set
from torchscale.interfaces.report.model import KeyFigure
from torchscale.interfaces.report.parts.context import Context, interval, plural, records
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.analysis.regressions import Comparison, largest_changes

NO_CHANGE = "no significant change"
LARGEST_CHANGES = 3  # cells named on the first screen (summary, the gate's stderr)


def change_text(change: float | None, low: float | None, high: float | None) -> str | None:
    """A change with its 95 % interval in one short form: '-49 % [-61, -33]' (whole percent;
    '-49 % [interval unknown]' without one); None without a change."""
    return None if change is None else change_whole_interval(change, low, high)


def units_judged(row: dict[str, Any]) -> str:
    """'2 repeats', '2 vs 3 repeats', '3 runs': what a side held (both alike: said once)."""
    counted = str(row.get("samples_per_s_repeats") or "")
    unit = "runs" if counted.endswith("runs") else "repeats"
    sides = counted.removesuffix(" runs").split(" vs ")
    if len(sides) == 2 and sides[0] == sides[1]:
        return f"{sides[0]} {unit} a side"
    return f"{counted.removesuffix(' runs')} {unit}" if counted else unit


def short_verdict(row: dict[str, Any]) -> str:
    """A pair's verdict in a few words, for the first screen: 'regression', 'no significant
    change (p = 0.057)', 'not judged: 2 repeats a side', 'not judged: busy machine'."""
    if row.get("status_change") == "broke":
        return f"regression: {row['baseline_status']} -> {row['status']}"
    if row.get("status_change") == "fixed":
        return f"improvement: {row['baseline_status']} -> {row['status']}"
    verdict = str(row["verdict"])
    if verdict == "not enough repeats":
        return f"not judged: {units_judged(row)}"
    if verdict == "busy machine":
        return "not judged: busy machine"
    if verdict == "no significant change":
        p = finite(row.get("samples_per_s_p_value"))
        return f"{verdict} ({p_value(p)})" if p is not None else verdict
    return verdict


def largest_change_items(ctx: Context, comparison: Comparison, limit: int) -> list[str]:
    """'tiny-gpt2 b16 x2 fp32 ddp -49 % [-61, -33], not judged: 2 repeats a side': the cells
    that changed most (regressions first), judged or not, each with its interval."""
    items = []
    for row in records(largest_changes(comparison, limit)):
        change = change_text(*interval(row, "samples_per_s_change"))
        shown = f" {change}" if change else ""
        items.append(f"{ctx.label(row)}{shown}, {short_verdict(row)}")
    return items


def unconfirmed(comparison: Comparison) -> int:
    """Cells judged "no significant change" whose throughput fell by more than the minimum
    effect anyway: a drop the rule could not confirm at this spread, not a pass."""
    pairs = comparison.pairs
    if not len(pairs):
        return 0
    drop = pd.to_numeric(pairs["samples_per_s_change"], errors="coerce")
    flagged = (pairs["verdict"] == NO_CHANGE) & (drop <= -comparison.rule.min_effect)
    return int(flagged.sum())


def regression_figure(comparison: Comparison, label: str) -> KeyFigure:
    """The regressions against the baseline as one figure: the count only where the rule judged
    something (nothing judged is "not judged: N cells", amber, never a 0 with a check); a check only
    where every matched cell was judged and none dropped beyond the minimum effect unconfirmed."""
    matched, judged = len(comparison.pairs), comparison.judged
    regressions = comparison.regressions
    unjudged = comparison.not_judged
    parts = [f"{plural(matched, 'cell')} matched, {judged} judged"]
    if unjudged and judged:
        parts.append(f"{unjudged} not judged (neither regressions nor passes)")
    not_compared = matched - judged - unjudged
    if not_compared:
        parts.append(f"{not_compared} not compared (not ok on both sides)")
    if comparison.improvements:
        parts.append(f"{comparison.improvements} improved (never counted)")
    hidden = unconfirmed(comparison)
    if hidden:
        e = pct_set(comparison.rule.min_effect)
        parts.append(
            f"{hidden} judged 'no significant change' although throughput fell more than {e}"
        )
    if regressions:
        return KeyFigure(
            label=label, value=regressions, format="int", note="; ".join(parts), severity="bad"
        )
    if not matched:
        return KeyFigure(
            label=label,
            value="not compared",
            note="no cell matches the baseline: nothing was compared, 0 is no pass",
            severity="warn",
        )
    if not judged:
        return KeyFigure(
            label=label,
            value=f"not judged: {plural(unjudged, 'cell')}",
            note=f"no matched cell could be judged ({'; '.join(parts)}): neither regressions "
            "nor passes; see the largest changes",
            severity="warn",
        )
    return KeyFigure(
        label=label,
        value=0,
        format="int",
        note="; ".join(parts),
        severity="warn" if unjudged or hidden else "good",
    )
