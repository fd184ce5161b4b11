r"""How often `torchscale profile -- COMMAND` names the right rank and kind in a user's own job,
and how often it names nobody in a balanced one (rates live here, never in a per-run
assert). Measured, 2 gloo ranks on CPU.

The scenarios, each `torchscale profile --warmup-steps 3 --steps 40 --profile-steps 0 -- ...`:
- tuned: examples/own_job/ddp_train.py, with a slow loader on rank 1 (`--slow-rank 1
  --slow-ms 30`: rank 1, input) and balanced; the script the e2e tests and the docs were
  built with;
- held out, never run while the probe or the judge was tuned (benchmarks/own_job_heldout/):
  `sorted_shards.py`, a Transformer on variable-length sequences that the script splits by
  length, so the last rank gets the longest (rank 1, compute), and with `--shuffle` (balanced);
  `remote_shard.py`, an IterableDataset whose rank 1 reads from a slower store (rank 1,
  input); `rank0_checkpoint.py`, whose rank 0 alone saves a checkpoint every 4th optimizer
  step, and `rank0_eval.py`, whose rank 0 alone evaluates every 5th (rank 0, compute, and
  the period); and examples/own_job/accelerate_train.py under `accelerate launch` with a slow
  loader (rank 1, input), when accelerate is installed.
Each run keeps the profile's default traced window after its measured steps, as a user runs
it: the verdict must be the measured steps', whatever the few traced ones hold.
Printed per scenario: right rank and kind (a balanced one: nobody named), with 95 %
Clopper-Pearson intervals, what was named instead, and the load before and after (other work
on the machine makes the rates noise: said, not judged); of the runs named right, how often
rank 0's checkpoint and evaluation were placed in its loop, outside its model's forward and
backward, and how often sorted shards' extra compute was read as more work (not a slower
core) by the calibration the probe times after the measured steps.

    python benchmarks/own_job_rates.py [--repeats 5] [--only LABEL,...]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from straggler_heldout import load, rate

from torchscale.offline.results.documents import read_cell

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples" / "own_job"
HELD_OUT = HERE / "own_job_heldout"
BIN = Path(sys.executable).parent
WARMUP, STEPS = 3, 40
SLOW = ("--slow-rank", "1", "--slow-ms", "30")
# what a run named: (rank, kind, period of its pattern or None, its slow phase or None, the
# calibration's reading of a compute straggler or None), None for nobody, or why it has no
# verdict
Outcome = tuple[int, str, int | None, str | None, str | None] | str | None


@dataclass(frozen=True)
class Scenario:
    label: str
    script: Path
    args: tuple[str, ...]
    # (rank, kind, period: None where any pattern will do); None: balanced, nobody to name
    expected: tuple[int, str, int | None] | None
    held_out: bool
    launcher: str = "torchrun"
    device: str | None = None  # the calibration's reading a compute straggler should get
    phase: str | None = None  # where in the step its work falls, where that is known


SCENARIOS = (
    Scenario("ddp slow loader", EXAMPLES / "ddp_train.py", SLOW, (1, "input", None), False),
    Scenario("ddp balanced", EXAMPLES / "ddp_train.py", (), None, False),
    Scenario(
        "sorted shards",
        HELD_OUT / "sorted_shards.py",
        (),
        (1, "compute", None),
        True,
        device="straggler.more_work",
    ),
    Scenario("shuffled shards", HELD_OUT / "sorted_shards.py", ("--shuffle",), None, True),
    Scenario(
        "remote shard",
        HELD_OUT / "remote_shard.py",
        ("--remote-rank", "1", "--fetch-ms", "25"),
        (1, "input", None),
        True,
    ),
    Scenario(
        "rank 0 checkpoint every 4",
        HELD_OUT / "rank0_checkpoint.py",
        ("--every", "4"),
        (0, "compute", 4),
        True,
        phase="loop",
    ),
    Scenario(
        "rank 0 eval every 5",
        HELD_OUT / "rank0_eval.py",
        ("--every", "5"),
        (0, "compute", 5),
        True,
        phase="loop",
    ),
    Scenario(
        "accelerate slow loader",
        EXAMPLES / "accelerate_train.py",
        SLOW,
        (1, "input", None),
        True,
        launcher="accelerate",
    ),
)
# each script's own length, past the stop at W + N (ddp_train.py: 64 steps in one epoch)
LENGTH = {
    "ddp_train.py": ("--epochs", "1", "--dataset-size", "4096"),
    "sorted_shards.py": ("--steps", "60"),
    "remote_shard.py": ("--steps", "60"),
    "rank0_checkpoint.py": ("--steps", "60"),
    "rank0_eval.py": ("--steps", "60"),
    "accelerate_train.py": ("--max-steps", "60"),
}


def free_port() -> int:
    """`accelerate launch` takes torchrun's port 29500 unless told: one nobody holds now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def launch_line(scenario: Scenario) -> list[str]:
    if scenario.launcher == "torchrun":
        return [str(BIN / "torchrun"), "--nproc-per-node", "2"]
    return [
        str(BIN / "accelerate"), "launch", "--multi_gpu", "--num_processes", "2",
        "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
        "--main_process_port", str(free_port()),
    ]  # fmt: skip


