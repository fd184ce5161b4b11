"""Forecasts as the terminal shows them (docs/prediction.md): `torchscale predict`'s tables, a
figure with its interval rounded by the report's one rule (`figure_with_interval`), the
assumptions under them, and the sweep's line for a forecast a measured cell scored (its error
as prediction/score.py defines it). Builds renderables; the CLI prints them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from torchscale.contracts.schema.forecast import DOMINANT_WORDS
from torchscale.contracts.wording import say
from torchscale.contracts.wording.figures import (
    ValueFormatter,
    figure_with_interval,
    seconds_text,
    uncertainty_quantum,
)
from torchscale.contracts.wording.spell import error_pct, format_value
from torchscale.interfaces.console.lines import Line, hanging
from torchscale.orchestration.forecast_scoring import ForecastCheck, ScoredForecast

if TYPE_CHECKING:
    from torchscale.contracts.schema.diagnosis import Estimate
    from torchscale.contracts.schema.forecast import Forecast

INTERVAL_NOTE = (
    "± half the 95 % interval (measurement and model), [low, high] where lopsided; samples/s "
    "and efficiency are of the median step (ranks x batch / step): a run's wall-clock samples/s "
    "also carries its stalls, and is lower where its steps vary"
)
_NUMBER = ValueFormatter("rate")


def figure(estimate: Estimate | None, scale: float = 1.0) -> str:
    """'49.4 ±3.4' or '96 [90, 103]': the figure cut to the digits its interval supports."""
    if estimate is None or estimate.value is None:
        return "-"
    value = estimate.value * scale
    low = None if estimate.low is None else estimate.low * scale
    high = None if estimate.high is None else estimate.high * scale
    if low is not None and high is not None and math.isinf(high) and low < value:
        # a rate whose step may be 0: no upper end, the figure cut to its lower side
        quantum = uncertainty_quantum(value - low)
        return f"{_NUMBER.rounded(value, quantum)} [{_NUMBER.rounded(low, quantum)}, no limit]"
    return figure_with_interval(value, low, high, _NUMBER)


def ranks_header(device: str) -> str:
    """What a world size counts: GPUs on CUDA, ranks on CPU (a CPU rank is a process)."""
    return "GPUs" if device == "cuda" else "ranks"


def _assumptions(members: Sequence[Forecast]) -> list[str]:
    seen: list[str] = []
    for forecast in members:
        for finding in [*forecast.assumptions, *forecast.unavailable.values()]:
            if (text := say(finding)) not in seen:
                seen.append(text)
    return seen


def _groups(forecasts: Sequence[Forecast]) -> list[list[Forecast]]:
    groups: dict[tuple[object, ...], list[Forecast]] = {}
    for forecast in forecasts:
        k = forecast.key
        key = (k.label, k.batch_size, k.precision, k.strategy, k.device)
        groups.setdefault(key, []).append(forecast)
    return list(groups.values())


def _table(members: Sequence[Forecast], width: int) -> list[Any]:
    from rich.text import Text

    from torchscale.interfaces.console.fit import FitColumn, fit_table

    key = members[0].key
    columns = (
        FitColumn(ranks_header(key.device)),
        FitColumn("nodes", drop=2),
        FitColumn("step ms"),
        FitColumn("samples/s", drop=3),
        FitColumn("efficiency %", short="eff %", drop=1),
        FitColumn("dominated by", short="by", justify="left"),
    )
    rows = [
        [
            Text(str(f.key.world_size)),
            Text(str(f.key.nodes)),
            Text(figure(f.step_s, 1e3)),
            Text(figure(f.samples_per_s)),
            Text(figure(f.scaling_efficiency, 100)),
            Text(DOMINANT_WORDS.get(f.dominant, f.dominant)),
        ]
        for f in members
    ]
    title = f"{key.label} b{key.batch_size} {key.precision} {key.strategy} ({key.device})"
    fitted = fit_table(columns, rows, width)
    notes = [f"{c.short} = {c.header}" for c in fitted.abbreviated]
    notes += fitted.notes("torchscale predict --json has every figure")
    return [fitted.table(rows, title=title), *(prose(n, width) for n in notes)]


def prose(text: str, width: int, indent: str = "") -> Any:
    """One paragraph, plain text (never read as markup), cut to `width` with a hanging indent."""
    from rich.text import Text

    return Text(hanging(indent + text, width))


def _terms(members: Sequence[Forecast], width: int) -> list[Any]:
    out = []
    for forecast in members:
        k = forecast.key
        out.append(prose(f"{k.world_size} {ranks_header(k.device)}, {k.nodes} node(s):", width))
        for term in forecast.terms:
            text = f"- {term.name}: {seconds_text(term.seconds)}: {say(term.how)}"
            out.append(prose(text, width, "  "))
    return out


def forecast_renderables(
    forecasts: Sequence[Forecast], width: int, *, verbose: bool = False
) -> list[Any]:
    """The tables, each followed by the assumptions only it makes (and its terms with
    `verbose`), then the assumptions every table shares, once."""
    groups = _groups(forecasts)
    per_group = [_assumptions(members) for members in groups]
    common = [a for a in per_group[0] if all(a in g for g in per_group)] if groups else []
    out: list[Any] = []
    for members, assumed in zip(groups, per_group, strict=True):
        out += _table(members, width)
        own = [a for a in assumed if a not in common]
        if own:
            out.append(prose("assumed here:", width))
            out += [prose(f"- {a}", width, "  ") for a in own]
        if verbose:
            out += _terms(members, width)
        out.append(prose("", width))
    if forecasts:
        out.append(prose(INTERVAL_NOTE, width))
    if common:
        every = "every forecast" if len(groups) > 1 else "the forecast"
        out.append(prose(f"assumed in {every} above:", width))
        out += [prose(f"- {a}", width, "  ") for a in common]
    return out


def _seconds(value: float | None) -> str:
    return "?" if value is None else format_value(value, "seconds")


def _predicted(value: float, low: float | None, high: float | None) -> str:
    """'41.0 ms [37.0, 45.0]': both ends in the figure's unit, cut by the one rounding rule."""
    from torchscale.interfaces.report.estimates import from_columns

    return seconds_text(from_columns(value, low, high))


def score_line(scored: ScoredForecast, cell_name: str) -> Line:
    step = scored.forecast.step_s
    made = scored.score
    held = "inside" if made.inside else "outside"
    return Line(
        "info",
        f"forecast for {cell_name}: {_predicted(made.forecast_step_s, step.low, step.high)} "
        "predicted, measured "
        f"{_seconds(made.measured_step_s)}: {held}, error {error_pct(made.error, signed=True)}",
    )


def forecast_lines(check: ForecastCheck, cell_name: str) -> list[Line]:
    """A line per forecast scored, then a warning line per problem."""
    lines = [score_line(scored, cell_name) for scored in check.scored]
    return lines + [Line("warn", f"warning: {problem}") for problem in check.problems]
