"""The root command as Typer builds it, and what it offers (its sub-commands, its help text).
Sub-commands import their heavy dependencies lazily, so no command pays for another's (no
torch, pandas, plotly or weasyprint at start-up).

Typer turns a command function into a click command by inspecting its signature, which took
longer than the rest of `--help`; so the root group (LazyCommands) imports a sub-command's
module and builds its command only when it runs. The root's help lists each one by the help
line stored in SUBCOMMANDS (tests/interfaces/test_small_commands.py holds it to the command's own).
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Annotated, Any, NamedTuple

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

try:  # typer >= 0.26 carries its own copy of click; older ones use click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_errors  # type: ignore[no-redef]

from torchscale import __version__
from torchscale.interfaces.console.streams import Verbosity, print_error_lines


class Subcommand(NamedTuple):
    """Where a sub-command is defined (`module:attribute`: a command function or a Typer of
    sub-commands) and the first paragraph of its help, the line `torchscale --help` shows."""

    target: str
    summary: str

    def load(self) -> Any:
        import importlib

        module, _, attribute = self.target.partition(":")
        return getattr(importlib.import_module(module), attribute)


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
        "Profile one cell on every rank and find sync stalls and stragglers, or your own "
        "launch line (`torchscale profile -- torchrun ... train.py`; existing traces: "
        "`torchscale profile analyze DIR`).",
    ),
    "comm": Subcommand(
        "torchscale.interfaces.cli.comm_cmd:comm",
        "Collective bandwidth (algbw, busbw) exactly as nccl-tests defines it, with a check.",
    ),
    "predict": Subcommand(
        "torchscale.interfaces.cli.predict_cmd:predict",
        "Forecast step time, throughput and scaling efficiency at unmeasured GPU counts.",
    ),
    "report": Subcommand(
        "torchscale.interfaces.cli.report_cmd:app",
        "Turn results into a report: HTML, PDF, Markdown, JSON or terminal (`torchscale report "
        "generate ...` is the same command).",
    ),
}

ROOT_HELP = "Benchmark, profile and report on PyTorch distributed (DDP/FSDP) training."
HELP_OPTIONS = ("-h", "--help")


class BuiltOnUse(MutableMapping[str, Any]):
    """Sub-command name -> its click command, built on first access (what click and anything
    walking the command tree read as `group.commands`)."""

    def __init__(self) -> None:
        self.built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self.built:
            if name not in SUBCOMMANDS:
                raise KeyError(name)
            self.built[name] = build_subcommand(name)
        return self.built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self.built[name] = command

    def __delitem__(self, name: str) -> None:
        del self.built[name]

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(SUBCOMMANDS), **dict.fromkeys(self.built)})

    def __len__(self) -> int:
        return len(set(SUBCOMMANDS) | set(self.built))


class LazyCommands(TyperGroup):
    """The root group: its sub-commands are built when used; its own help lists stand-ins
    (name and help line, all that the listing reads) for those not built yet."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self._subcommands = BuiltOnUse()
        self.commands = self._subcommands
        self._listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # the names alone: building each is what start-up avoids

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """A stand-in while the help lists commands; the real command otherwise."""
        if self._listing and cmd_name in SUBCOMMANDS and cmd_name not in self._subcommands.built:
            return TyperCommand(cmd_name, help=SUBCOMMANDS[cmd_name].summary)
        return super().get_command(ctx, cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Click's main, with a bad option or value said in one line ("error: ... (did you mean
        --output-dir?)", exit 2) instead of Typer's usage block and boxed error."""
        try:
            value = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except (click_errors.ClickException, typer.Abort) as exc:
            if not standalone_mode:
                raise
            # an Abort is the end of input at a prompt (Ctrl-C arrives as exit code 130)
            usage = exc if isinstance(exc, click_errors.ClickException) else None
            print_error_lines([usage_error_line(usage) if usage else "aborted: no input"])
            raise SystemExit(usage.exit_code if usage else 1) from None
        if standalone_mode:
            raise SystemExit(value if isinstance(value, int) else 0)
        return value


def usage_error_line(exc: click_errors.ClickException) -> str:
    """One line: which command, what is wrong, the likely fix, where the help is."""
    if isinstance(exc, click_errors.NoSuchOption) and exc.possibilities:
        guesses = " or ".join(sorted(exc.possibilities))
        message = f"No such option: {exc.option_name} (did you mean {guesses}?)"
    elif isinstance(exc, click_errors.NoSuchOption):
        message = f"No such option: {exc.option_name}"
    else:
        message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return message
    return f"{ctx.command_path}: {message} (see '{ctx.command_path} -h')"


def build_subcommand(name: str) -> Any:
    """The click command typer builds for sub-command `name`, as if registered on the root."""
    target = SUBCOMMANDS[name].load()
    single = typer.Typer(
        add_completion=False,
        pretty_exceptions_short=app.pretty_exceptions_short,
        rich_markup_mode=app.rich_markup_mode,
    )
    if not isinstance(target, typer.Typer):  # a function: typer builds one command alone
        # with its own command class if it names one (shared_options.takes_dotted_overrides)
        single.command(name, cls=getattr(target, "command_class", None))(target)
        return typer.main.get_command(single)
    single.add_typer(target, name=name)
    group = typer.main.get_command(single)
    assert isinstance(group, TyperGroup)
    return group.commands[name]


app = typer.Typer(
    name="torchscale",
    help=ROOT_HELP,
    cls=LazyCommands,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": list(HELP_OPTIONS)},
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
