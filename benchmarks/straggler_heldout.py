r"""Held-out stragglers: does the rule name a rank that stalls every k-th step? Measured.

The scenarios (benchmarks/heldout_plugins.py) were written after the rule and are never used
to tune it: one rank of 2 burns real CPU work for STALL ms every k-th step (k in 2..8), plus
balanced runs. Each case runs `torchscale profile` (10 traced steps) and `torchscale
benchmark` (one cell, --steps measured steps) in its own process. Printed: per k, the runs
that named the right rank (and with the pattern 'every k-th step'), balanced runs that named
nobody, each with its 95 % Clopper-Pearson interval, and the load before and after (other
work on the machine makes the rates noise: said, not judged).

    python benchmarks/straggler_heldout.py [--every 2,3,4,6,8] [--stall-ms 30] \
        [--repeats 2] [--steps 48] [--balanced 4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from scipy.stats import binomtest

HERE = Path(__file__).resolve().parent
CONFIG = """experiment_name: heldout
device: cpu
models: ["heldout_plugins:periodic"]
batch_sizes: [32]
gpu_counts: [2]
measurement:
  steps: {steps}
  repeats: 1
"""


def straggler(command: str, every: int, stall_ms: float, steps: int, out: Path) -> dict:
    """The run's stored straggler verdict (diagnosis.straggler), {} when none was written."""
    env = {
        **os.environ,
        "PYTHONPATH": str(HERE),
        "HELDOUT_EVERY": str(every),
        "HELDOUT_STALL_MS": str(stall_ms),
    }
    if command == "profile":
        argv = [
            "torchscale",
            "profile",
            "--gpus",
            "2",
            "--device",
            "cpu",
            "--model",
            "heldout_plugins:periodic",
            "--steps",
            "16",
            "--profile-steps",
            "10",
            "-o",
            str(out),
        ]
        found = "analysis.json"
    else:
        config = out / "config.yaml"
        out.mkdir(parents=True, exist_ok=True)
        config.write_text(CONFIG.format(steps=steps))
        argv = ["torchscale", "benchmark", "-c", str(config), "-o", str(out)]
        found = "cells/*.json"
    subprocess.run(argv, env=env, capture_output=True, timeout=600, check=False)
    for path in sorted(out.rglob(found)):
        diagnosis = json.loads(path.read_text()).get("diagnosis") or {}
        return diagnosis.get("straggler") or {}
    return {}


def rate(hits: int, n: int) -> str:
    if n == 0:
        return "no runs"
    ci = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="exact")
    return f"{hits}/{n} [{ci.low:.0%}, {ci.high:.0%}]"


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", default="2,3,4,6,8")
    parser.add_argument("--stall-ms", type=float, default=30.0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--steps", type=int, default=48)
    parser.add_argument("--balanced", type=int, default=4)
    args = parser.parse_args()
    print(f"load before: {load()}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="heldout-") as tmp:
        cases = [(k, args.stall_ms) for k in map(int, args.every.split(","))]
        cases = cases * args.repeats + [(0, 0.0)] * args.balanced
        for index, (every, stall) in enumerate(cases):
            for command in ("profile", "benchmark"):
                out = Path(tmp) / f"{index}-{command}"
                verdict = straggler(command, every, stall, args.steps, out)
                rows.append((every, command, verdict))
                said = verdict.get("summary", "no verdict written")
                print(f"k={every} {command:9} {said[:150]}", flush=True)
    print(f"load after: {load()}")
    for command in ("profile", "benchmark"):
        for every in sorted({k for k, _, _ in rows}):
            runs = [v for k, c, v in rows if k == every and c == command]
            if every == 0:
                clean = sum(1 for v in runs if v and not v.get("named"))
                print(f"{command:9} balanced: named nobody {rate(clean, len(runs))}")
                continue
            right = sum(1 for v in runs if v.get("named") and v.get("rank") == 1)
            nth = {2: "2nd", 3: "3rd"}.get(every, f"{every}th")
            said = sum(1 for v in runs if f"every {nth} step" in (v.get("pattern") or ""))
            print(
                f"{command:9} every {nth}: right rank {rate(right, len(runs))}, "
                f"pattern said {rate(said, len(runs))}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
