"""`torchscale list`: built-in models (exact parameter counts), strategies, precisions."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from torchscale.cli.common import handle_errors, stdout


@handle_errors
def list_catalog(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List built-in models with exact parameter counts, strategies, precisions, collectives."""
    from rich.table import Table

    from torchscale.catalog import COLLECTIVES, PRECISIONS, STRATEGIES
    from torchscale.cell_settings import ModelSpec
    from torchscale.models import list_models
    from torchscale.strategy_layouts import supported_strategies

    models = list_models()
    for m in models:
        m["strategies"] = supported_strategies(ModelSpec(name=m["name"]))
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "models": models,
                    "strategies": list(STRATEGIES),
                    "precisions": list(PRECISIONS),
                    "collectives": list(COLLECTIVES),
                },
                indent=2,
            )
        )
        return
    table = Table(title="built-in models", title_justify="left")
    for col in ("name", "parameters", "input per sample", "tokens/sample", "strategies", "options"):
        table.add_column(col, justify="right" if col == "parameters" else "left")
    for m in models:
        shape = "x".join(str(d) for d in m["input_shape"])
        options = ", ".join(f"{k}={v}" for k, v in m["options"].items())
        table.add_row(
            escape(m["name"]),
            f"{m['parameters']:,}",
            shape,
            str(m["tokens_per_sample"] or "-"),
            ", ".join(m["strategies"]),
            escape(options),
        )
    stdout.print(table)
    stdout.print(
        "plug-in: models: [{name: 'package.module:factory', options: {...}}] (ddp, fsdp; tp and "
        "pp when its ModelBundle declares tp_plan / pp_split)"
    )
    stdout.print(
        f"strategies: {', '.join(STRATEGIES)}; precisions: {', '.join(PRECISIONS)} "
        "(amp = fp16 autocast + GradScaler); collectives: " + ", ".join(COLLECTIVES)
    )
