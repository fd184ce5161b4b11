"""Where the commands print: one console for stdout and one for stderr, the lines fitted to
a terminal's width, and how much to say (`Verbosity`, set once from --verbose/--quiet)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from torchscale.interfaces.console.lines import Line, fit_lines

if TYPE_CHECKING:
    from rich.progress import Progress, ProgressColumn

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


def eta_bar(console: Console, quiet: bool, count: ProgressColumn) -> Progress:
    """A progress bar: what runs, the bar, its `count`, the time elapsed and the task's `eta`
    field. Drawn only where it can be redrawn, a terminal (in a log, rich would leave an empty
    line behind it; a log gets lines instead), and gone once stopped."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        count,
        TimeElapsedColumn(),
        TextColumn("{task.fields[eta]}"),
        console=console,
        disable=quiet or not console.is_terminal,
        transient=True,
    )


def print_error_lines(lines: list[str]) -> None:
    for line in lines:
        stderr.print(f"[bold red]error:[/] {escape(line)}")


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
