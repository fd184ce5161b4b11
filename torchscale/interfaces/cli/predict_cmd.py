"""`torchscale predict`: forecast the step time, throughput and scaling efficiency of world
sizes not measured yet, from a results directory (docs/prediction.md). The answer first, one
table per model x batch x strategy, then the assumptions (interfaces/console/forecasts.py
renders them); -v adds every term."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from torchscale.interfaces.cli.common import handle_errors
from torchscale.interfaces.cli.shared_options import VerbosityFlag
from torchscale.interfaces.console.streams import Verbosity, print_error_lines, stdout


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
        str | None, typer.Option("--strategy", help="ddp, fsdp or both (default: those measured).")
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

        # the models' own JSON dump: an open end is null there, as in the stored file, where
        # json.dumps would print Infinity, which is not JSON
        payload = {
            "forecasts": [json.loads(f.model_dump_json()) for f in run.forecasts],
            "refused": [{"forecast": r.what, "why": r.why} for r in run.refused],
            "skipped": [{"file": r.what, "why": r.why} for r in run.skipped],
            "written": [str(p) for p in run.written],
        }
        typer.echo(json.dumps(payload, indent=2, allow_nan=False))
        if run.exit_code:
            raise typer.Exit(run.exit_code)
        return
    from rich.text import Text

    from torchscale.interfaces.console.forecasts import forecast_renderables, prose

    width = stdout.width
    lines = forecast_renderables(run.forecasts, width, verbose=Verbosity.level > 0)
    lines += [prose(f"skipped {r.what}: {r.why}", width) for r in run.skipped]
    lines += [prose(f"no forecast for {r.what}: {r.why}", width) for r in run.refused]
    if run.written:
        folder = run.written[0].parent
        lines.append(prose(f"{len(run.written)} forecast(s) written to {folder}", width))
    for item in lines:
        # prose is cut to the width already; rich folds only what cannot break (a long path)
        stdout.print(item, soft_wrap=False if isinstance(item, Text) else None)
    if run.exit_code:
        why = "no measured cell is usable"
        if run.refused:
            why = f"the {len(run.refused)} refusal(s) above say why"
        print_error_lines([f"no forecast made: {why}"])
        raise typer.Exit(run.exit_code)
