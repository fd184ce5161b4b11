"""Forecasts: what `torchscale predict` said of cells not yet measured, how each scored against
the run that later measured it, and their track record (`prediction.score.track_record`, the same
the benchmark's line and benchmarks/prediction_accuracy.py use). A forecast is drawn dashed in
its measured curve's colour, its interval a band along it (`Series.interval`: it runs with the
curve between world sizes; a measured point's is a bar). No forecast in the sources: no section."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from torchscale.contracts.schema.forecast import (
    DOMINANT_WORDS,
    Forecast,
    ForecastKey,
    ForecastScore,
)
from torchscale.contracts.wording.forecast import said_once
from torchscale.interfaces.report.estimates import compact
from torchscale.interfaces.report.model import (
    Block,
    Chart,
    Column,
    KeyFigure,
    KeyFigures,
    Section,
    Series,
    Table,
    Text,
)
from torchscale.interfaces.report.parts.context import Context, present, records, slug
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.analysis.prediction.score import track_record

TITLE = "Forecasts"
KEY_COLUMNS = ("model", "model_label", "batch_size", "precision", "strategy", "nodes", "device")
CHART_NOTE = (
    "solid: measured, each cell's median step (the cells table's Step p50, the statistic a "
    "forecast is made of and scored on), with its 95 % interval; dashed, in the colour of its "
    "measured curve: the forecast (`torchscale predict`), with its 95 % interval as the shaded "
    "band around it (a bar where a forecast stands alone)"
)
TABLE_NOTE = (
    "error: (forecast - measured) / measured, of the median step (+: the forecast was too "
    "slow); held: the measured median step lies inside the forecast's interval; dominant: "
    "the largest term of the forecast step (docs/prediction.md)"
)


@dataclass(frozen=True)
class _Made:
    """One forecast with the experiment it was made in and its scores (none yet: not measured)."""

    experiment: str
    forecast: Forecast
    scores: tuple[ForecastScore, ...]


def _made(ctx: Context) -> list[_Made]:
    return [
        _Made(source.name, forecast, tuple(source.forecasts.scores_of(forecast.id)))
        for source in ctx.sources.experiments
        for forecast in source.forecasts.forecasts
    ]


def _key_row(experiment: str, key: ForecastKey) -> dict[str, Any]:
    """A forecast's key as a cells-table row, for the context's labels."""
    return {**key.model_dump(), "model_label": key.label, "experiment": experiment}


def _fitted_cell(ctx: Context, entry: _Made) -> dict[str, Any] | None:
    """The measured cell a forecast was computed from that has the forecast's own key (a
    forecast at a measured size: scoring skips it as a fit), or None."""
    for file in entry.forecast.basis:
        cell_id = file.removeprefix("cells/").removesuffix(".json")
        rows = ctx.cells[(ctx.cells["cell_id"] == cell_id) & (ctx.cells["status"] == "ok")]
        rows = rows[rows["experiment"] == entry.experiment]
        if len(rows) and ForecastKey.of_cell(ctx.result(rows.iloc[0]).cell) == entry.forecast.key:
            return dict(rows.iloc[0])
    return None


def _table(ctx: Context, made: Sequence[_Made]) -> Table:
    rows = []
    order = sorted(
        made,
        key=lambda m: (
            m.experiment,
            m.forecast.key.label,
            m.forecast.key.batch_size,
            m.forecast.key.strategy,
            m.forecast.key.world_size,
            m.forecast.created_at,
        ),
    )
    for entry in order:
        forecast = entry.forecast
        base = {
            "cell": ctx.label(_key_row(entry.experiment, forecast.key)),
            "made": forecast.created_at[:10],
            "step": forecast.step_s.value,
            "step_low": forecast.step_s.low,
            "step_high": forecast.step_s.high,
            "step_text": compact(
                forecast.step_s.value, forecast.step_s.low, forecast.step_s.high, "seconds"
            ),
            "dominant": DOMINANT_WORDS.get(forecast.dominant, forecast.dominant),
        }
        fitted = _fitted_cell(ctx, entry)
        if fitted is not None:  # made at a size already measured: a fit, no test of the model
            measured = finite(fitted.get("step_p50_s"))
            rows.append({**base, "measured": measured, "held": "measured: a fit of that cell"})
        elif not entry.scores:
            rows.append({**base, "held": "not measured yet"})
        for score in entry.scores:
            rows.append(
                {
                    **base,
                    "measured": score.measured_step_s,
                    "error": score.error,
                    "held": "inside" if score.inside else "outside",
                    **({} if score.inside else {"_severity": "warn"}),
                }
            )
    columns = [
        Column(key="cell", label="Cell", align="left"),
        Column(key="made", label="Made", align="left"),
        Column(key="step_text", label="Forecast step ±95 %", align="left"),
        Column(key="measured", label="Measured step", format="seconds"),
        Column(key="error", label="Error", format="change_pct"),
        Column(key="held", label="Held", align="left"),
        Column(key="dominant", label="Dominant", align="left"),
    ]
    return Table(
        id="forecasts-scored",
        title="Forecasts and what was measured",
        columns=columns,
        rows=rows,
        note=TABLE_NOTE,
    )


def _latest(made: Sequence[_Made]) -> dict[tuple[str, ForecastKey], Forecast]:
    """The newest forecast of each cell (the one a later predict made with more measured)."""
    ordered = sorted(made, key=lambda m: m.forecast.created_at)  # a later one replaces its key's
    return {(entry.experiment, entry.forecast.key): entry.forecast for entry in ordered}


def _group(key: ForecastKey) -> tuple[Any, ...]:
    return tuple(
        getattr(key, column) if column != "model_label" else key.label for column in KEY_COLUMNS
    )


def _measured(ctx: Context, experiment: str, group: tuple[Any, ...]) -> list[dict[str, Any]]:
    """The ok cells of one forecast group (model, batch, precision, strategy, nodes, device)
    in `experiment`, one per world size, smallest first."""
    ok = ctx.ok
    if ok.empty:
        return []
    mask = ok["experiment"] == experiment
    for column, value in zip(KEY_COLUMNS, group, strict=True):
        mask &= ok[column].astype(str) == str(value)
    picked = ok[mask].sort_values("world_size").drop_duplicates("world_size")
    return records(picked)


@dataclass(frozen=True)
class _Curve:
    """One group's measured cells and its latest forecasts, by world size."""

    experiment: str
    key: ForecastKey  # any forecast of the group (its world size is not read)
    measured: list[dict[str, Any]]
    forecasts: list[Forecast]


