"""What every command shares: consoles, verbosity, and turning errors into exit codes."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Callable, Iterable
from typing import ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from torchscale.contracts.errors import TorchScaleError
from torchscale.contracts.signals import Terminated, terminate_on_signals
from torchscale.interfaces.console.lines import Line, fit_lines

P = ParamSpec("P")
R = TypeVar("R")

EXIT_INTERRUPTED = 130

# emoji off: rich would read a plug-in named `mod:factory:` or `pkg:smile:` as an emoji code
# ("mod🏭"); markup is escaped where a user string meets it (`escape`)
stdout = Console(highlight=False, soft_wrap=True, emoji=False)
stderr = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)


def table_width(console: Console) -> int | None:
    """The width a fixed-layout table must fit: the terminal's, or COLUMNS when set; None when
    writing to a file or pipe with no COLUMNS, where a full-width table (e.g. nccl-tests' own
    layout, to diff against) is what the reader wants."""
    if console.is_terminal or os.environ.get("COLUMNS"):
        return console.width
    return None


def print_lines(console: Console, lines: Iterable[Line]) -> None:
    """Terminal lines on `console`: on a terminal (or with COLUMNS) cut to its width at word
    boundaries, each continuation row starting '>   ' (`fit_lines`); to a file or pipe
    whole, one line each, for grep and logs."""
    width = table_width(console)
    if width is None:
        for line in lines:
            console.print(line.markup(), soft_wrap=True)
        return
    for line in fit_lines(lines, width):
        console.print(line.markup(), soft_wrap=False)


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
    else is a bug and keeps its traceback.

    An OSError raised while a Terminated unwinds is that stop too: after SIGHUP from a closed
    terminal, clean-up that writes to the dead tty (a live progress display leaving the
    screen) fails with EIO, and would otherwise replace the stop with a traceback."""

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
            raise _stopped(exc) from None
        except OSError as exc:
            stop = terminated_in_chain(exc)
            if stop is None:
                raise
            raise _stopped(stop) from None

    return wrapper


def terminated_in_chain(exc: BaseException) -> Terminated | None:
    """The Terminated that `exc` was raised while handling (its __context__ or __cause__,
    however deep), if any."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc.__context__, exc.__cause__]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        if isinstance(current, Terminated):
            return current
        seen.add(id(current))
        pending += [current.__context__, current.__cause__]
    return None


def as_stop(exc: BaseException) -> Terminated | KeyboardInterrupt | None:
    """The stop `exc` is (Ctrl-C, a terminating signal) or was raised while unwinding (an
    OSError from a dead terminal after SIGHUP); None when it is no stop."""
    if isinstance(exc, Terminated | KeyboardInterrupt):
        return exc
    if isinstance(exc, OSError):
        return terminated_in_chain(exc)
    return None


def stop_exit(stop: Terminated | KeyboardInterrupt, kept: str) -> typer.Exit:
    """'stopped by SIGTERM; <kept>' ('interrupted; <kept>' for Ctrl-C) on stderr, and the exit
    of that stop: `kept` says what the command left behind, which only it knows."""
    head = f"stopped by {stop.name}" if isinstance(stop, Terminated) else "interrupted"
    with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
        stderr.print(f"[yellow]{escape(f'{head}; {kept}')}[/]", soft_wrap=True)
    return typer.Exit(stop.exit_code if isinstance(stop, Terminated) else EXIT_INTERRUPTED)


def _stopped(stop: Terminated) -> typer.Exit:
    """A command that says nothing of its own: what it wrote as it went is kept (a sweep's
    finished cells)."""
    return stop_exit(stop, "finished results are kept")
