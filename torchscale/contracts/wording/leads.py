"""Words for the findings of one configuration against another: a lead judged by its interval.
Figures (offline/analysis/ranking.py `judge_lead`): `change` (the lead, ratio - 1), `low` and
`high` (its 95 % interval, None with one figure a side), `repeats` (the fewer units a side);
where it is shown, `measure` ('throughput', or 'cost': what the next one costs more per
sample) and `runner_up` (the next configuration's name)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def _pct(value: float) -> str:
    """A change in whole percent (one decimal below 1 %): '+12 %', '-0.4 %'."""
    return f"{value * 100:+.0f} %" if abs(value) >= 0.005 else f"{value * 100:+.1f} %"


def _interval(low: float, high: float) -> str:
    digits = 0 if min(abs(low), abs(high)) >= 0.005 or low == 0 else 1
    return f"[{low * 100:+.{digits}f}, {high * 100:+.{digits}f}]"


def _figure(figures: Mapping[str, Any]) -> str:
    """'+51 % [+13, +101]'."""
    return f"{_pct(figures['change'])} {_interval(figures['low'], figures['high'])}"


def _said(figures: Mapping[str, Any]) -> str:
    """The lead with its interval as a sentence's object: '+12 % [+5, +20] throughput over X',
    'X costs +12 % [+5, +20] more per sample'."""
    who = figures.get("runner_up") or "the next"
    if figures.get("measure") == "cost":
        return f"{who} costs {_figure(figures)} more per sample"
    return f"{_figure(figures)} throughput over {who}"


def _wider(figures: Mapping[str, Any]) -> bool:
    return bool(figures["high"] - figures["low"] > abs(figures["change"]))


def _repeats(figures: Mapping[str, Any]) -> str:
    count = int(figures.get("repeats") or 0)
    return f"{count} repeat{'' if count == 1 else 's'}"


def clear(figures: Mapping[str, Any]) -> str:
    """'+12 % [+5, +20] throughput over b16 x2 fp32 ddp'."""
    return _said(figures)


def ahead_unsized(figures: Mapping[str, Any]) -> str:
    """'ahead of X beyond noise, by a margin not measurable (2 repeats)': the interval excludes
    0, so the order holds, but it is wider than the lead, so no size of it is shown (the first
    screen shows no digits of a figure wider than itself)."""
    who = figures.get("runner_up") or "the next"
    margin = f"beyond noise, by a margin not measurable ({_repeats(figures)})"
    if figures.get("measure") == "cost":
        return f"{who} costs more per sample {margin}"
    return f"ahead of {who} {margin}"


def within_noise(figures: Mapping[str, Any]) -> str:
    """'within noise of X (+3 % [-10, +18] throughput)'; 'within noise of X; lead not
    measurable (2 repeats)' where the interval is wider than the lead too."""
    who = figures.get("runner_up") or "the next"
    if _wider(figures):
        return f"within noise of {who}; lead not measurable ({_repeats(figures)})"
    if figures.get("measure") == "cost":
        return f"within noise: {_said(figures)}"
    return f"within noise of {who} ({_figure(figures)} throughput)"


def spread_unknown(figures: Mapping[str, Any]) -> str:
    """'not told apart from X (+5 % throughput): spread unknown (one repeat)'."""
    who = figures.get("runner_up") or "the next"
    change = figures.get("change")
    measure = "more per sample" if figures.get("measure") == "cost" else "throughput"
    said = f" ({_pct(change)} {measure})" if change is not None else ""
    return f"not told apart from {who}{said}: spread unknown (one repeat)"


PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "lead.clear": clear,
    "lead.ahead_unsized": ahead_unsized,
    "lead.within_noise": within_noise,
    "lead.spread_unknown": spread_unknown,
}
