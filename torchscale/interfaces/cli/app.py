"""`torchscale`: the console script's entry point (`main`), the Typer app of cli/root.py.

`app`, `LazyCommands`, `BuiltOnUse`, `build_subcommand`, `root`, `SUBCOMMANDS` and
`Subcommand` are cli/root.py's, read through this module too.
"""

from __future__ import annotations

from torchscale.interfaces.cli.root import (
    SUBCOMMANDS,
    BuiltOnUse,
    LazyCommands,
    Subcommand,
    app,
    build_subcommand,
    root,
)

__all__ = [
    "SUBCOMMANDS",
    "BuiltOnUse",
    "LazyCommands",
    "Subcommand",
    "app",
    "build_subcommand",
    "main",
    "root",
]


def main() -> None:
    """Console-script entry point."""
    app()