def runnable(scenario: Scenario) -> bool:
    return scenario.launcher != "accelerate" or (BIN / "accelerate").exists()


def named(scenario: Scenario, out: Path) -> Outcome:
    """(rank, kind) the run named, None when it named nobody, or why there is no verdict."""
    argv = [str(BIN / "torchscale"), "profile", "--warmup-steps", str(WARMUP)]
    argv += ["--steps", str(STEPS), "-o", str(out), "--"]
    argv += [*launch_line(scenario), str(scenario.script), *LENGTH[scenario.script.name]]
    argv += scenario.args
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(argv, env=env, cwd=out.parent, capture_output=True, text=True)
    cells = sorted(out.rglob("own_job/cells/*.json"))
    if not cells:
        return f"no result (exit {done.returncode}): {done.stderr.strip()[-200:]}"
    read = read_cell(cells[0])
    diagnosis = read.doc.diagnosis if read.doc is not None else None
    verdict = diagnosis.straggler if diagnosis is not None else None
    if verdict is None:
        return "no straggler verdict"
    if not verdict.named:
        return None
    pattern = verdict.pattern
    period = pattern.period if pattern is not None and pattern.shape == "periodic" else None
    device = verdict.device.code if verdict.device is not None else None
    return (verdict.rank or 0, str(verdict.kind), period, verdict.phase, device)


def right(expected: tuple[int, str, int | None] | None, got: Outcome) -> bool:
    """The run named what the scenario holds: its rank and kind, and its period where it has
    one (nobody, for a balanced one)."""
    if expected is None or not isinstance(got, tuple):
        return got == expected
    return got[:2] == expected[:2] and (expected[2] is None or got[2] == expected[2])


def summary(scenario: Scenario, outcomes: list[Outcome]) -> str:
    hits = sum(1 for o in outcomes if right(scenario.expected, o))
    wanted = "nobody named"
    if scenario.expected is not None:
        rank, kind, period = scenario.expected
        wanted = f"rank {rank}, {kind}" + (f", every {period}th" if period else "")
    others = sorted({str(o) for o in outcomes if not right(scenario.expected, o)})
    line = f"{scenario.label:26} {wanted:26} {rate(hits, len(outcomes))}"
    hit = [o for o in outcomes if isinstance(o, tuple) and right(scenario.expected, o)]
    if scenario.phase is not None:  # of the runs that named it right
        placed = sum(1 for o in hit if o[3] == scenario.phase)
        line += f"; in {scenario.phase} {rate(placed, len(hit))}"
    if scenario.device is not None:
        agreed = sum(1 for o in hit if o[4] == scenario.device)
        line += f"; read as {scenario.device} {rate(agreed, len(hit))}"
    return line + (f"; otherwise: {', '.join(others)}" if others else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", default="", help="comma-separated scenario labels")
    args = parser.parse_args()
    chosen = [s for s in SCENARIOS if not args.only or s.label in args.only.split(",")]
    print(f"load before: {load()}; {args.repeats} runs a scenario, interleaved", flush=True)
    outcomes: dict[str, list[Outcome]] = {s.label: [] for s in chosen}
    with tempfile.TemporaryDirectory(prefix="own-job-rates-") as tmp:
        for repeat in range(args.repeats):
            for index, scenario in enumerate(chosen):
                if not runnable(scenario):
                    continue
                out = Path(tmp) / f"{repeat}-{index}" / "out"
                out.parent.mkdir(parents=True)
                got = named(scenario, out)
                outcomes[scenario.label].append(got)
                print(f"run {repeat + 1} {scenario.label:24} {got}", flush=True)
    print(f"load after: {load()}")
    for held_out in (False, True):
        print("held out (never tuned on):" if held_out else "tuned on:")
        for scenario in chosen:
            if scenario.held_out == held_out:
                seen = outcomes[scenario.label]
                print("  " + (summary(scenario, seen) if seen else f"{scenario.label}: not run"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