def _curves(ctx: Context, made: Sequence[_Made]) -> list[_Curve]:
    groups: dict[tuple[str, tuple[Any, ...]], list[Forecast]] = {}
    for (experiment, key), forecast in _latest(made).items():
        groups.setdefault((experiment, _group(key)), []).append(forecast)
    curves = []
    for (experiment, group), forecasts in sorted(groups.items(), key=lambda item: str(item[0])):
        forecasts.sort(key=lambda f: f.key.world_size)
        measured = _measured(ctx, experiment, group)
        curves.append(_Curve(experiment, forecasts[0].key, measured, forecasts))
    return curves


def _estimate_lists(
    forecasts: Sequence[Forecast], field: str
) -> tuple[list[float | None], list[float | None], list[float | None]]:
    estimates = [getattr(forecast, field) for forecast in forecasts]
    values, lows, highs = (
        [None if e is None else getattr(e, end) for e in estimates]
        for end in ("value", "low", "high")
    )
    return values, lows, highs


def _pair(ctx: Context, curve: _Curve) -> list[Series]:
    """The measured series of a group (each cell's median step, the figure of the cells
    table's 'Step p50'), when any cell was measured, and its forecast of that step, dashed."""
    name = ctx.group_name(_key_row(curve.experiment, curve.key))
    model = curve.key.label
    series = []
    rows = [r for r in curve.measured if (finite(r.get("step_p50_s")) or 0) > 0]
    if rows:
        series.append(
            Series(
                name=name,
                x=[int(r["world_size"]) for r in rows],
                y=[finite(r["step_p50_s"]) for r in rows],
                low=[finite(r.get("step_p50_low_s")) for r in rows],
                high=[finite(r.get("step_p50_high_s")) for r in rows],
                model=model,
            )
        )
    values, lows, highs = _estimate_lists(curve.forecasts, "step_s")
    series.append(
        Series(
            name=f"forecast ({name})",
            x=[f.key.world_size for f in curve.forecasts],
            y=values,
            low=lows,
            high=highs,
            style="dashed",
            interval="band",
            reference_for=name if rows else None,
            model=model,
        )
    )
    return series


