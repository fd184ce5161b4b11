"""What the root command offers (its sub-commands, its options, its help text), and its help page
printed without Typer: `torchscale --help` answers in less time than Typer takes to import.

Typer with its rich help formatter costs ~0.3 s of imports before the first line (typer 0.1 s,
typer.rich_utils 0.12 s more: rich.markdown, rich.traceback); rich's console, table and panel
alone take 0.06 s. So the root's help is drawn here with those, the way typer.rich_utils draws
a group's help (the same console settings, environment variables, styles and layout), from the
same facts the Typer app in cli/root.py is built from. tests/test_fast_commands.py holds the
page to Typer's own byte for byte (plain and in colour, at several widths); when a Typer upgrade
changes its layout, that test fails, and this file follows it.

Nothing here imports Typer; rich is imported only to print.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, NamedTuple


class Subcommand(NamedTuple):
    """Where a sub-command is defined (`module:attribute`: a command function or a Typer of
    sub-commands) and the first paragraph of its help, the line `torchscale --help` shows."""

    target: str
    summary: str

    def load(self) -> Any:
        import importlib

        module, _, attribute = self.target.partition(":")
        return getattr(importlib.import_module(module), attribute)


# in the order `torchscale --help` lists them
# in the order a user meets them: check the node, write a config, run, profile, report
SUBCOMMANDS: dict[str, Subcommand] = {
    "validate": Subcommand(
        "torchscale.interfaces.cli.validate_cmd:validate",
        "Check if this node meets the requirements for distributed training (exit 1 if not).",
    ),
    "config": Subcommand(
        "torchscale.interfaces.cli.config_cmd:app",
        "Check, resolve and describe benchmark config files.",
    ),
    "list": Subcommand(
        "torchscale.interfaces.cli.list_cmd:list_catalog",
        "List built-in models with exact parameter counts, strategies, precisions, collectives.",
    ),
    "benchmark": Subcommand(
        "torchscale.interfaces.cli.benchmark_cmd:benchmark",
        "Run throughput/latency tests across model x batch x GPU count x precision.",
    ),
    "profile": Subcommand(
        "torchscale.interfaces.cli.profile_cmd:app",
        "Profile one cell on every rank and find sync stalls and stragglers (or analyse "
        "existing traces: `torchscale profile analyze DIR`).",
    ),
    "comm": Subcommand(
        "torchscale.interfaces.cli.comm_cmd:comm",
        "Collective bandwidth (algbw, busbw) exactly as nccl-tests defines it, with a check.",
    ),
    "report": Subcommand(
        "torchscale.interfaces.cli.report_cmd:app",
        "Turn results into a report: HTML, PDF, Markdown, JSON or terminal (`torchscale report "
        "generate ...` is the same command).",
    ),
}

ROOT_HELP = "Benchmark, profile and report on PyTorch distributed (DDP/FSDP) training."
VERBOSE_HELP = "More detail (--verbose) or only problems (--quiet)."
VERSION_HELP = "Show the version and exit."
HELP_OPTIONS = ("-h", "--help")
HELP_HELP = "Show this message and exit."  # click's own help option's text


class OptionRow(NamedTuple):
    """One line of the Options panel, column by column as typer.rich_utils fills it."""

    long: str
    short: str
    negative_long: str
    negative_short: str
    type: str
    help: str


# the root's options in the order Typer lists them (its callback's, then click's help option)
ROOT_OPTIONS = (
    OptionRow("--verbose", "", "--quiet", "", "<bool>", VERBOSE_HELP),
    OptionRow("--version", "", "", "", "<bool>", VERSION_HELP),
    OptionRow("--help", "-h", "", "", "<bool>", HELP_HELP),
)

# typer.rich_utils' styles, as far as the root's page uses them
_THEME = {
    "option": "bold cyan",
    "switch": "bold green",
    "negative_option": "bold magenta",
    "negative_switch": "bold red",
    "types": "bold yellow",
    "types_sep": "dim",
    "usage": "yellow",
}
_STYLE_USAGE_COMMAND = "bold"
_STYLE_TYPES = "bold yellow"
_STYLE_PANEL_BORDER = "dim"
_STYLE_COMMAND_NAME = "bold cyan"
_TABLE_PADDING = (0, 1)


def program_name(argv0: str | None = None, main: ModuleType | None = None) -> str:
    """The name the usage line shows: `torchscale`, or `python -m torchscale` (click's rule)."""
    main = sys.modules["__main__"] if main is None else main
    path = argv0 or sys.argv[0]
    package = getattr(main, "__package__", None)
    if package in {None, ""} or (
        os.name == "nt"
        and package == ""
        and not Path(path).exists()
        and Path(f"{path}.exe").exists()
    ):
        return Path(path).name
    name = Path(path).stem
    module = str(package) if name == "__main__" else f"{package}.{name}"
    return f"python -m {module.lstrip('.')}"


def answers_without_typer(args: list[str], prog: str) -> bool:
    """Whether `args` ask for what is answered here exactly as Typer would answer: the root's
    help or the version, alone, with no setting that changes how Typer answers (its plain
    click help when TYPER_USE_RICH is set, shell completion when click's completion variable
    is)."""
    complete_var = f"_{prog}_COMPLETE".replace("-", "_").upper()
    return (
        len(args) == 1
        and args[0] in (*HELP_OPTIONS, "--version")
        and "TYPER_USE_RICH" not in os.environ
        and complete_var not in os.environ
    )


def print_root_help(prog: str) -> None:
    """Print the root's help page as typer.rich_utils.rich_format_help draws it, then the empty
    line click echoes after a help page."""
    from rich.align import Align
    from rich.columns import Columns
    from rich.console import Console, Group
    from rich.highlighter import RegexHighlighter
    from rich.padding import Padding
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text
    from rich.theme import Theme

    class OptionHighlighter(RegexHighlighter):  # typer.rich_utils' three highlighters
        highlights: ClassVar[list[str]] = [
            r"(^|\W)(?P<switch>\-\w+)(?![a-zA-Z0-9])",
            r"(^|\W)(?P<option>\-\-[\w\-]+)(?![a-zA-Z0-9])",
            r"(?P<types>\<[^\>]+\>)",
            r"(?P<usage>Usage: )",
        ]

    class NegativeOptionHighlighter(RegexHighlighter):
        highlights: ClassVar[list[str]] = [
            r"(^|\W)(?P<negative_switch>\-\w+)(?![a-zA-Z0-9])",
            r"(^|\W)(?P<negative_option>\-\-[\w\-]+)(?![a-zA-Z0-9])",
        ]

    class TypesHighlighter(RegexHighlighter):
        highlights: ClassVar[list[str]] = [
            r"^(?P<types_sep>(\[|<))",
            r"(?P<types_sep>\|)",
            r"(?P<types_sep>(\]|>))(\.\.\.)?$",
        ]

    highlighter = OptionHighlighter()
    negative = NegativeOptionHighlighter()
    types = TypesHighlighter()

    def markup(text: str) -> Text:
        return highlighter(Text.from_markup(text, style=""))

    force_terminal = (
        True
        if os.getenv("GITHUB_ACTIONS") or os.getenv("FORCE_COLOR") or os.getenv("PY_COLORS")
        else None
    )
    if os.getenv("_TYPER_FORCE_DISABLE_TERMINAL"):
        force_terminal = False
    width = os.getenv("TERMINAL_WIDTH")
    console = Console(
        theme=Theme(_THEME),
        highlighter=highlighter,
        color_system="auto",
        force_terminal=force_terminal,
        width=int(width) if width else None,
    )

    def table(highlight: bool) -> Table:
        return Table(
            highlight=highlight,
            show_header=False,
            expand=True,
            box=None,
            show_lines=False,
            leading=0,
            border_style=None,
            row_styles=None,
            pad_edge=False,
            padding=_TABLE_PADDING,
        )

    def panel(content: Table, title: str) -> Panel:
        return Panel(content, border_style=_STYLE_PANEL_BORDER, title=title, title_align="left")

    usage = f"Usage: {prog} [OPTIONS] COMMAND [ARGS]..."
    console.print(Padding(highlighter(usage), 1), style=_STYLE_USAGE_COMMAND)
    console.print(Padding(Align(Group(markup(ROOT_HELP)), pad=False), (0, 1, 1, 1)))

    options = table(highlight=True)
    for row in ROOT_OPTIONS:
        options.add_row(
            highlighter(row.long),
            highlighter(row.short),
            negative(row.negative_long),
            negative(row.negative_short),
            types(Text(row.type, style=_STYLE_TYPES, overflow="fold")),
            Columns([markup(row.help)]),
        )
    console.print(panel(options, "Options"))

    commands = table(highlight=False)
    commands.add_column(
        style=_STYLE_COMMAND_NAME, no_wrap=True, width=max(len(name) for name in SUBCOMMANDS)
    )
    commands.add_column("Description", justify="left", no_wrap=False, ratio=10)
    for name, command in SUBCOMMANDS.items():
        commands.add_row(Text(name), markup(command.summary))
    console.print(panel(commands, "Commands"))
    print()
