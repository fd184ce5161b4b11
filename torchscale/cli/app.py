"""`torchscale` root command. Sub-commands import their heavy dependencies lazily, so
`torchscale --help` stays instant (no torch, pandas, plotly or weasyprint at start-up)."""

from __future__ import annotations

from typing import Annotated

import typer

from torchscale import __version__
from torchscale.cli import (
    benchmark_cmd,
    comm_cmd,
    config_cmd,
    list_cmd,
    profile_cmd,
    report_cmd,
    validate_cmd,
)
from torchscale.cli.common import Verbosity

app = typer.Typer(
    name="torchscale",
    help="Benchmark, profile and report on PyTorch distributed (DDP/FSDP) training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"torchscale {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    verbose: Annotated[
        bool | None,
        typer.Option(
            "--verbose/--quiet", help="More detail (--verbose) or only problems (--quiet)."
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Benchmark, profile and report on PyTorch distributed (DDP/FSDP) training."""
    Verbosity.set({None: 0, True: 1, False: -1}[verbose])


app.command("comm")(comm_cmd.comm)
app.add_typer(config_cmd.app, name="config")
app.command("benchmark")(benchmark_cmd.benchmark)
app.command("list")(list_cmd.list_catalog)
app.add_typer(profile_cmd.app, name="profile")
app.add_typer(report_cmd.app, name="report")
app.command("validate")(validate_cmd.validate)


def main() -> None:
    """Console-script entry point."""
    app()
