"""The benchmark's line for a scored forecast (torchscale/interfaces/console/forecasts.py): the
forecast, its interval, what was measured, whether it held and the signed error, as scored."""

from __future__ import annotations

from pathlib import Path

from tests.forecast_samples import fixture_cell, fixture_copy, forecast_of
from torchscale.contracts.schema.forecast import ForecastKey
from torchscale.interfaces.console.forecasts import forecast_lines
from torchscale.offline.analysis.prediction.score import measured_step_s, score
from torchscale.orchestration.forecast_scoring import ForecastCheck, ScoredForecast


def test_a_scored_forecast_is_one_line_and_a_problem_a_warning(tmp_path: Path) -> None:
    result = fixture_cell(fixture_copy(tmp_path), "tiny-gpt2__b16__w2")
    key = ForecastKey.of_cell(result.cell)
    measured = measured_step_s(result)  # the statistic a forecast is scored on
    assert measured is not None
    held = forecast_of(key, measured * 1.05, measured * 0.9, measured * 1.2, forecast_id="a")
    missed = forecast_of(key, 0.041, 0.037, 0.045, forecast_id="b")
    check = ForecastCheck(
        result.cell.id,
        tuple(ScoredForecast(f, score(f, result, "c", "t")) for f in (held, missed)),
        ("forecast file x.json not read, not scored: invalid JSON",),
    )
    first, second, problem = forecast_lines(check, "tiny-gpt2 b16 x2")
    shown = f"{measured * 1e3:.1f} ms"
    assert first.text.startswith("forecast for tiny-gpt2 b16 x2: ")
    assert first.text.endswith(f"measured {shown}: inside, error +5 %"), first.text
    error = round((0.041 - measured) / measured * 100)
    assert second.text == (
        f"forecast for tiny-gpt2 b16 x2: 41 ms ±4 ms predicted, "
        f"measured {shown}: outside, error +{error} %"
    )
    assert (problem.level, problem.text) == (
        "warn",
        "warning: forecast file x.json not read, not scored: invalid JSON",
    )
