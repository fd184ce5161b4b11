"""The programs torchrun starts besides the cell worker: the collective sweep (`comm`), the
smoke test, `validate --level perf` and `--level burn`, and the compile probe's child process.

Each torchrun program is a body handed to one harness (harness.py), which owns what every rank
does around its work: the prelude before torch is imported, the process group, gathering,
rank 0's atomic write and the teardown. torchrun starts them all through one entry,
`python -m torchscale.rank.programs <name> ARGS` (__main__.py). This package's own module
imports nothing heavy: the host reads the entry's name and the programs' names here.
"""

from __future__ import annotations

# what the host puts after `-m`; the program's name is the first argument after it
ENTRY = __name__
# program name -> the module whose PROGRAM the harness runs
PROGRAMS: dict[str, str] = {
    "comm": f"{__name__}.comm",
    "smoke": f"{__name__}.smoke",
    "perf": f"{__name__}.perf",
    "burn_in": f"{__name__}.burn_in",
}


def entry_args(program: str, args: list[str]) -> list[str]:
    """The arguments after `-m ENTRY` that start `program` with `args`."""
    if program not in PROGRAMS:
        raise ValueError(f"unknown rank program {program!r}; known: {sorted(PROGRAMS)}")
    return [program, *args]
