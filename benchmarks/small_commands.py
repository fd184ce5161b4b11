"""How long do torchscale's small commands and its answers to a mistake take, next to a bare
Python start in the same run?

Times each command as its own subprocess (what a user waits for: interpreter start, imports,
work, exit), ROUNDS rounds in which every command runs once, in turn (a slow drift of a shared
machine hits all alike), and prints the median and fastest wall time of each, its ratio to the
bare baselines timed in the same rounds (`python -c pass`; `python -c "import typer"`: what any
Typer CLI pays before its first line), to its floor where it has one (the imports it cannot do
without: Typer's rich help under `--help`; torch under `validate`, whose checks are torch's
own), and whether the targets hold: `--help` under 0.5 s; `list`, `config show` and, on a node
without a GPU, `config init` (auto-detecting this node) under 1 s; each mistake (a missing or
bad config, a bad option, an unwritable output folder, a missing traces folder) answered in
one line under 1 s; a 24-cell `benchmark --dry-run` under 3 s. The load average is printed
before and after (only ratios compare on a shared machine). Commands without a target are shown
for reference.

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
TYPER_HELP = "python -c 'import typer.rich_utils'"
# the floor under a dry run, what no dry run goes under with the design's libraries: a Typer
# command with the benchmark command's 9 options (Typer makes a pydantic adapter for each)
# that opens rich's console and reads the config through torchscale's schema; no planning,
# no printing
DRY_RUN_FLOOR = "Typer command + config read"
DRY_RUN_FLOOR_SCRIPT = """
from pathlib import Path
from typing import Annotated, Optional
import typer
app = typer.Typer()
@app.command()
def benchmark(
    config: Annotated[Optional[Path], typer.Option("--config", "-c")] = None,
    output_dir: Annotated[Path, typer.Option("--output-dir", "-o")] = Path("results"),
    overrides: Annotated[Optional[list[str]], typer.Option("--set")] = None,
    dry_run: bool = False, resume: bool = False, fail_fast: bool = False,
    status: Annotated[Optional[Path], typer.Option("--status")] = None,
    cancel: Annotated[Optional[Path], typer.Option("--cancel")] = None,
    verbose: Annotated[bool, typer.Option("--verbose/--quiet", "-v/-q")] = False,
) -> None:
    import rich.console
    from torchscale.orchestration.config import load_config
    rich.console.Console(stderr=True)
    load_config(config, overrides or [])
@app.command()
def other() -> None: ...
app()
"""
TORCH = "python -c 'import torch'"

ERROR_TARGET_S = 1.0  # a mistake is answered within a second
DRY_RUN_TARGET_S = 3.0  # a 24-cell dry run
HELP_TARGET_S = 0.5
# a 24-cell sweep (3 models x 2 batch sizes x 1-2 ranks x 2 precisions) on this node's devices
DRY_RUN_CONFIG = """\
experiment_name: dry24
models: [tiny-mlp, tiny-gpt2, gpt2]
batch_sizes: [16, 32]
gpu_counts: [1, 2]
training:
  precision: [fp32, bf16]
