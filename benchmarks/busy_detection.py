"""Does the busy-machine rule call the runs another job slowed busy, and leave idle runs alone?
Measured, never asserted in CI (the rule: contracts/busy_machine.py).

Runs N identical cells (default: the default config's tiny-mlp, batch 16, 2 CPU ranks, warm-up
3, 20 steps, 4 repeats), each its own `torchscale benchmark` process, first on the idle machine,
then N more while another 2-rank job of the same cell is started now and then beside them (a
random pause of up to --gap seconds between one job's end and the next one's start: its
start-up and its ranks take the cores). A run is slowed when its throughput is at most the idle
runs' median / --slowed (1.5x by default). It reports, each as a count with its exact 95 %
(Clopper-Pearson) interval:
- the slowed runs called busy (the rule's coverage of a contended run: every slowed run should
  be, since its interval measures the contention, not the node);
- the idle runs called busy (false alarms);
and beside them the median width of the runs' printed throughput intervals (relative to the
figure), idle and slowed. The idle runs need an idle machine: the 1-minute load average before
and after is printed, so a reader can tell.

    python benchmarks/busy_detection.py [--runs 12] [--gap 4] [--slowed 1.5] [--json runs.json]
    python benchmarks/busy_detection.py --load runs.json      # re-report saved runs
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from child_runs import STOP_GRACE_S, Stopped, kill_group, run_child, stop
from interval_coverage import (
    BUSY_LOAD,
    child_env,
    clopper_pearson,
    load_text,
    read_cell,
    write_config,
)


def one_run(args: argparse.Namespace, workdir: Path, name: str) -> dict[str, Any]:
    config = write_config(args, workdir, name)
    argv = [sys.executable, "-m", "torchscale", "--quiet", "benchmark", "-c", str(config)]
    code, output = run_child([*argv, "-o", str(workdir / "results")], child_env(), args.timeout)
    record = {"name": name, "exit_code": code, "load_1m": os.getloadavg()[0]}
    record |= read_cell(workdir / "results" / name)
    if record["outcome"] == "ok" and record["value"] is None:  # not measurable: the median
        record["value"] = statistics.median(record["repeats"])
    if record["outcome"] != "ok":
        record["error"] = f"{record.get('error')}: {output[-800:]}"
    shutil.rmtree(workdir / "results" / name, ignore_errors=True)
    return record


class Neighbour:
    """Another 2-rank job of the same cell, started now and then until stopped."""

    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        self.args, self.workdir = args, workdir
        self.halt = threading.Event()
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        config = write_config(self.args, self.workdir, "neighbour")
        argv = [sys.executable, "-m", "torchscale", "--quiet", "benchmark", "-c", str(config)]
        pause = random.Random()  # noqa: S311 (a pause between jobs, not a secret)
        while not self.halt.wait(pause.uniform(0.0, self.args.gap)):
            self.proc = subprocess.Popen(
                [*argv, "-o", str(self.workdir / "neighbour-results")],
                env=child_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            self.started += 1
            self.proc.wait()

    def __enter__(self) -> Neighbour:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.halt.set()
        if self.proc is not None:
            kill_group(self.proc, STOP_GRACE_S)
        self.thread.join()


def measure(args: argparse.Namespace, workdir: Path, data: dict[str, Any]) -> None:
    data["load_before"] = os.getloadavg()
    print(f"load before: {data['load_before'][0]:.2f}, {os.cpu_count()} cores", flush=True)
    for i in range(args.runs):
        data["runs"].append({"phase": "idle", **one_run(args, workdir, f"idle{i:03d}")})
        _progress(data["runs"][-1], i, args.runs)
    with Neighbour(args, workdir) as neighbour:
        for i in range(args.runs):
            data["runs"].append({"phase": "beside", **one_run(args, workdir, f"beside{i:03d}")})
            _progress(data["runs"][-1], i, args.runs)
        data["neighbour_jobs"] = neighbour.started
    data["load_after"] = os.getloadavg()
    print(f"load after: {data['load_after'][0]:.2f}", flush=True)


def _progress(run: dict[str, Any], i: int, n: int) -> None:
    what = f"{run['value']:,.0f} samples/s" if run["outcome"] == "ok" else run["outcome"]
    print(
        f"  {run['phase']} [{i + 1}/{n}] {what}, others {run.get('other_cores') or 0:.2f} "
        f"cores, busy {run.get('busy')}",
        flush=True,
    )


def width(run: dict[str, Any]) -> float | None:
    """The printed interval's width relative to its figure."""
    low, high, value = run.get("low"), run.get("high"), run.get("value")
    return (high - low) / value if low is not None and high is not None and value else None


