"""The versioned forecast of one cell not yet measured (forecasts/<id>.json), and its scores.

`torchscale predict` writes a `Forecast` from the cells (and `comm` runs) already measured;
a later `benchmark` that measures the same cell (equal `ForecastKey`) writes a `ForecastScore`
beside it, never rewriting the forecast, so the track record is the forecasts as they were
made. The model and each term's formula: docs/prediction.md. Formulas and assumptions are
stored as findings, worded when shown (contracts/wording/forecast.py).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from torchscale.contracts.catalog import Precision, Strategy
from torchscale.contracts.cell import CellIdentity, Device, file_safe
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import Estimate
from torchscale.contracts.versioned import FrozenRecord, Record

FORECAST_SCHEMA_VERSION = 2  # 2: the terms' formulas and the assumptions stored as findings
FORECAST_SCORE_SCHEMA_VERSION = 1
FORECAST_KIND = "torchscale.forecast"
FORECAST_SCORE_KIND = "torchscale.forecast_score"

TermName = Literal["compute", "exposed_communication", "stragglers", "contention", "data", "rest"]
# how `predict` and the report both name a dominant term (the others read as their name)
DOMINANT_WORDS = {"contention": "shared cores", "exposed_communication": "exposed comm"}


class ForecastKey(FrozenRecord):
    """Which cell a forecast is of: the fields of a cell's identity that say what was run and
    where, so a later measured cell matches a forecast when their keys are equal."""

    model: str = Field(description="model name (built-in or plug-in path)")
    label: str = Field(description="the model's display name (tells model options apart)")
    batch_size: int = Field(description="per device, as in the cell identity")
    precision: Precision
    strategy: Strategy
    world_size: int
    nodes: int = 1
    device: Device

    @classmethod
    def of_cell(cls, cell: CellIdentity) -> ForecastKey:
        """The key of a measured cell: a forecast with this key is scored by that cell."""
        return cls(**cell.model_dump(include=set(cls.model_fields)))

    def slug(self) -> str:
        """A readable, file-safe name part: label__b<batch>__w<world>[__n<nodes>]__prec__strat."""
        spread = f"__n{self.nodes}" if self.nodes > 1 else ""
        return (
            f"{file_safe(self.label)}__b{self.batch_size}__w{self.world_size}{spread}"
            f"__{self.precision}__{self.strategy}__{self.device}"
        )


class ForecastTerm(Record):
    """One additive part of the forecast step (seconds per step), and how it was computed."""

    name: TermName
    seconds: Estimate
    how: Finding = Field(description="the formula with its inputs (forecast.term.*)")


class Forecast(Record):
    kind: Literal["torchscale.forecast"] = "torchscale.forecast"
    schema_version: Literal[2] = 2
    id: str = Field(description="forecast id, also the file's name")
    created_at: str = Field(description="ISO 8601, UTC")
    key: ForecastKey
    basis: list[str] = Field(
        description="what it was computed from: cells/<id>.json and comm/<run>.json, relative "
        "to the experiment"
    )
    step_s: Estimate = Field(description="forecast median step, seconds (the terms' sum)")
    samples_per_s: Estimate = Field(description="global: world_size x batch / step")
    scaling_efficiency: Estimate | None = Field(
        description="against the smallest measured world size of the group; null: none measured"
    )
    dominant: TermName = Field(description="the largest term")
    terms: list[ForecastTerm]
    assumptions: list[Finding] = Field(
        default_factory=list,
        description="what was assumed, and how to measure it instead (forecast.*)",
    )
    unavailable: dict[str, Finding] = Field(default_factory=dict, description="field -> why null")


class ForecastScore(Record):
    """A forecast checked against the cell that later measured it."""

    kind: Literal["torchscale.forecast_score"] = "torchscale.forecast_score"
    schema_version: Literal[1] = 1
    forecast_id: str
    cell_id: str = Field(description="the measured cell")
    cell_file: str = Field(description="cells/<cell_id>.json, relative to the experiment")
    measured_step_s: float = Field(
        description="the cell's median synchronised step (step_time.p50)"
    )
    forecast_step_s: float
    error: float = Field(description="(forecast - measured) / measured: signed, relative")
    inside: bool = Field(description="the measured step lies inside the forecast's interval")
    scored_at: str = Field(description="ISO 8601, UTC")
