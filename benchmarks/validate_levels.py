"""How long does `torchscale validate --level perf` (and a short `burn`) take on this machine,
next to the basic level timed in the same rounds?

Each level runs as its own subprocess (what a user waits for), ROUNDS rounds taking turns so a
slow drift of a shared machine hits all alike; prints the median and fastest wall time of each
and its ratio to `validate --quick` (the checks alone, torch's import included), and, from the
perf run's own JSON, how its time splits: the matmul search's budget per dtype is the knob
(`--budget`), the rest is memory, host links and the comm sweep.

    python benchmarks/validate_levels.py [--rounds 3] [--device cpu] [--burn 10s]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(argv: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return elapsed, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--burn", default="10s", help="the burn level's --duration")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="validate-levels-"))
    base = [sys.executable, "-m", "torchscale", "validate", "--device", args.device, "--quick"]
    levels = {
        "basic (--quick)": base,
        "perf": [*base, "--level", "perf", "-o", str(out), "--json"],
        f"burn {args.burn}": [*base, "--level", "burn", "--duration", args.burn, "-o", str(out)],
    }
    times: dict[str, list[float]] = {name: [] for name in levels}
    perf_json = ""
    for round_ in range(args.rounds):
        for name, argv in levels.items():
            seconds, stdout = timed(argv)
            times[name].append(seconds)
            if name == "perf":
                perf_json = stdout
        print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    floor = statistics.median(times["basic (--quick)"])
    print(f"{'level':<18} {'median s':>9} {'fastest s':>10} {'x basic':>8}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<18} {median:>9.1f} {min(values):>10.1f} {median / floor:>8.1f}")
    report = json.loads(perf_json)
    budgets = [c for c in report["measurements"] if c["check"].startswith("matmul.") and c["value"]]
    print(
        f"perf measured {len(report['measurements'])} figures; matmul searched for "
        f"{len(budgets)} dtype(s) (the budget per dtype is --budget)"
    )


if __name__ == "__main__":
    main()