def _rate(label: str, hits: int, n: int) -> str:
    if n == 0:
        return f"  {label}: none to count"
    low, high = clopper_pearson(hits, n)
    return f"  {label}: {hits} of {n} ({low * 100:.0f} % to {high * 100:.0f} %, 95 %, exact)"


def _widths(label: str, runs: list[dict[str, Any]]) -> str:
    found = [w for w in map(width, runs) if w is not None]
    middle = statistics.median(found) if found else None
    shown = f"{middle * 100:.0f} % of the figure" if middle is not None else "none printed"
    return f"  median interval width, {label}: {shown} ({len(found)} run(s))"


def report(data: dict[str, Any]) -> None:
    ok = [r for r in data["runs"] if r.get("outcome") == "ok"]
    idle = [r for r in ok if r["phase"] == "idle"]
    beside = [r for r in ok if r["phase"] == "beside"]
    reference = statistics.median([r["value"] for r in idle]) if idle else None
    cell = data["cell"]
    print(
        f"\nbusy detection: {cell['model']} b{cell['batch']}, {cell['world']} CPU ranks, "
        f"warm-up {cell['warmup']}, {cell['steps']} steps x {cell['repeats']} repeats; "
        f"{len(idle)} idle and {len(beside)} beside-a-job run(s) ok, "
        f"{len(data['runs']) - len(ok)} failed; {data.get('neighbour_jobs', 0)} neighbour job(s)"
    )
    before, after = data.get("load_before"), data.get("load_after")
    print(f"1-min load: before {load_text(before)}, after {load_text(after)}")
    if not (before and after and before[0] <= BUSY_LOAD and after[0] <= BUSY_LOAD):
        print(f"not an idle machine (load above {BUSY_LOAD}): the idle runs' counts are no verdict")
    if reference is None:
        print("no idle run: nothing to judge slowed by")
        return
    limit = reference / data["slowed"]
    slowed = [r for r in ok if r["value"] <= limit]
    print(
        f"idle median {reference:,.0f} samples/s; slowed: at most {limit:,.0f} "
        f"(1/{data['slowed']:g} of it): {len(slowed)} run(s)"
    )
    for r in ok:
        print(
            f"  {r['name']:<10} {r['value']:>9,.0f}  others {r.get('other_cores') or 0:.2f}  "
            f"busy {r.get('busy')}"
        )
    print(_rate("slowed runs called busy", sum(r.get("busy") is True for r in slowed), len(slowed)))
    print(_rate("idle runs called busy", sum(r.get("busy") is True for r in idle), len(idle)))
    unjudged = sum(r.get("busy") is None for r in ok)
    print(f"  runs not judged (too short to resolve, or no host figures): {unjudged}")
    print(_widths("idle runs", idle))
    print(_widths("slowed runs", slowed))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=12, help="N: idle runs, and as many beside")
    parser.add_argument("--gap", type=float, default=4.0, help="most seconds between jobs")
    parser.add_argument("--slowed", type=float, default=1.5, help="slowed: idle median / this")
    parser.add_argument("--model", default="tiny-mlp")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a run may take")
    parser.add_argument("--json", type=Path, help="write every run's record here")
    parser.add_argument("--load", type=Path, help="re-report saved runs instead of measuring")
    args = parser.parse_args()
    if args.load:
        report(json.loads(args.load.read_text(encoding="utf-8")))
        return
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    keys = ("model", "batch", "world", "warmup", "steps", "repeats")
    data: dict[str, Any] = {
        "cell": {k: getattr(args, k) for k in keys},
        "slowed": args.slowed,
        "runs": [],
    }
    workdir = Path(tempfile.mkdtemp(prefix="busy-detection-"))
    started = time.perf_counter()
    try:
        measure(args, workdir, data)
    except (KeyboardInterrupt, Stopped) as exc:
        print(f"stopped ({type(exc).__name__}) after {len(data['runs'])} run(s)")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if args.json:
            args.json.write_text(json.dumps(data, indent=1), encoding="utf-8")
    report(data)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
