"""Options shared by several commands, declared once."""

from __future__ import annotations

import typer

SET_HELP = (
    "Override a config value with a dotted key, e.g. --set training.precision=bf16 "
    "(repeatable; the value is read as YAML and type-checked like the file)."
)


def set_option() -> list[str]:
    """The repeatable `--set KEY=VALUE` option."""
    return typer.Option([], "--set", metavar="KEY=VALUE", help=SET_HELP)  # type: ignore[no-any-return]


def verbosity_option() -> bool | None:
    """`--verbose/--quiet` on a sub-command, as the published interface allows after it."""
    return typer.Option(  # type: ignore[no-any-return]
        None, "--verbose/--quiet", "-v/-q", help="More detail, or only problems."
    )