def _step_charts(ctx: Context, curves: Sequence[_Curve]) -> list[Chart]:
    """One chart a model: the median step over the world size, measured and forecast."""
    by_model: dict[str, list[_Curve]] = {}
    for curve in curves:
        by_model.setdefault(curve.key.label, []).append(curve)
    return [
        Chart(
            id=f"forecasts-step-{slug(model)}",
            title=f"{model}: median step vs {ctx.units.world}, measured and forecast",
            kind="line",
            x_label=ctx.units.world,
            y_label="median step",
            x_format="int",
            y_format="seconds",
            x_log2=True,
            series=[s for curve in by_model[model] for s in _pair(ctx, curve)],
            note=CHART_NOTE,
        )
        for model in sorted(by_model)
    ]


def _figures(ctx: Context, made: Sequence[_Made]) -> tuple[Text, KeyFigures]:
    scores = [score for entry in made for score in entry.scores]
    record = track_record(scores)
    fitted = [_fitted_cell(ctx, entry) is not None for entry in made]
    fits = sum(fitted)
    waiting = sum(not entry.scores and not fit for entry, fit in zip(made, fitted, strict=True))
    said = []
    if fits:
        said.append(f"{fits} made at a size already measured: fits of those cells, testing nothing")
    if waiting:
        cells = "forecast" if waiting == 1 else "forecasts"
        said.append(
            f"{waiting} {cells} not measured yet: a later `torchscale benchmark` of the cell into "
            "this folder scores it"
        )
    sentence = record.sentence() + (f" ({'; '.join(said)})" if said else "")
    figures = KeyFigures(
        role="more",
        figures=[
            KeyFigure(label="Forecasts made", value=len(made), format="int"),
            KeyFigure(label="Forecasts scored", value=record.count, format="int"),
            KeyFigure(
                label="Median absolute error",
                value=record.median_abs_error,
                format="ratio_pct",
                note=None if record.count else "no forecast measured yet",
            ),
            KeyFigure(
                label="Inside their intervals",
                value=record.coverage,
                format="ratio_pct",
                note=f"{record.inside} of {record.count}" if record.count else None,
            ),
        ],
    )
    return Text(text=sentence), figures


def _assumptions(made: Sequence[_Made]) -> Text | None:
    said = said_once(a for entry in made for a in entry.forecast.assumptions)
    if not said:
        return None
    return Text(text="Assumed by the forecasts: " + "; ".join(said), severity="warn")


def build(ctx: Context) -> Section | None:
    """The track record, the forecasts beside what was measured; None without forecasts."""
    made = _made(ctx)
    if not made:
        return None
    sentence, figures = _figures(ctx, made)
    blocks: list[Block] = [sentence, figures]
    blocks += present(_assumptions(made))
    blocks.append(_table(ctx, made))
    curves = _curves(ctx, made)
    blocks.extend(_step_charts(ctx, curves))
    return Section(id="forecasts", title=TITLE, blocks=blocks)
