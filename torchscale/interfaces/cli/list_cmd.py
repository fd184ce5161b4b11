"""`torchscale list`: built-in models (exact parameter counts, FLOPs), strategies, precisions.

Reads the models' specs (torchscale/contracts/model_specs/): no model is built, torch is not
imported, so the list prints in well under a second."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from torchscale.contracts.wording.spell import count, si_count
from torchscale.interfaces.cli.common import handle_errors
from torchscale.interfaces.console.fit import FitColumn, fit_table
from torchscale.interfaces.console.streams import stdout

# what `fit_table` may abbreviate or leave out at 80 columns, lowest value first: the name
# and the exact count are what the list is for, never cut
_WHERE = "torchscale list --json has every field"
_COLUMNS = (
    FitColumn("name", justify="left"),
    FitColumn("parameters"),
    FitColumn("train FLOPs", short="FLOPs", drop=4),
    FitColumn("input per sample", short="input", justify="left", drop=3),
    FitColumn("tokens/sample", short="tokens", justify="left", drop=1),
    FitColumn("strategies", justify="left", wrap=True, drop=5),
    FitColumn("options", justify="left", wrap=True, drop=2),
)


@handle_errors
def list_catalog(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List built-in models with exact parameter counts, strategies, precisions, collectives."""
    from rich.text import Text

    from torchscale.contracts.catalog import COLLECTIVES, PRECISIONS, STRATEGIES
    from torchscale.contracts.model_specs.listing import rows

    models = rows()
    if as_json:
        catalog = {"strategies": STRATEGIES, "precisions": PRECISIONS, "collectives": COLLECTIVES}
        lists = {name: list(values) for name, values in catalog.items()}
        typer.echo(json.dumps({"models": models, **lists}, indent=2))
        return
    rows_text = [
        [
            Text(m["name"]),
            Text(count(m["parameters"])),
            Text(si_count(m["train_flops"])),
            Text("x".join(str(d) for d in m["input_shape"])),
            Text(str(m["tokens_per_sample"] or "-")),
            Text(", ".join(m["strategies"])),
            Text(", ".join(f"{k}={v}" for k, v in m["options"].items())),
        ]
        for m in models
    ]
    fitted = fit_table(_COLUMNS, rows_text, stdout.width)
    stdout.print(fitted.table(rows_text, title="built-in models"))
    notes = [f"{c.short} = {c.header}" for c in fitted.abbreviated]
    notes += fitted.notes(_WHERE)
    lines = [
        "train FLOPs: one sample's forward + backward at the default options (FlopCounterMode, "
        "2 x multiply-accumulates; --json also gives the forward pass alone)"
        + (f"; {'; '.join(notes)}" if notes else ""),
        "plug-in: models: [{name: 'package.module:factory', options: {...}}] (ddp, fsdp; tp and "
        "pp when its ModelBundle declares tp_plan / pp_split)",
        f"strategies: {', '.join(STRATEGIES)}; precisions: {', '.join(PRECISIONS)} "
        "(amp = fp16 autocast + GradScaler); collectives: " + ", ".join(COLLECTIVES),
    ]
    for line in lines:  # wrapped at the terminal's width, between words
        stdout.print(escape(line), soft_wrap=False)
