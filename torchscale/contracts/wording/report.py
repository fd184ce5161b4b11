"""Words for the report's calls: the decision line (`decision.*`, one buy-or-fix
call per model, offline/analysis/decision.py) and a configuration's lead over the next
(`lead.*`, offline/analysis/ranking.py), and the regression count's note."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases, render
from torchscale.contracts.wording.figures import (
    change_text,
    figure_with_interval,
    too_wide,
    value_format,
)
from torchscale.contracts.wording.spell import format_value, pct, pct_whole, points, repeats_text

# Words for the decision line: one buy-or-fix call per model (offline/analysis/decision.py,
# docs/reporting.md "The decision line"). Figures: `model`; a scaling call's `basis`
# ('measured' or 'forecast'), `base` and `world` (GPU counts), `efficiency` with `low` and
# `high`, `good` (the efficiency more GPUs pay from), `cost_per_m_tokens` (None: no price), and a
# forecast's `measured_at`, `scored` and `held`; an MFU call's `mfu`, `low`, `high`, `gpu`,
# `reference_mfu`, `fraction` and `source`; a share's `share`, `low`, `high`.

REFERENCE_LOOP = "a plain PyTorch GPT-2 loop's"  # what benchmarks/workload_reference.py runs


def _pct(figures: Mapping[str, Any], value: str = "efficiency") -> str:
    """'91.0 % [88.0, 93.0]', '91.0 % ±2.5 %': as every interval is spelled."""
    return figure_with_interval(
        figures[value], figures["low"], figures["high"], value_format("ratio_pct")
    )


def _cost(figures: Mapping[str, Any]) -> str:
    cost = figures.get("cost_per_m_tokens")
    if cost is None:
        return ""
    return f"; {format_value(cost, 'money')} per M tokens at {figures['world']} GPUs"


def _span(figures: Mapping[str, Any]) -> str:
    """'2 -> 8 GPUs keeps 91.0 % [88.0, 93.0] of linear (measured)', or '... by the forecast:
    measured at 2 (3 forecasts scored, 3 held)'."""
    said = f"{figures['base']} -> {figures['world']} GPUs keeps {_pct(figures)} of linear"
    if figures.get("basis") != "forecast":
        return f"{said} (measured){_cost(figures)}"
    at = ", ".join(str(w) for w in figures.get("measured_at") or [figures["base"]])
    record = f"{figures['scored']} forecasts scored, {figures['held']} held"
    return f"{said} by the forecast: measured at {at} ({record}){_cost(figures)}"


def _buy(figures: Mapping[str, Any]) -> str:
    return f"{figures['model']}: more GPUs pay: {_span(figures)}"


def _fix_scaling(figures: Mapping[str, Any]) -> str:
    return (
        f"{figures['model']}: fix the scaling before buying GPUs: {_span(figures)}, under "
        f"{pct(figures['good'])}"
    )


def _borderline(figures: Mapping[str, Any]) -> str:
    return (
        f"{figures['model']}: no buy-or-fix call: {_span(figures)}, across the "
        f"{pct(figures['good'])} line"
    )


# "40.2 %, a plain PyTorch GPT-2 loop's on an H100 (benchmarks/workload_reference.py)":
# where the figure was measured is the finding's `source`, cited in docs/reporting.md.
_REFERENCE = (
    "{reference_mfu:share}, " + REFERENCE_LOOP + " on an {gpu} (benchmarks/workload_reference.py)"
)


def _fix_mfu(figures: Mapping[str, Any]) -> str:
    return (
        f"{figures['model']}: fix the step before buying GPUs: MFU {_pct(figures, 'mfu')} is "
        f"low, under {pct(figures['fraction'])} of {render(_REFERENCE, figures)}"
    )


def _step_on_par(figures: Mapping[str, Any]) -> str:
    return (
        f"{figures['model']}: the step is on par: MFU {_pct(figures, 'mfu')} against "
        f"{render(_REFERENCE, figures)}; measure 2 GPUs or more before buying"
    )


def _fix_host(figures: Mapping[str, Any]) -> str:
    busy = figures.get("busy_share")
    said = (
        f"the GPU is busy {pct(busy)} of the step, waiting for Python and kernel launches"
        if busy is not None
        else "the GPU waits for Python and kernel launches (host-bound)"
    )
    return f"{figures['model']}: fix the host first: {said}; more GPUs would wait too"


def _fix_input(figures: Mapping[str, Any]) -> str:
    return (
        f"{figures['model']}: fix the input pipeline first: the step waits for data "
        f"{_pct(figures, 'share')} of the time"
    )


def _fix_straggler(figures: Mapping[str, Any]) -> str:
    rank = figures.get("rank")
    who = f"rank {rank}" if rank is not None else "a straggler"
    return (
        f"{figures['model']}: fix the straggler first: the others wait for {who} "
        f"{_pct(figures, 'share')} of the step"
    )


def _not_decidable(figures: Mapping[str, Any]) -> str:
    """'gpt2: no buy-or-fix call: its scaling efficiency's interval (25.0 pts wide) is wider
    than 10.0 pts; more repeats narrow it'."""
    width = figures.get("width")
    said = f" ({points(width)} wide)" if width is not None else ""
    what = f"{figures['what']}'s " if figures.get("what") else ""
    return (
        f"{figures['model']}: no buy-or-fix call: its {what}interval{said} is wider than "
        f"{points(figures['max_width'])}; more repeats narrow it"
    )


def blind_below(note: str | None, blind: float) -> str:
    """A regression count's note with the throughput drop it may miss (a share)."""
    return (
        f"{note + '; ' if note else ''}'no significant change' here may miss throughput drops "
        f"smaller than about {pct_whole(blind)} (the rule finds one that large 95 % of the time "
        "at the spread measured; more runs a side see smaller ones)"
    )


# Words for the findings of one configuration against another: a lead judged by its interval.
# Figures (offline/analysis/ranking.py `judge_lead`): `change` (the lead, ratio - 1), `low` and
# `high` (its 95 % interval, None with one figure a side), `repeats` (the fewer units a side);
# where it is shown, `measure` ('throughput', or 'cost': what the next one costs more per
# sample) and `runner_up` (the next configuration's name).


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
    "decision.buy": _buy,
    "decision.fix_scaling": _fix_scaling,
    "decision.scaling_borderline": _borderline,
    "decision.fix_mfu": _fix_mfu,
    "decision.step_on_par": _step_on_par,
    "decision.fix_host": _fix_host,
    "decision.fix_input": _fix_input,
    "decision.fix_straggler": _fix_straggler,
    "decision.not_decidable": _not_decidable,
    "lead.clear": clear,
    "lead.ahead_unsized": ahead_unsized,
    "lead.within_noise": within_noise,
    "lead.spread_unknown": spread_unknown,
}
