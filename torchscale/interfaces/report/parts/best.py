"""The best configuration of each model, named only where its lead over the runner-up (with its
95 % interval, `analysis.ranking.lead`) is clear: two runs of one sweep can swap the top two in
each other's noise (docs/reporting.md, "The best configuration is named only beyond noise")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.figures import too_wide
from torchscale.interfaces.report.estimates import not_measurable
from torchscale.interfaces.report.parts.context import (
    Context,
    interval,
    is_quiet,
    records,
    repeats_of,
)
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.analysis.ranking import (
    Lead,
    comparable,
    judge_lead,
    lead,
    left_out_findings,
    unit_figures,
)

NO_CLEAR_BEST = "no clear best (within noise)"
# the lead's interval excludes 0 but is wider than the lead: the order holds, its size does not
AHEAD_UNSIZED = "ahead beyond noise, by a margin not measurable"
NONE_NAMED = "none named"
By = Literal["throughput", "cost"]


@dataclass(frozen=True)
class Pick:
    """A model's best configuration by one measure, and the one after it."""

    model: str
    by: By
    row: dict[str, Any]
    runner_up: dict[str, Any] | None
    lead: Lead | None

    @property
    def judgement(self) -> Finding | None:
        """The lead over the runner-up judged by its interval (`ranking.judge_lead`); None
        without a runner-up."""
        if self.runner_up is None:
            return None
        repeats = min(len(unit_figures(self.row)), len(unit_figures(self.runner_up)))
        return judge_lead(self.lead, repeats)

    @property
    def clear(self) -> bool:
        """Best beyond noise: there is a runner-up, the lead's whole interval is above 0, and
        that interval is no wider than the lead itself (a lead of +193 % in [+2, +36,605] says
        nothing to rank by)."""
        return self.judgement is not None and self.judgement.code == "lead.clear"

    @property
    def unsized(self) -> bool:
        """Ahead beyond noise (the interval excludes 0) by a margin its interval, wider than
        the lead, cannot size: neither clear nor within noise."""
        return self.judgement is not None and self.judgement.code == "lead.ahead_unsized"


def _measured(frame: pd.DataFrame, model: str) -> list[dict[str, Any]]:
    """The model's measured cells that may be ranked (`ranking.comparable`): every ranking of
    the report (best, headline, summary, GPU table) picks from these."""
    rows = frame[(frame["model_label"] == model) & pd.to_numeric(frame["samples_per_s"]).notna()]
    return records(comparable(rows))


def unusable_why(row: dict[str, Any] | pd.Series) -> str | None:
    """Why a cell cannot be ranked, in the words the report uses for it elsewhere, or None: a
    throughput the report calls not measurable, or a cell that ran on a busy machine (its own
    advice is to measure the contention first). A best taken from such a cell would contradict
    the page it stands on."""
    if too_wide(*interval(row, "samples_per_s")):
        return f"throughput {not_measurable(repeats_of(row))}"
    if not is_quiet(row):
        return "ran on a busy machine"
    return None


def _rankable(frame: pd.DataFrame, model: str, key: str, sign: float) -> list[dict[str, Any]]:
    """The model's cells that can be ranked, best first by `key` (`sign` -1: higher is better);
    none where a cell that cannot be ranked measured better than the best of them (its true
    figure is unknown, so no best can be named over it)."""
    rows = [r for r in _measured(frame, model) if finite(r.get(key)) is not None]
    rows.sort(key=lambda r: sign * float(finite(r[key]) or 0.0))
    usable = [r for r in rows if unusable_why(r) is None]
    if not usable or unusable_why(rows[0]) is not None:
        return []
    return usable


def none_named_why(ctx: Context, model: str) -> str | None:
    """Why no best is named for a model with measured cells ("its one configuration: throughput
    not measurable (2 repeats)", "its fastest, b32 x1 fp32 ddp, ran on a busy machine"); None
    where one is named; a model that ran only as FSDP on one device is never ranked."""
    rows = sorted(
        _measured(ctx.pooled, model), key=lambda r: -float(finite(r["samples_per_s"]) or 0)
    )
    if not rows:
        unranked = ctx.measured_pooled[ctx.measured_pooled["model_label"] == model]
        return "; ".join(wording.say(f) for f in left_out_findings(unranked)) or None
    if _rankable(ctx.pooled, model, "samples_per_s", -1.0):
        return None
    if any(unusable_why(r) is None for r in rows):
        return f"its fastest, {ctx.label(rows[0], model=False)}, {unusable_why(rows[0])}"
    whys = "; ".join(dict.fromkeys(str(unusable_why(r)) for r in rows))
    which = "its one configuration" if len(rows) == 1 else f"its {len(rows)} configurations"
    return f"{which}: {whys}"


def by_throughput(ctx: Context, model: str) -> Pick | None:
    """The model's highest median global samples/s (runs pooled) and its lead over the next,
    among the cells that can be ranked (`unusable_why`)."""
    rows = _rankable(ctx.pooled, model, "samples_per_s", -1.0)
    if not rows:
        return None
    first, second = rows[0], rows[1] if len(rows) > 1 else None
    ahead = lead(unit_figures(first), unit_figures(second)) if second is not None else None
    return Pick(model, "throughput", first, second, ahead)


def _cost_scale(first: dict[str, Any], second: dict[str, Any]) -> float:
    """cost(second) / cost(first) = thr(first) / thr(second) x this: cost per sample is
    price x ranks / throughput."""
    price = finite(second["price_per_gpu_hour"]) or 0.0
    price_first = finite(first["price_per_gpu_hour"]) or 0.0
    ranks = finite(second["world_size"]) or 0.0
    ranks_first = finite(first["world_size"]) or 0.0
    if price_first <= 0 or ranks_first <= 0:
        return float("nan")
    return (price * ranks) / (price_first * ranks_first)


def by_cost(priced: pd.DataFrame | None, model: str) -> Pick | None:
    """The model's lowest cost per million samples and how much more the next one costs (the
    ratio of their costs, through their throughputs at their prices and rank counts)."""
    if priced is None or priced.empty:
        return None
    rows = _rankable(priced, model, "cost_per_m_samples", 1.0)
    if not rows:
        return None
    first, second = rows[0], rows[1] if len(rows) > 1 else None
    ahead = None
    if second is not None:
        scale = _cost_scale(first, second)
        if scale == scale:  # not NaN
            ahead = lead(unit_figures(first), unit_figures(second), scale=scale)
    return Pick(model, "cost", first, second, ahead)


def lead_text(pick: Pick, runner_up: str | None) -> str:
    """How far the pick leads the next one, in the words of its judgement (contracts/wording/
    leads.py): '+12 % [+5, +20] throughput over b16 x2 fp32 ddp', 'within noise of b16 x2 fp32
    ddp (+3 % [-10, +18] throughput)', 'ahead of b16 x2 fp32 ddp beyond noise, by a margin not
    measurable (2 repeats)', 'the only configuration measured'; for cost, what the next one
    costs more. `runner_up` names the next one."""
    judgement = pick.judgement
    if judgement is None or runner_up is None:
        return "the only configuration measured"
    figures = {**judgement.figures, "measure": pick.by, "runner_up": runner_up}
    return wording.say(Finding(code=judgement.code, figures=figures))
