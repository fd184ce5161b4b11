"""A `jobs:` row's command as the sweep reads it (docs/own-job.md, "Sweeps of your job"): the
placeholders the matrix fills into it ({gpus}, {batch}, {precision}), and how it is started at
each size: a `python SCRIPT ...` or `python -m MODULE ...` line is launched by torchscale's own
torchrun, as cells are; a line naming {gpus} (`torchrun --nproc-per-node {gpus} train.py`) is
run as given, {gpus} filled. Standard library only: the config's validation reads it.
"""

from __future__ import annotations

import itertools
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal

PLACEHOLDERS = ("gpus", "batch", "precision")
SPELLED = ", ".join(f"{{{name}}}" for name in PLACEHOLDERS)
_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")
BatchScope = Literal["per_rank", "global"]


def _written(field: str, spec: str | None, conversion: str | None) -> str:
    """A replacement field as the user wrote it: '{gpus!r:3}'."""
    converted = f"!{conversion}" if conversion else ""
    return "{" + field + converted + (f":{spec}" if spec else "") + "}"


def placeholders(argv: Sequence[str]) -> frozenset[str]:
    """The placeholders the command names, or ValueError in one line: a brace that opens no
    placeholder, or a placeholder the matrix does not fill (a literal brace is written twice,
    as in Python's str.format)."""
    found: set[str] = set()
    for index, arg in enumerate(argv):
        try:
            fields = list(string.Formatter().parse(arg))
        except ValueError as exc:
            raise ValueError(
                f"argument {index} {arg!r}: {exc} (the matrix fills {SPELLED}; write a "
                "literal brace twice: {{ or }})"
            ) from None
        for _, field, spec, conversion in fields:
            if field is None:
                continue
            if field not in PLACEHOLDERS or spec or conversion:
                raise ValueError(
                    f"argument {index} {arg!r}: unknown placeholder "
                    f"{_written(field, spec, conversion)}: the matrix fills {SPELLED} (write a "
                    "literal brace twice: {{ or }})"
                )
            found.add(field)
    return frozenset(found)


def job_label(argv: Sequence[str]) -> str:
    """The job's name as results show it: its script ('train.py'), else the module after
    -m, else the program's name."""
    for arg in argv[1:]:
        if arg.endswith(".py"):
            return PurePath(arg).name
    for flag, value in itertools.pairwise(argv):
        if flag == "-m":
            return value
    return PurePath(argv[0]).name if argv else "job"


def is_python_line(argv: Sequence[str]) -> bool:
    """A line whose program is a Python interpreter (`python`, `python3.12`, a venv's path)."""
    return bool(argv) and bool(_PYTHON.match(PurePath(argv[0]).name))


def wrapped_line(argv: Sequence[str]) -> bool:
    """True where torchscale's torchrun starts the command at each size: a python line that
    leaves the world size to torchscale (names no {gpus}); a line naming {gpus} is run as
    given (`python spawn.py --procs {gpus}` starts its processes itself)."""
    return is_python_line(argv) and "gpus" not in placeholders(argv)


def line_problem(argv: Sequence[str]) -> str | None:
    """Why the command cannot be swept (one line), or None: its placeholders, then how it
    takes the world size ({gpus} in the line, or a python line torchscale launches)."""
    if "gpus" in placeholders(argv):
        return None
    if not is_python_line(argv):
        return (
            "names neither a python script (torchscale's torchrun then starts it at each of "
            "gpu_counts) nor {gpus} (where your launch line takes the world size, e.g. "
            "torchrun --nproc-per-node {gpus} train.py)"
        )
    rest = argv[1:]
    if not rest or (rest[0] == "-m" and len(rest) < 2):
        return "a python line names no script: python SCRIPT ... or python -m MODULE ..."
    if rest[0].startswith("-") and rest[0] != "-m":
        return (
            f"python option {rest[0]!r} before the script: torchrun starts the script "
            "without interpreter options (set PYTHON* variables in launcher.env, or give "
            "a launch line with {gpus})"
        )
    return None


@dataclass(frozen=True)
class JobLine:
    """One job cell's command: the row's with the matrix's values filled, and how it starts."""

    name: str  # the row's name: the job's label in results
    argv: tuple[str, ...]  # the row's command, placeholders filled
    wrapped: bool  # torchscale's torchrun starts it at the cell's world size (wrapped_line)
    named: frozenset[str]  # the placeholders the row's command names
    batch_scope: BatchScope  # what {batch} is: per rank, or the global batch of a step

    def python_parts(self) -> tuple[str, str, bool, list[str]]:
        """(interpreter, script or module, is a script, its arguments) of a python line."""
        interpreter, first, *rest = self.argv
        if first == "-m":
            return interpreter, rest[0], False, rest[1:]
        return interpreter, first, True, rest


def filled(argv: Sequence[str], values: Mapping[str, object]) -> tuple[str, ...]:
    """The command with each placeholder replaced by its value (`values` has every name)."""
    return tuple(arg.format_map({k: str(v) for k, v in values.items()}) for arg in argv)
