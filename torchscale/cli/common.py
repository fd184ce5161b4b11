"""What every command shares: consoles, verbosity, and turning errors into exit codes."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from torchscale.errors import TorchScaleError
from torchscale.signals import Terminated, terminate_on_signals

P = ParamSpec("P")
R = TypeVar("R")

EXIT_INTERRUPTED = 130

stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


class Verbosity:
    """Set once by the root callback from --verbose/--quiet."""

    level: int = 0  # -1 quiet, 0 normal, 1 verbose

    @classmethod
    def set(cls, level: int) -> None:
        cls.level = level
        logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
        logging.getLogger("torchscale").setLevel(
            {-1: logging.WARNING, 0: logging.INFO, 1: logging.DEBUG}[level]
        )

    @classmethod
    def override(cls, flag: bool | None) -> None:
        """Apply a sub-command's --verbose/--quiet (None: keep the root's setting)."""
        if flag is not None:
            cls.set(1 if flag else -1)

    @classmethod
    def quiet(cls) -> bool:
        return cls.level < 0


def print_error_lines(lines: list[str]) -> None:
    for line in lines:
        stderr.print(f"[bold red]error:[/] {escape(line)}")


def handle_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorate a command: TorchScaleError -> its lines on stderr and its exit code;
    Ctrl-C -> exit 130; SIGTERM/SIGHUP -> exit 128 + the signal's number, after the same
    clean-up as Ctrl-C (a launched cell's process group is killed on the way out). Anything
    else is a bug and keeps its traceback."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            with terminate_on_signals():
                return fn(*args, **kwargs)
        except TorchScaleError as exc:
            print_error_lines(exc.lines())
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            stderr.print("[yellow]interrupted[/]")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except Terminated as exc:
            with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
                stderr.print(f"[yellow]stopped by {exc.name}; finished results are kept[/]")
            raise typer.Exit(exc.exit_code) from None

    return wrapper
