"""Score the experiment's forecasts against a cell the sweep just measured.

`torchscale predict` leaves forecasts in the experiment's forecasts/ folder; the first later run
that measures a forecast's cell (same `ForecastKey`) writes its score beside it, so the track
record grows by itself. Scoring is a by-product of the sweep: whatever goes wrong here (a
corrupt forecast file, a full disk) is a problem line for the caller to show, never an error
that could cost the cell, which is written before this runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.forecast import Forecast, ForecastScore
from torchscale.offline.analysis.prediction.score import forecasts_of, score
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.offline.results.forecast_store import (
    forecasts_dir,
    read_forecasts,
    utc_now,
    write_score,
)


@dataclass(frozen=True)
class ScoredForecast:
    forecast: Forecast
    score: ForecastScore


@dataclass(frozen=True)
class ForecastCheck:
    """What measuring one cell did to the experiment's forecasts: the scores it wrote and the
    problems met (one line each)."""

    cell_id: str
    scored: tuple[ScoredForecast, ...] = ()
    problems: tuple[str, ...] = ()


@dataclass
class ForecastScorer:
    """One per sweep: each forecast file that cannot be read is said once, not at every cell."""

    experiment: Path
    _said: set[Path] = field(default_factory=set)

    def check(self, result: CellResult) -> ForecastCheck | None:
        """Score every forecast of `result`'s cell; None when there is nothing to say (no
        forecasts folder, no forecast of this cell, no new problem)."""
        if not forecasts_dir(self.experiment).is_dir():
            return None
        try:
            return self._check(result)
        except Exception as exc:  # a by-product must never stop the sweep
            return ForecastCheck(result.cell.id, problems=(f"forecasts not scored: {exc}",))

    def _check(self, result: CellResult) -> ForecastCheck | None:
        stored = read_forecasts(self.experiment)
        problems = [
            f"forecast file {path.name} not read, not scored: {why}"
            for path, why in stored.skipped
            if path not in self._said
        ]
        self._said.update(path for path, _ in stored.skipped)
        cell_file = str(ResultLayout(PurePosixPath()).cell_path(result.cell.id))
        scored: list[ScoredForecast] = []
        for forecast in forecasts_of(result, cell_file, stored.forecasts):
            try:
                made = score(forecast, result, cell_file, utc_now())
                write_score(self.experiment, made)
            except (OSError, ValueError) as exc:
                problems.append(f"forecast {forecast.id} not scored: {exc}")
                continue
            scored.append(ScoredForecast(forecast, made))
        if not scored and not problems:
            return None
        return ForecastCheck(result.cell.id, tuple(scored), tuple(problems))