"""
BAD_CONFIG = "experiment_name: bad\nmodel: [tiny-mlp]\n"  # an unknown key


def baselines(slow: bool) -> list[Command]:
    """Bare starts timed beside the commands: on a shared machine only ratios compare."""
    found = [
        Command(BARE, ("-c", "pass")),
        Command(TYPER, ("-c", "import typer")),
        # what typer's rich help imports on top: the floor under any `--help`
        Command(TYPER_HELP, ("-c", "import typer.main, typer.rich_utils")),
    ]
    if slow:  # the floor under `validate`: its checks import torch and ask it
        found.append(Command(TORCH, ("-c", "import torch")))
    return found


def input_paths(scratch: Path) -> dict[str, Path]:
    """Where the inputs of the mistakes and the dry run lie in `scratch` (`write_inputs`)."""
    return {
        "dry24": scratch / "dry24.yaml",  # the 24-cell config
        "bad": scratch / "bad.yaml",  # a config with an unknown key
        "blocker": scratch / "a-file",  # a plain file: no output folder can be made under it
        "missing": scratch / "missing",  # nothing there
    }


def write_inputs(scratch: Path) -> dict[str, Path]:
    """The files the mistakes and the dry run read, written to `scratch`."""
    inputs = input_paths(scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    inputs["dry24"].write_text(DRY_RUN_CONFIG, encoding="utf-8")
    inputs["bad"].write_text(BAD_CONFIG, encoding="utf-8")
    inputs["blocker"].write_text("not a folder\n", encoding="utf-8")
    return inputs


def mistakes(config: Path, scratch: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(label, torchscale's arguments) of each mistake that must be answered in one line with
    exit code 2, reading the inputs `write_inputs(scratch)` wrote
    (tests/interfaces/test_cli_fast_errors.py
    runs the same list and checks what each imports)."""
    inputs = input_paths(scratch)
    missing, blocked = str(inputs["missing"]), str(inputs["blocker"] / "results")
    bench = ("benchmark", "-c", str(config))
    return [
        ("benchmark: missing config", ("benchmark", "-c", f"{missing}.yaml")),
        ("benchmark: bad config", ("benchmark", "-c", str(inputs["bad"]))),
        ("benchmark: bad option", (*bench, "--bogus")),
        ("benchmark: unwritable -o", (*bench, "-o", blocked)),
        ("benchmark --dry-run: unwritable -o", (*bench, "-o", blocked, "--dry-run")),
        ("comm: bad --ops", ("comm", "--ops", "all_reduse", "--device", "cpu")),
        ("comm: unwritable -o", ("comm", "--device", "cpu", "-o", blocked)),
        ("validate --level perf: unwritable -o", ("validate", "--level", "perf", "-o", blocked)),
        ("profile analyze: missing folder", ("profile", "analyze", missing)),
        ("config validate: missing file", ("config", "validate", f"{missing}.yaml")),
    ]


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


def commands(
    config: Path, slow: bool, scratch: Path, source: Path = REPO, tag: str = ""
) -> list[Command]:
    """The small commands, the mistakes and the 24-cell dry run, from `source` (the slow ones
    only with `slow`); their input files are written to `scratch`."""
    cli = ("-m", "torchscale")
    init_target = 1.0 if gpu_free_node(source) else None
    dry24 = write_inputs(scratch)["dry24"]
    found = [
        Command("torchscale --help", (*cli, "--help"), HELP_TARGET_S, floor=TYPER_HELP),
        Command("torchscale --version", (*cli, "--version")),
        Command("torchscale list", (*cli, "list"), 1.0),
        Command("torchscale list --json", (*cli, "list", "--json"), 1.0),
        Command("torchscale config show", (*cli, "config", "show", str(config)), 1.0),
        Command("torchscale config validate", (*cli, "config", "validate", str(config))),
        Command(
            "torchscale config init --hardware cpu", (*cli, "config", "init", "--hardware=cpu")
        ),
        Command("torchscale config init (auto)", (*cli, "config", "init"), init_target),
        *(
            Command(f"error: {label}", (*cli, *args), ERROR_TARGET_S, exit_codes=(2,))
            for label, args in mistakes(config, scratch)
        ),
        Command(
            DRY_RUN_FLOOR,
            ("-c", DRY_RUN_FLOOR_SCRIPT, "benchmark", "-c", str(dry24), "--dry-run"),
        ),
        Command(
            "benchmark --dry-run (24 cells)",
            (*cli, "benchmark", "-c", str(dry24), "-o", str(scratch / "results"), "--dry-run"),
            DRY_RUN_TARGET_S,
            floor=DRY_RUN_FLOOR,
        ),
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
    # a floor timed among them is the one from the same tree
    own = {c.label for c in found}
    return [
        Command(
            c.label + tag,
            c.argv,
            c.target_s,
            c.exit_codes,
            source,
            c.floor + tag if c.floor in own else c.floor,
        )
        for c in found
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


def _load(averages: tuple[float, float, float]) -> str:
    return " ".join(f"{value:.2f}" for value in averages)


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
    load_before = os.getloadavg()
    runs: dict[str, list[float]] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "inputs"
        todo = baselines(args.slow) + commands(config, args.slow, scratch)
        if args.compare is not None:
            compare = args.compare.resolve()
            todo += commands(config, args.slow, scratch, compare, f" [{args.compare.name}]")
        runs = {c.label: [] for c in todo}
        for _ in range(args.rounds):
            for command in todo:
                runs[command.label].append(time_once(command, env, Path(tmp)))
    print(
        f"{args.rounds} rounds in {time.perf_counter() - started:.0f} s on "
        f"{len(os.sched_getaffinity(0))} core(s); load average (1, 5, 15 min) "
        f"{_load(load_before)} before, {_load(os.getloadavg())} after; {sys.executable}"
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
