"""`torchscale`: the console script's entry point (`main`), which imports Typer only when it is
needed. `torchscale --help` and `--version` are answered first, without Typer (cli/root_help.py
prints the root's help page as Typer would: tests/test_fast_commands.py holds the two equal);
everything else runs the Typer app of cli/root.py.

`app`, `LazyCommands`, `BuiltOnUse`, `build_subcommand` and `root` are cli/root.py's, read
through this module as before (importing one of them imports Typer).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from torchscale.interfaces.cli.root_help import (
    SUBCOMMANDS,
    Subcommand,
    answers_without_typer,
    print_root_help,
    program_name,
)

__all__ = ["SUBCOMMANDS", "Subcommand", "main"]

_FROM_ROOT = {"app", "LazyCommands", "BuiltOnUse", "build_subcommand", "root"}


def __getattr__(name: str) -> Any:
    if name in _FROM_ROOT:
        from torchscale.interfaces.cli import root

        return getattr(root, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Console-script entry point."""
    args = sys.argv[1:]
    prog = program_name()
    if not answers_without_typer(args, prog):
        from torchscale.interfaces.cli.root import app

        app()
    elif args == ["--version"]:
        from torchscale import __version__

        print(f"torchscale {__version__}")
    else:
        try:
            print_root_help(prog)
        except BrokenPipeError:  # `torchscale --help | head`: exit 1 quietly, as Typer does
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
