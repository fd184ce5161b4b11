"""`torchscale predict`: forecast the step time, throughput and scaling efficiency of world
sizes not measured yet, from a results directory (docs/prediction.md). The answer first, one
table per model x batch x strategy; then each assumption on one line; -v adds every term."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from torchscale.interfaces.cli.common import Verbosity, handle_errors, stdout
from torchscale.interfaces.cli.shared_options import VerbosityFlag

if TYPE_CHECKING:
    from torchscale.contracts.schema.cell_result import Estimate
    from torchscale.contracts.schema.forecast import Forecast


def _digits(low: float, high: float) -> int:
    """Decimals that show an interval's width with 2 significant digits."""
    width = abs(high - low)
    if width <= 0 or not math.isfinite(width):
        return 3
    return max(0, 1 - math.floor(math.log10(width)))


def rounded(estimate: Estimate, scale: float = 1.0, unit: str = "") -> str:
    """'54 ms [52-57]': the value and its interval, rounded to the interval's width."""
    if estimate.value is None or estimate.low is None or estimate.high is None:
        return "-"
    value, low, high = (x * scale for x in (estimate.value, estimate.low, estimate.high))
    digits = _digits(low, high)
    return f"{value:.{digits}f}{unit} [{low:.{digits}f}-{high:.{digits}f}]"


DOMINANT_WORDS = {
    "compute": "compute",
    "contention": "shared cores",
    "stragglers": "stragglers",
    "exposed_communication": "exposed comm",
    "data": "data",
    "rest": "rest",
}


def _say(line: str) -> None:
    """One line of plain text (never read as markup), wrapped at the terminal's width."""
    from rich.text import Text

    stdout.print(Text(line), soft_wrap=False)


def _table(forecasts: list[Forecast]) -> None:
    from rich.text import Text

    from torchscale.interfaces.report.terminal.fit import FitColumn, fit_table

    columns = (
        FitColumn("GPUs"),
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
            Text(rounded(f.step_s, 1e3)),
            Text(rounded(f.samples_per_s)),
            Text(rounded(f.scaling_efficiency, 100) if f.scaling_efficiency else "-"),
            Text(DOMINANT_WORDS.get(f.dominant, f.dominant)),
        ]
        for f in forecasts
    ]
    key = forecasts[0].key
    title = f"{key.label} b{key.batch_size} {key.precision} {key.strategy} ({key.device})"
    fitted = fit_table(columns, rows, stdout.width)
    stdout.print(fitted.table(rows, title=title))
    notes = ["[low-high]: the 95 % interval (measurement and model)"]
    notes += [f"{c.short} = {c.header}" for c in fitted.abbreviated]
    for note in notes + fitted.notes("torchscale predict --json has every figure"):
        _say(note)


@handle_errors
def predict(
    source: Annotated[
        Path,
        typer.Option("--source", "-s", help="A results directory: one experiment, or several."),
    ],
    gpus: Annotated[
        str, typer.Option("--gpus", help="World sizes to forecast, comma-separated: 4,8,16.")
    ],
    nodes: Annotated[
        str, typer.Option("--nodes", help="Node counts to spread them over: 1,2.")
    ] = "1",
    strategy: Annotated[
        str | None,
        typer.Option("--strategy", help="ddp, fsdp or both (default: those measured)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the forecasts as JSON.")] = False,
    verbose: VerbosityFlag = None,
) -> None:
    """Forecast step time, throughput and scaling efficiency at unmeasured GPU counts."""
    Verbosity.override(verbose)
    from torchscale.interfaces.api.predict import (
        PredictRequest,
        parse_counts,
        parse_strategies,
        run_predict,
    )

    request = PredictRequest(
        source=source,
        world_sizes=parse_counts(gpus, "--gpus"),
        nodes=parse_counts(nodes, "--nodes"),
        strategies=parse_strategies(strategy),
    )
    run = run_predict(request)
    if as_json:
        import json

        payload = {
            "forecasts": [f.model_dump(mode="json") for f in run.forecasts],
            "refused": [{"forecast": r.what, "why": r.why} for r in run.refused],
            "written": [str(p) for p in run.written],
        }
        typer.echo(json.dumps(payload, indent=2))
        return
    _print(run.forecasts)
    for refusal in run.refused:
        _say(f"no forecast for {refusal.what}: {refusal.why}")
    if run.written:
        folder = run.written[0].parent
        _say(f"{len(run.written)} forecast(s) written to {folder}")


def _print(forecasts: list[Forecast]) -> None:
    groups: dict[tuple[object, ...], list[Forecast]] = {}
    for forecast in forecasts:
        k = forecast.key
        groups.setdefault((k.label, k.batch_size, k.precision, k.strategy, k.device), []).append(
            forecast
        )
    for members in groups.values():
        _table(members)
        seen: list[str] = []
        for forecast in members:
            seen += [a for a in forecast.assumptions if a not in seen]
            seen += [w for w in forecast.unavailable.values() if w not in seen]
        for line in seen:
            _say(f"  assumed: {line}")
        if Verbosity.level > 0:
            for forecast in members:
                _say(f"  {forecast.key.world_size} GPUs, {forecast.key.nodes} node(s):")
                for term in forecast.terms:
                    _say(f"    {term.name}: {rounded(term.seconds, 1e3, ' ms')}: {term.how}")
        stdout.print("")
