"""The sweep's line for a forecast a measured cell scored: 'forecast for <cell>: 410 ms
predicted [370 ms, 450 ms], measured 430 ms: inside, error -5 %' (the error as
prediction/score.py defines it, signed: + means the forecast was too slow)."""

from __future__ import annotations

from torchscale.interfaces.report.render.formatting import format_value
from torchscale.interfaces.report.terminal.lines import Line
from torchscale.offline.analysis.prediction.score import percent
from torchscale.orchestration.forecast_scoring import ForecastCheck, ScoredForecast


def _seconds(value: float | None) -> str:
    return "?" if value is None else format_value(value, "seconds")


def score_line(scored: ScoredForecast, cell_name: str) -> Line:
    step = scored.forecast.step_s
    made = scored.score
    held = "inside" if made.inside else "outside"
    return Line(
        "info",
        f"forecast for {cell_name}: {_seconds(made.forecast_step_s)} predicted "
        f"[{_seconds(step.low)}, {_seconds(step.high)}], measured "
        f"{_seconds(made.measured_step_s)}: {held}, error {percent(made.error, signed=True)}",
    )


def forecast_lines(check: ForecastCheck, cell_name: str) -> list[Line]:
    """A line per forecast scored, then a warning line per problem."""
    lines = [score_line(scored, cell_name) for scored in check.scored]
    return lines + [Line("warn", f"warning: {problem}") for problem in check.problems]
