"""What every command shares: turning errors and stops into exit codes (the consoles and the
verbosity they print by are `console/streams.py`'s)."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer
from rich.markup import escape

from torchscale.contracts.errors import TorchScaleError
from torchscale.contracts.signals import Terminated, terminate_on_signals
from torchscale.interfaces.console.streams import print_error_lines, stderr

P = ParamSpec("P")
R = TypeVar("R")

EXIT_INTERRUPTED = 130
# what a stopped command that says nothing of its own left: what it wrote as it went
KEPT = "finished results are kept"


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
        except (Terminated, OSError) as exc:
            stop = as_stop(exc)
            if stop is None:
                raise
            raise stop_exit(stop, KEPT) from None

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


def stop_exit(
    stop: Terminated | KeyboardInterrupt, kept: str, during: str | None = None
) -> typer.Exit:
    """'stopped by SIGTERM; <kept>' ('interrupted; <kept>' for Ctrl-C) on stderr, and the exit
    of that stop: `kept` says what the command left behind, `during` what it cut short ('cell
    2 of 8 (tiny-mlp b8 x2 fp32 ddp)'), which only it knows."""
    head = f"stopped by {stop.name}" if isinstance(stop, Terminated) else "interrupted"
    head += f" during {during}" if during else ""
    with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
        stderr.print(f"[yellow]{escape(f'{head}; {kept}')}[/]", soft_wrap=True)
    return typer.Exit(stop.exit_code if isinstance(stop, Terminated) else EXIT_INTERRUPTED)
