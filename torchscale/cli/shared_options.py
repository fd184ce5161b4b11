"""Options shared by several commands, declared once (Typer `Annotated` style)."""

from __future__ import annotations

from typing import Annotated

import typer

SetOverrides = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="Override a config value with a dotted key, e.g. --set training.precision=bf16 "
        "(repeatable; the value is read as YAML and type-checked like the file).",
    ),
]

VerbosityFlag = Annotated[
    bool | None,
    typer.Option("--verbose/--quiet", "-v/-q", help="More detail, or only problems."),
]
