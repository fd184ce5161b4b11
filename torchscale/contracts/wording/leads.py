"""Words for the findings of one configuration against another: a lead judged by its interval.
Figures (offline/analysis/ranking.py `judge_lead`): `change` (the lead, ratio - 1), `low` and
`high` (its 95 % interval, None with one figure a side), `repeats` (the fewer units a side);
where it is shown, `measure` ('throughput', or 'cost': what the next one costs more per
sample) and `runner_up` (the next configuration's name)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording.figures import change_text, too_wide
from torchscale.contracts.wording.spell import repeats_text


def _figure(figures: Mapping[str, Any]) -> str:
    """'+51 % ±44 %', '+57 % [53, 84]': spelled as every change is (`figures.change_text`)."""
    return change_text(figures["change"], figures["low"], figures["high"])


def _repeats(figures: Mapping[str, Any]) -> str:
    return repeats_text(int(figures.get("repeats") or 0))


def _said(figures: Mapping[str, Any]) -> str:
    """The lead with its interval as a sentence's object: '+12.0 % ±7.5 % throughput over X',
    'X costs +57 % [53, 84] more per sample'."""
    who = figures.get("runner_up") or "the next"
    if figures.get("measure") == "cost":
        return f"{who} costs {_figure(figures)} more per sample"
    return f"{_figure(figures)} throughput over {who}"


def clear(figures: Mapping[str, Any]) -> str:
    """'+12.0 % ±7.5 % throughput over b16 x2 fp32 ddp'."""
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
    """'within noise of X (+3 % ±14 % throughput)'; 'within noise of X; lead not
    measurable (2 repeats)' where the interval is wider than the lead too."""
    who = figures.get("runner_up") or "the next"
    if too_wide(figures["change"], figures["low"], figures["high"]):
        return f"within noise of {who}; lead not measurable ({_repeats(figures)})"
    if figures.get("measure") == "cost":
        return f"within noise: {_said(figures)}"
    return f"within noise of {who} ({_figure(figures)} throughput)"


def spread_unknown(figures: Mapping[str, Any]) -> str:
    """'not told apart from X (+5.0 % throughput): spread unknown (one repeat)'."""
    who = figures.get("runner_up") or "the next"
    change = figures.get("change")
    measure = "more per sample" if figures.get("measure") == "cost" else "throughput"
    said = f" ({change_text(change, None, None)} {measure})" if change is not None else ""
    return f"not told apart from {who}{said}: spread unknown (one repeat)"


PHRASES: Phrases = {
    "lead.clear": clear,
    "lead.ahead_unsized": ahead_unsized,
    "lead.within_noise": within_noise,
    "lead.spread_unknown": spread_unknown,
}
