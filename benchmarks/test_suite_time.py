"""How long does the README's test command take here, and was the machine quiet while it ran?

Runs the fast suite (`python -m pytest -q -n 2`, the README's command: slow tests left out) as a
subprocess, once, and prints its wall time with the load average and the core count before and
after. A timing taken while the load is above the core count (the suite's own workers and any
hogs asked for aside) is other work's as much as the suite's, and is printed as "beside other
work: noise" instead of being judged against the targets (3 minutes on 2 quiet cores; 8 minutes
beside four CPU hogs, run with --hogs 4). Nothing is asserted: this is a benchmark, not a test.
Optionally times the answers to a mistake too (benchmarks/small_commands.py) in the same run.

    python benchmarks/test_suite_time.py [--hogs 4] [--collect] [--small-commands] \
        [--log suite.log] [-- <more pytest arguments, e.g. --durations=30>]

--hogs N starts N busy Python loops beside the suite (and stops them after), as the target
"beside four CPU hogs" asks; --collect also times `pytest --collect-only -q` alone (what each
pytest-xdist worker pays before its first test).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FAST_SUITE = ("-m", "pytest", "-q", "-n", "2")
QUIET_TARGET_S = 180.0
HOGS_TARGET_S = 480.0
WORKERS = 2


def load_1m() -> float:
    return os.getloadavg()[0]


def cores() -> int:
    return os.cpu_count() or 1


def timed(argv: list[str], log: Path | None = None) -> tuple[float, int, str]:
    """Wall seconds, exit code and the last line of output of one command run in the repo;
    its whole output goes to `log` when one is given."""
    started = time.perf_counter()
    run = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - started
    output = run.stdout + run.stderr
    if log is not None:
        log.write_text(output, encoding="utf-8")
    lines = [line for line in output.splitlines() if line.strip()]
    return wall, run.returncode, lines[-1] if lines else ""


def start_hogs(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop_hogs(hogs: list[subprocess.Popen[bytes]]) -> None:
    for hog in hogs:
        hog.kill()
    for hog in hogs:
        hog.wait()


def verdict(wall_s: float, load_before: float, load_after: float, hogs: int) -> str:
    """The target met or missed, or noise where other work ran: a load above the core count
    before the start (the hogs asked for aside), or above it by more than the suite's own two
    workers at the end."""
    other_before = load_before - hogs
    other_after = load_after - hogs - WORKERS
    if max(other_before, other_after) > cores():
        busiest = max(load_before, load_after)
        return f"beside other work: noise (load {busiest:.1f} on {cores()} cores)"
    target = HOGS_TARGET_S if hogs else QUIET_TARGET_S
    met = "met" if wall_s <= target else "missed"
    return f"target {target:.0f} s: {met}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hogs", type=int, default=0, help="busy loops to run beside the suite")
    parser.add_argument("--collect", action="store_true", help="also time --collect-only")
    parser.add_argument("--small-commands", action="store_true", help="also time the mistakes")
    parser.add_argument("--log", type=Path, help="write the suite's whole output here")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args()

    print(f"{cores()} cores; PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE')}")
    if args.collect:
        before = load_1m()
        wall, code, last = timed([sys.executable, "-m", "pytest", "--collect-only", "-q"])
        print(f"collect-only: {wall:.1f} s (exit {code}), load {before:.2f} -> {load_1m():.2f}")
        print(f"  {last}")

    hogs = start_hogs(args.hogs)
    try:
        before = load_1m()
        wall, code, last = timed([sys.executable, *FAST_SUITE, *args.pytest_args], args.log)
        after = load_1m()
    finally:
        stop_hogs(hogs)
    beside = f" beside {args.hogs} CPU hogs" if args.hogs else ""
    print(f"fast suite{beside}: {wall:.0f} s ({wall / 60:.1f} min), exit {code}")
    print(f"  {last}")
    print(f"  load (1 min) {before:.2f} before, {after:.2f} after")
    print(f"  {verdict(wall, before, after, args.hogs)}")

    if args.small_commands:
        print("the answers to a mistake (benchmarks/small_commands.py):", flush=True)
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "small_commands.py")], cwd=REPO)
    return 0


if __name__ == "__main__":
    sys.exit(main())
