"""`torchscale list`: built-in models (exact parameter counts, FLOPs), strategies, precisions.

Reads the stored facts of torchscale/models/metadata.py: no model is built, torch is not
imported, so the list prints in well under a second."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from torchscale.cli.common import handle_errors, stdout

_COLUMNS = (
    "name",
    "parameters",
    "train FLOPs",
    "input per sample",
    "tokens/sample",
    "strategies",
    "options",
)
_NUMERIC = frozenset({"parameters", "train FLOPs"})


@handle_errors
def list_catalog(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List built-in models with exact parameter counts, strategies, precisions, collectives."""
    from rich.table import Table

    from torchscale.catalog import COLLECTIVES, PRECISIONS, STRATEGIES
    from torchscale.models.metadata import rows

    models = rows()
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
    for col in _COLUMNS:
        table.add_column(col, justify="right" if col in _NUMERIC else "left")
    for m in models:
        shape = "x".join(str(d) for d in m["input_shape"])
        options = ", ".join(f"{k}={v}" for k, v in m["options"].items())
        table.add_row(
            escape(m["name"]),
            f"{m['parameters']:,}",
            _si(m["train_flops"]),
            shape,
            str(m["tokens_per_sample"] or "-"),
            ", ".join(m["strategies"]),
            escape(options),
        )
    stdout.print(table)
    stdout.print(
        "train FLOPs: one sample's forward + backward at the default options (FlopCounterMode, "
        "2 x multiply-accumulates; --json also gives the forward pass alone)"
    )
    stdout.print(
        "plug-in: models: [{name: 'package.module:factory', options: {...}}] (ddp, fsdp; tp and "
        "pp when its ModelBundle declares tp_plan / pp_split)"
    )
    stdout.print(
        f"strategies: {', '.join(STRATEGIES)}; precisions: {', '.join(PRECISIONS)} "
        "(amp = fp16 autocast + GradScaler); collectives: " + ", ".join(COLLECTIVES)
    )


def _si(value: float) -> str:
    """A count with an SI prefix and 3 significant digits (8.18 G), as FLOPs are usually quoted."""
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {prefix}"
    return f"{value:.0f}"
