"""Options shared by several commands, declared once (Typer `Annotated` style), and the one
command class that accepts the published override grammar (`--training.precision=bf16`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperCommand, TyperOption

F = TypeVar("F", bound=Callable[..., Any])

SET_OPTION = "--set"
SetOverrides = Annotated[
    list[str] | None,
    typer.Option(
        SET_OPTION,
        metavar="KEY=VALUE",
        help="Override a config value with a dotted key, e.g. --set training.precision=bf16, "
        "or --training.precision=bf16 as in the published interface (repeatable; the value "
        "is read as YAML and type-checked like the file).",
    ),
]

VerbosityFlag = Annotated[
    bool | None, typer.Option("--verbose/--quiet", "-v/-q", help="More detail, or only problems.")
]
ExperimentName = Annotated[str, typer.Option(help="Experiment name (results sub-directory).")]

_NUMBER = re.compile(r"^-\.?\d")  # a negative number is a value, not an option


class DottedOverrides(TyperCommand):
    """A command that takes `--a.b=VALUE` and `--a.b VALUE` (the published TorchScale
    override grammar) as `--set a.b=VALUE`, so both reach the one override path with the same
    type checks and messages. Only a long flag with a dot in its name is an override: a bare
    unknown `--foo` stays click's usage error (exit 2)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, as_set_options(args, self._value_options()))

    def _value_options(self) -> set[str]:
        """This command's own flags that take a value (their value is never an override)."""
        names: set[str] = set()
        for param in self.params:
            if isinstance(param, TyperOption) and not param.is_flag and not param.count:
                names.update(param.opts)
        return names


def as_set_options(args: list[str], value_options: set[str]) -> list[str]:
    """`args` with each `--a.b=v` / `--a.b v` written `--set=--a.b=v` (the `--` kept, so a
    problem is reported as the user wrote it); a dotted flag with no value is passed on as
    `--set=--a.b`, which the override parser rejects in one line."""
    out: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":  # the end of options: the rest is not ours to read
            out += args[index - 1 :]
            break
        if arg in value_options and index < len(args):
            out += [arg, args[index]]
            index += 1
            continue
        name, equals, _ = arg.partition("=")
        if not (name.startswith("--") and "." in name[2:] and name not in value_options):
            out.append(arg)
            continue
        if not equals and index < len(args) and _is_value(args[index]):
            arg = f"{arg}={args[index]}"
            index += 1
        out.append(f"{SET_OPTION}={arg}")
    return out


def _is_value(arg: str) -> bool:
    return not arg.startswith("-") or bool(_NUMBER.match(arg))


def takes_dotted_overrides(command: F) -> F:
    """Mark a command function for the root to build with `DottedOverrides` (read by
    `torchscale.interfaces.cli.root.build_subcommand`)."""
    setattr(command, "command_class", DottedOverrides)  # noqa: B010 (a function attribute)
    return command
