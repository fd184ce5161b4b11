"""`torchscale`: the console script's entry point (`main`), the Typer app of cli/root.py."""

from __future__ import annotations

from torchscale.interfaces.cli.root import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    app()
