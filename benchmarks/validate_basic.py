"""How long does `torchscale validate` (the basic level) take here, cold and warm?

Cold: the user's cache folder is empty (a fresh temporary XDG_CACHE_HOME), so the compile
probe builds its kernel; warm: the same folder right after, so the probe's kept PASS is read
back (validate/compile_verdicts.py). `--quick` (no compile, no smoke test) is timed too: the
floor of importing torch and running the checks. Each run is its own subprocess (what a user
waits for), ROUNDS rounds of cold, warm and quick in turn, so a drift of a shared machine hits
all alike. Prints the median and fastest wall time of each, warm / cold, what the compile check
and the smoke test took inside each (from the report's JSON), and `uptime` before and after: on
a machine busy with other work the seconds are that machine's, not validate's (the target,
<= 15 s warm on CPU, is for an idle one).

    python benchmarks/validate_basic.py [--rounds 3] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_S = 15.0
KINDS = ("cold", "warm", "quick")


def uptime() -> str:
    done = subprocess.run(["uptime"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or f"load average {os.getloadavg()}"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    """Wall seconds of one validate and its JSON report."""
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    report: dict[str, Any] = json.loads(done.stdout)
    return elapsed, report


def check_seconds(report: dict[str, Any], prefix: str) -> float | None:
    """What a check's own data says it took (the compile probe's, the smoke test's)."""
    for check in report["checks"]:
        if check["id"].startswith(prefix):
            data = check.get("data", {})
            if "cached_at" in data:
                return 0.0  # read back: its probe_wall_s is the kept run's
            value = data.get("probe_wall_s", data.get("wall_s"))
            return float(value) if value is not None else None
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="validate-basic-"))
    base = [sys.executable, "-m", "torchscale", "validate", "--device", args.device, "--json"]
    base += ["-o", str(work / "results")]
    print(f"before: {uptime()}")
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    inside: dict[str, list[tuple[float | None, float | None]]] = {kind: [] for kind in KINDS}
    for round_ in range(args.rounds):
        env = {**os.environ, "XDG_CACHE_HOME": str(work / f"cache-{round_}")}
        for kind in KINDS:
            argv = [*base, "--quick"] if kind == "quick" else base
            seconds, report = timed(argv, env)
            times[kind].append(seconds)
            inside[kind].append((check_seconds(report, "compile"), check_seconds(report, "smoke")))
        print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    print(f"after:  {uptime()}")
    print(
        f"{'validate basic':<16} {'median s':>9} {'fastest s':>10} {'compile s':>10} {'smoke s':>8}"
    )
    for kind in KINDS:
        compile_s = [c for c, _ in inside[kind] if c is not None]
        smoke_s = [s for _, s in inside[kind] if s is not None]
        print(
            f"{kind:<16} {statistics.median(times[kind]):>9.1f} {min(times[kind]):>10.1f} "
            f"{_median(compile_s):>10} {_median(smoke_s):>8}"
        )
    cold, warm = statistics.median(times["cold"]), statistics.median(times["warm"])
    verdict = "meets" if warm <= TARGET_S else "misses"
    print(f"warm / cold = {warm / cold:.2f}; warm {warm:.1f} s {verdict} the {TARGET_S:g} s target")


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}" if values else "-"


if __name__ == "__main__":
    main()
