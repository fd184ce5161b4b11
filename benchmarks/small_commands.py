"""How long do torchscale's small commands take, next to a bare Python start in the same run?

Times each command as its own subprocess (what a user waits for: interpreter start, imports,
work, exit), ROUNDS rounds in which every command runs once, in turn (a slow drift of a shared
machine hits all alike), and prints the median and fastest wall time of each, its ratio to the
bare baselines timed in the same rounds (`python -c pass`; `python -c "import typer"`: what any
Typer CLI pays before its first line), to its floor where it has one (the imports it cannot do
without: rich's console, table and panel under the root's `--help`, which is drawn without
Typer; torch under `validate`, whose checks are torch's own), and whether issue 25's targets
hold: `list`, `config show` and, on a node without a GPU, `config init` (auto-detecting this
node) under 1 s, `--help` under 0.3 s. Commands without a target are shown for reference.

`--compare DIR` times the same commands from another source tree too, in the same rounds (a
before/after on a shared machine), e.g. the last commit's:

    git archive HEAD torchscale | tar -x -C /tmp/head

    python benchmarks/small_commands.py [--rounds 7] [--config benchmark_config.yaml] \
        [--slow] [--compare /tmp/head] [--strict]   # --strict: exit 1 when a target is missed
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Command:
    """One timed command: its label, argv after the interpreter, its target (None: none), the
    exit codes that count as a run (`validate` exits 1 when this node fails a check), the
    source tree it imports torchscale from (None: a baseline, no torchscale) and the label of
    the baseline that is its floor (None: none timed)."""

    label: str
    argv: tuple[str, ...]
    target_s: float | None = None
    exit_codes: tuple[int, ...] = (0,)
    source: Path | None = None
    floor: str | None = None


BARE = "python -c pass"
TYPER = "python -c 'import typer'"
RICH = "python -c 'import rich.console, ...'"
TORCH = "python -c 'import torch'"


def baselines(slow: bool) -> list[Command]:
    """Bare starts timed beside the commands: on a shared machine only ratios compare."""
    found = [
        Command(BARE, ("-c", "pass")),
        Command(TYPER, ("-c", "import typer")),
        # what typer's rich help imports on top: the floor under a sub-command's `--help`
        Command(
            "python -c 'import typer.rich_utils'", ("-c", "import typer.main, typer.rich_utils")
        ),
        # what the root's help page is drawn with (torchscale/interfaces/cli/root_help.py): its
        # floor
        Command(
            RICH,
            (
                "-c",
                "import rich.align, rich.columns, rich.console, rich.highlighter, "
                "rich.padding, rich.panel, rich.table, rich.text, rich.theme",
            ),
        ),
    ]
    if slow:  # the floor under `validate`: its checks import torch and ask it
        found.append(Command(TORCH, ("-c", "import torch")))
    return found


def gpu_free_node(source: Path) -> bool:
    """Whether `source`'s torchscale finds no GPU here without torch (then `config init` for
    this node has the 1 s target; where a GPU may be, torch is asked, and imported)."""
    probe = (
        "from torchscale.orchestration.config.hardware import no_gpu_here; "
        "print(no_gpu_here() or '')"
    )
    env = importing_from(source, dict(os.environ))
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env=env,
        cwd=source,  # not this directory's torchscale: `source`'s
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode == 0 and bool(done.stdout.strip())


def commands(config: Path, slow: bool, source: Path = REPO, tag: str = "") -> list[Command]:
    """The small commands, from `source` (the slow ones only with `slow`)."""
    cli = ("-m", "torchscale")
    init_target = 1.0 if gpu_free_node(source) else None
    found = [
        Command("torchscale --help", (*cli, "--help"), 0.3, floor=RICH),
        Command("torchscale --version", (*cli, "--version")),
        Command("torchscale list", (*cli, "list"), 1.0),
        Command("torchscale list --json", (*cli, "list", "--json"), 1.0),
        Command("torchscale config show", (*cli, "config", "show", str(config)), 1.0),
        Command("torchscale config validate", (*cli, "config", "validate", str(config))),
        Command(
            "torchscale config init --hardware cpu", (*cli, "config", "init", "--hardware=cpu")
        ),
        Command("torchscale config init (auto)", (*cli, "config", "init"), init_target),
    ]
    if slow:
        found += [
            Command(
                "torchscale validate --quick --device cpu",
                (*cli, "validate", "--quick", "--device", "cpu"),
                exit_codes=(0, 1),
                floor=TORCH,
            ),
        ]
    return [
        Command(c.label + tag, c.argv, c.target_s, c.exit_codes, source, c.floor) for c in found
    ]


def time_once(command: Command, env: dict[str, str], workdir: Path) -> float:
    """Wall seconds of one run; a failing command stops the benchmark (its time means nothing).
    Runs outside the repository, so `-m torchscale` imports from the command's source tree."""
    if command.source is not None:
        env = importing_from(command.source, env)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *command.argv], env=env, cwd=workdir, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - started
    if done.returncode not in command.exit_codes:
        raise SystemExit(f"{command.label} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return elapsed


def importing_from(source: Path, env: dict[str, str]) -> dict[str, str]:
    """`env` with `source` first on the path: a tree's torchscale wins over the installed one."""
    path = os.pathsep.join(filter(None, [str(source), env.get("PYTHONPATH")]))
    return {**env, "PYTHONPATH": path}


def verdict(command: Command, median: float) -> str:
    """Whether the median meets the command's target (empty without one)."""
    if command.target_s is None:
        return ""
    met = "met" if median < command.target_s else "MISSED"
    return f"target < {command.target_s:g} s: {met}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--config", type=Path, default=REPO / "benchmark_config.yaml")
    parser.add_argument(
        "--slow", action="store_true", help="Also time `config init` (auto) and `validate`."
    )
    parser.add_argument("--compare", type=Path, help="Also time these from another source tree.")
    parser.add_argument("--strict", action="store_true", help="Exit 1 when a target is missed.")
    args = parser.parse_args()
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    config = args.config.resolve()
    todo = baselines(args.slow) + commands(config, args.slow)
    if args.compare is not None:
        todo += commands(config, args.slow, args.compare.resolve(), f" [{args.compare.name}]")
    runs: dict[str, list[float]] = {c.label: [] for c in todo}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for command in todo:
                runs[command.label].append(time_once(command, env, Path(tmp)))
    print(
        f"{args.rounds} rounds in {time.perf_counter() - started:.0f} s on "
        f"{len(os.sched_getaffinity(0))} core(s), load average {os.getloadavg()[0]:.2f} "
        f"at the end; {sys.executable}"
    )
    medians = {label: statistics.median(times) for label, times in runs.items()}
    width = max(len(c.label) for c in todo)
    print(
        f"{'command':{width}} {'median':>8} {'min':>7} {'/ pass':>7} {'/ typer':>8} {'/ floor':>8}"
    )
    missed = 0
    for command in todo:
        median = medians[command.label]
        missed += (
            command.source == REPO and command.target_s is not None and median >= command.target_s
        )
        floor = f"{median / medians[command.floor]:7.2f}x" if command.floor else " " * 8
        print(
            f"{command.label:{width}} {median:7.3f}s {min(runs[command.label]):6.3f}s "
            f"{median / medians[BARE]:6.1f}x {median / medians[TYPER]:7.2f}x {floor}  "
            f"{verdict(command, median)}"
        )
    floors = {c.label: c.floor for c in todo if c.floor and c.source == REPO}
    print("/ floor: " + "; ".join(f"{label} over {floor}" for label, floor in floors.items()))
    if args.strict and missed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
