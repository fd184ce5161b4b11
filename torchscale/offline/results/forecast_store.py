"""Forecasts and their scores in an experiment's results directory:

results/<experiment>/
  forecasts/<forecast_id>.json                    one Forecast, written once
  forecasts/scores/<forecast_id>__<cell_id>.json   one ForecastScore per measured cell

A score is its own file so that scoring never rewrites a forecast: the track record is the
forecasts as they were made. Every file is written atomically; a file that cannot be read (or
is of a newer version) is skipped with its reason, as cells are.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from torchscale.contracts.atomic import write_text_atomic
from torchscale.contracts.cell import file_safe
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.forecast import Forecast, ForecastKey, ForecastScore
from torchscale.contracts.wording import say
from torchscale.offline.analysis.prediction.score import pending_scores
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.offline.results.documents import (
    read_cells,
    read_folder,
    read_forecast,
    read_forecast_score,
)

if TYPE_CHECKING:
    import pandas as pd

FORECASTS_DIR = "forecasts"
SCORES_DIR = "scores"


def forecasts_dir(experiment: Path) -> Path:
    return Path(experiment) / FORECASTS_DIR


def forecast_path(experiment: Path, forecast_id: str) -> Path:
    return forecasts_dir(experiment) / f"{forecast_id}.json"


def scores_dir(experiment: Path) -> Path:
    return forecasts_dir(experiment) / SCORES_DIR


def score_path(experiment: Path, forecast_id: str, cell_id: str) -> Path:
    return scores_dir(experiment) / f"{forecast_id}__{file_safe(cell_id)}.json"


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def new_forecast_id(key: ForecastKey, created_at: str) -> str:
    """Readable and unique: the key's slug, the time it was made, and a random suffix (two
    forecasts of one key in the same second stay apart)."""
    stamp = file_safe(created_at.replace("-", "").replace(":", ""))
    return f"{key.slug()}__{stamp}__{secrets.token_hex(3)}"


def write_forecast(experiment: Path, forecast: Forecast) -> Path:
    return write_text_atomic(
        forecast_path(experiment, forecast.id), forecast.model_dump_json(indent=2) + "\n"
    )


def write_score(experiment: Path, score: ForecastScore) -> Path:
    path = score_path(experiment, score.forecast_id, score.cell_id)
    return write_text_atomic(path, score.model_dump_json(indent=2) + "\n")


@dataclass
class StoredForecasts:
    """Every readable forecast and score of one experiment, and the files skipped, with why."""

    forecasts: list[Forecast] = field(default_factory=list)
    scores: list[ForecastScore] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)

    def scores_of(self, forecast_id: str) -> list[ForecastScore]:
        return [s for s in self.scores if s.forecast_id == forecast_id]


def with_pending(
    stored: StoredForecasts, results: Sequence[CellResult], scored_at: str
) -> StoredForecasts:
    """`stored` and the scores of its forecasts that the measured `results` owe and no sweep
    wrote (a Kubernetes job's cells: no torchscale process follows them), computed, not
    written: the track record is the same whichever scheduler ran the cells."""
    files = [(r, str(ResultLayout(PurePosixPath()).cell_path(r.cell.id))) for r in results]
    owed = pending_scores(stored.forecasts, stored.scores, files, scored_at)
    if not owed:
        return stored
    return StoredForecasts(stored.forecasts, [*stored.scores, *owed], stored.skipped)


def read_forecasts(experiment: Path) -> StoredForecasts:
    """The forecasts and scores stored under `experiment` (none: an empty record)."""
    folder = forecasts_dir(experiment)
    forecasts, skipped = read_folder(folder, read_forecast)
    scores, bad_scores = read_folder(folder / SCORES_DIR, read_forecast_score)
    return StoredForecasts(forecasts, scores, skipped + bad_scores)


FORECAST_COLUMNS = [
    "forecast_id",
    "created_at",
    *ForecastKey.model_fields,
    "step_s",
    "step_low_s",
    "step_high_s",
    "samples_per_s",
    "samples_per_s_low",
    "samples_per_s_high",
    "scaling_efficiency",
    "scaling_efficiency_low",
    "scaling_efficiency_high",
    "dominant",
    "assumptions",
    "scored_cell_id",
    "measured_step_s",
    "error",
    "inside",
]


def load_forecasts(path: str | Path) -> pd.DataFrame:
    """One experiment's forecasts as a table, one row per forecast and score (a forecast
    not yet scored has one row with empty score columns; scores its measured cells owe and
    no sweep wrote are computed, as the report does). `assumptions` is '; '-joined."""
    import pandas as pd

    root = Path(path)
    stored = read_forecasts(root)
    if stored.forecasts:
        stored = with_pending(stored, read_cells(ResultLayout(root))[0], utc_now())
    rows: list[dict[str, object]] = []
    for forecast in stored.forecasts:
        eff = forecast.scaling_efficiency
        base: dict[str, object] = {
            "forecast_id": forecast.id,
            "created_at": forecast.created_at,
            **forecast.key.model_dump(),
            "step_s": forecast.step_s.value,
            "step_low_s": forecast.step_s.low,
            "step_high_s": forecast.step_s.high,
            "samples_per_s": forecast.samples_per_s.value,
            "samples_per_s_low": forecast.samples_per_s.low,
            "samples_per_s_high": forecast.samples_per_s.high,
            "scaling_efficiency": eff.value if eff else None,
            "scaling_efficiency_low": eff.low if eff else None,
            "scaling_efficiency_high": eff.high if eff else None,
            "dominant": forecast.dominant,
            "assumptions": "; ".join(say(a) for a in forecast.assumptions),
        }
        scores: list[ForecastScore | None] = [*stored.scores_of(forecast.id)] or [None]
        for score in scores:
            rows.append(
                {
                    **base,
                    "scored_cell_id": score.cell_id if score else None,
                    "measured_step_s": score.measured_step_s if score else None,
                    "error": score.error if score else None,
                    "inside": score.inside if score else None,
                }
            )
    return pd.DataFrame(rows, columns=FORECAST_COLUMNS)
