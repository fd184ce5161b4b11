"""`torchscale config validate|show|schema`: check, resolve and describe config files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from torchscale.cli.common import Verbosity, handle_errors, stdout
from torchscale.cli.options import SetOverrides, VerbosityFlag

app = typer.Typer(help="Check, resolve and describe benchmark config files.", no_args_is_help=True)

ConfigFile = Annotated[
    Path, typer.Argument(help="YAML config file.", show_default=False, metavar="FILE")
]


@app.command("validate")
@handle_errors
def validate_config(
    file: ConfigFile, overrides: SetOverrides = None, verbose: VerbosityFlag = None
) -> None:
    """Check a config file (and overrides); exit 0 when valid, 2 with every problem otherwise."""
    Verbosity.override(verbose)
    from torchscale.config import load_config

    config = load_config(file, overrides or [])
    cells = (
        len(config.models)
        * len(config.batch_sizes)
        * len(config.gpu_counts)
        * len(config.training.precision)
        * len(config.training.strategy)
    )
    if not Verbosity.quiet():
        stdout.print(
            f"[green]OK[/] {file}: experiment '{config.experiment_name}', {cells} cell(s) = "
            f"{len(config.models)} model(s) x {len(config.batch_sizes)} batch size(s) x "
            f"{len(config.gpu_counts)} GPU count(s) x {len(config.training.precision)} "
            f"precision(s) x {len(config.training.strategy)} strategy(ies)",
            markup=True,
        )


@app.command("show")
@handle_errors
def show_config(
    file: ConfigFile,
    overrides: SetOverrides = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of YAML.")] = False,
) -> None:
    """Print the resolved config with every default filled in."""
    from torchscale.config import load_config
    from torchscale.config.yaml_source import dump_yaml

    data = load_config(file, overrides or []).model_dump(mode="json")
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        typer.echo(dump_yaml(data).rstrip())


@app.command("schema")
@handle_errors
def config_schema() -> None:
    """Print the config's JSON Schema (point your editor's YAML plug-in at it)."""
    from torchscale.config.schema import BenchConfig

    typer.echo(json.dumps(BenchConfig.model_json_schema(), indent=2))
