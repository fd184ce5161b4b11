"""The programs torchrun starts besides the cell worker, by name: the host puts
`-m ENTRY <name> ARGS` on each rank's command line (the collective sweep, the smoke test,
`validate --level perf` and `--level burn`); rank/programs/__main__.py runs the named module's
PROGRAM on the harness. Names only, so the host never imports the rank side to start it."""

from __future__ import annotations

# what the host puts after `-m`; the program's name is the first argument after it
ENTRY = "torchscale.rank.programs"
# program name -> the module whose PROGRAM the harness runs
PROGRAMS: dict[str, str] = {
    "comm": f"{ENTRY}.comm",
    "smoke": f"{ENTRY}.smoke",
    "perf": f"{ENTRY}.perf",
    "burn_in": f"{ENTRY}.burn_in",
}


def entry_args(program: str, args: list[str]) -> list[str]:
    """The arguments after `-m ENTRY` that start `program` with `args`."""
    if program not in PROGRAMS:
        raise ValueError(f"unknown rank program {program!r}; known: {sorted(PROGRAMS)}")
    return [program, *args]
