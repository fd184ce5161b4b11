"""A forecast checked against the cell that later measured it, and the track record of many.

One definition for every surface (the line a benchmark prints, the report's sentence and table,
the JSON, benchmarks/prediction_accuracy.py): the error is signed and relative to what was
measured, `(forecast - measured) / measured`, of the median synchronised step, so +5 % means
the forecast was 5 % too slow; a forecast held when the measured median step lies inside its
interval, ends included.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from torchscale.contracts.cell import Status
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.forecast import Forecast, ForecastKey, ForecastScore
from torchscale.contracts.wording.spell import error_pct


def measured_step_s(result: CellResult) -> float | None:
    """The step a forecast is checked against: the median synchronised step (all ranks'
    measured steps pooled, `step_time.p50`; the figure `intervals.step_p50_s` bounds), the
    statistic forecasts are built from. A median, not the mean: on a busy machine a few
    stalled steps move a mean by tens of times and say nothing about the workload (docs/
    prediction.md, "One statistic"). None for a cell that measured nothing."""
    if result.status == Status.OK and result.step_time is not None and result.step_time.p50 > 0:
        return result.step_time.p50
    return None


def forecasts_of(
    result: CellResult, cell_file: str, forecasts: Iterable[Forecast]
) -> list[Forecast]:
    """The forecasts this measured cell scores: those of its key, except one computed from this
    very cell (`cell_file` in its basis: a fit, not a forecast) and one made after the cell
    started (when both times are known): a cell measured before a forecast is what it could
    have read, no test of it."""
    if result.status != Status.OK:
        return []
    key = ForecastKey.of_cell(result.cell)
    started = _instant(result.started_at) if result.started_at else None
    return [
        f
        for f in forecasts
        if f.key == key and cell_file not in f.basis and not _after(f.created_at, started)
    ]


def _instant(stamp: str) -> datetime | None:
    """An ISO time ('...Z' or '...+00:00'; one with no zone is taken as UTC), None if not one."""
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def _after(created_at: str, started: datetime | None) -> bool:
    """Made after the cell started. Both times are whole seconds: a forecast made in the
    second its cell started counts as before it (a script's predict then benchmark), as the
    cell could not yet have been read."""
    made = _instant(created_at)
    return started is not None and made is not None and made > started


def score(forecast: Forecast, result: CellResult, cell_file: str, scored_at: str) -> ForecastScore:
    """The forecast's score against `result` (a cell of the same key that measured a step).

    A forecast without both ends of an interval never counts as inside: it claimed no range."""
    if forecast.key != ForecastKey.of_cell(result.cell):
        raise ValueError(f"forecast {forecast.id} is not of cell {result.cell.id}")
    measured = measured_step_s(result)
    if measured is None:
        raise ValueError(f"cell {result.cell.id} measured no step to score a forecast against")
    predicted = forecast.step_s.value
    if predicted is None:
        raise ValueError(f"forecast {forecast.id} has no step time")
    low, high = forecast.step_s.low, forecast.step_s.high
    inside = low is not None and high is not None and low <= measured <= high
    return ForecastScore(
        forecast_id=forecast.id,
        cell_id=result.cell.id,
        cell_file=cell_file,
        measured_step_s=measured,
        forecast_step_s=predicted,
        error=(predicted - measured) / measured,
        inside=inside,
        scored_at=scored_at,
    )


def pending_scores(
    forecasts: Sequence[Forecast],
    stored: Sequence[ForecastScore],
    measured: Iterable[tuple[CellResult, str]],
    scored_at: str,
) -> list[ForecastScore]:
    """The scores no sweep wrote: cells measured where no torchscale process followed them
    (Kubernetes jobs write their results straight to the volume). Each (result, its cell
    file) scores the forecasts `forecasts_of` gives it that are not already scored against
    it, by the same rules as a sweep's scoring."""
    done = {(s.forecast_id, s.cell_id) for s in stored}
    out = []
    for result, cell_file in measured:
        if measured_step_s(result) is None:
            continue
        for forecast in forecasts_of(result, cell_file, forecasts):
            if (forecast.id, result.cell.id) in done or forecast.step_s.value is None:
                continue
            out.append(score(forecast, result, cell_file, scored_at))
    return out


@dataclass(frozen=True)
class TrackRecord:
    """How the scored forecasts did: how many, their median absolute error, how many held."""

    count: int
    median_abs_error: float | None  # a ratio (0.06 = 6 %); None when nothing was scored
    inside: int

    @property
    def coverage(self) -> float | None:
        """The share of forecasts whose interval held the measured step."""
        return self.inside / self.count if self.count else None

    def sentence(self) -> str:
        """'forecasts scored: 12; median error 6 %; 11 of 12 inside their intervals'."""
        if not self.count or self.median_abs_error is None:
            return "forecasts scored: 0"
        held = "inside its interval" if self.count == 1 else "inside their intervals"
        return (
            f"forecasts scored: {self.count}; median error {error_pct(self.median_abs_error)}; "
            f"{self.inside} of {self.count} {held}"
        )


def track_record(scores: Sequence[ForecastScore]) -> TrackRecord:
    """The track record of `scores` (each forecast once per cell that measured it)."""
    if not scores:
        return TrackRecord(0, None, 0)
    errors = [abs(s.error) for s in scores]
    return TrackRecord(len(scores), statistics.median(errors), sum(s.inside for s in scores))
