"""The decision line on the report's first screen: each model's buy-or-fix call
(`offline/analysis/decision.py`, worded by `contracts/wording/report.py`), made from the
tables the report already holds: the pooled cells with their GPU and cost, the weak-scaling
rows, the forecasts and their track record. None where the numbers cannot be used."""

from __future__ import annotations

from typing import Any

import pandas as pd

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.names import gpu_name as short_gpu_name
from torchscale.interfaces.report.model import Text, Usable
from torchscale.interfaces.report.parts.context import Context, records
from torchscale.offline.analysis.decision import decide, unreferenced
from torchscale.offline.analysis.prediction.score import track_record
from torchscale.offline.results.frame import cells_table

COST_COLUMNS = ["cost_per_m_tokens", "price_per_gpu_hour"]


def gpu_name(environment: dict[str, Any]) -> str | None:
    """The GPU a rank ran on ('H100 80GB HBM3'; NVIDIA's prefix dropped, the rest as the
    driver names it), or None when not recorded."""
    name = environment.get("device_name")
    if not name:
        gpus = environment.get("gpus")
        name = gpus[0] if isinstance(gpus, list) and gpus else None
    if not name:
        return None
    return short_gpu_name(str(name))


def _cells(ctx: Context) -> pd.DataFrame:
    """The pooled measured cells, each with its GPU's name and, where priced, its cost."""
    hosts = {s.name: s.experiment.environment for s in ctx.sources.experiments if s.experiment}
    gpus = {  # by cell id: a pooled row's experiment names all its runs'
        str(row["cell_id"]): gpu_name(
            ctx.result(row).environment or hosts.get(str(row["experiment"])) or {}
        )
        for row in records(ctx.ok[ctx.ok["device"].astype(str) != "cpu"])
    }
    cells = ctx.measured_pooled.copy()
    cells["gpu"] = cells["cell_id"].astype(str).map(gpus)
    priced = ctx.pooled_priced
    if priced is not None:
        cells[COST_COLUMNS] = priced.loc[cells.index, COST_COLUMNS]
    return cells


def _scaling(ctx: Context) -> pd.DataFrame:
    """The weak-scaling rows, with the cost of each where priced."""
    scaling = ctx.weak_scaling
    priced = ctx.pooled_priced
    if priced is None or scaling.empty:
        return scaling
    return scaling.assign(cost_per_m_tokens=priced.loc[scaling.index, "cost_per_m_tokens"])


def profile_calls(ctx: Context, usable: Usable) -> list[Finding]:
    """A profile report's calls: the same rule over its profiled runs' measured windows (their
    untraced steps), each run a cell on the GPU it ran on."""
    results = [ref.entry.result for ref in ctx.profiles if ref.entry.result is not None]
    if usable not in ("yes", "with care") or not results:
        return []
    cells = cells_table(results)
    cells["gpu"] = [gpu_name(r.environment or {}) for r in results]
    cells = cells[pd.to_numeric(cells["samples_per_s"]).notna()]
    said = decide(cells, pd.DataFrame()) if len(cells) else []
    return [
        Finding(code=c.code, figures={**c.figures, "profiled": True})
        if c.code == "decision.no_interval"
        else c
        for c in said
    ]


def calls(ctx: Context, usable: Usable) -> list[Finding]:
    """Each model's call, where the rule makes one; none from numbers that cannot be used."""
    if usable not in ("yes", "with care") or ctx.measured_pooled.empty:
        return []
    forecasts = [f for s in ctx.sources.experiments for f in s.forecasts.forecasts]
    record = track_record([score for s in ctx.sources.experiments for score in s.forecasts.scores])
    return decide(_cells(ctx), _scaling(ctx), forecasts, record)


def uncalled(ctx: Context, usable: Usable, models: list[str]) -> list[Text]:
    """Where the numbers cannot be used, which of `models` usable ones would still leave
    without an MFU call, for want of a reference of their own, and what would measure one."""
    if usable != "no" or ctx.measured_pooled.empty:
        return []
    cells = _cells(ctx)
    cells = cells[cells["model_label"].astype(str).isin(models)]
    return [Text(text=wording.say(call), severity="info") for call in unreferenced(cells)]
