r"""How often does a balanced 2-rank run read "a slower device", and how often a straggler of the
job? Measured, with what the calibration costs.

Every run is one `torchscale benchmark` cell of a balanced model (default tiny-cnn, the same
work on both CPU ranks), as a new user would run it. From its result (cells/*.json) it reads
the straggler verdict (`diagnosis.straggler`: named, kind, and for a compute straggler its
`device` reading: straggler.device_slower / .device_partly / .device_in_window / .more_work /
.device_undecided) and each rank's calibration (`ranks[].calibration`: the fixed matmul every
rank times after each window, rank/worker/calibration.py), whose wall seconds per window
against the window's steps are its cost to the run (it runs outside every timed step).

Printed per run: the verdict in short, the calibration ratio of rank 1 over rank 0 (CPU time)
and the cost; then the rates with 95 % Clopper-Pearson intervals:
  - nobody named;
  - "the machine": a compute straggler whose calibration was significantly slower
    (device_slower or device_partly: a slower device), or slower only while it worked on the
    same work as the others (device_in_window: the machine while it worked, not shown to be
    the device): the machine's floor told apart from the job;
  - a straggler of the job: any other name (more work, undecided, host, input, communication).
The 1-minute load before and after every run is printed: beside other work the rates measure
that work (said, not judged).

    python benchmarks/device_calibration.py [--runs 10] [--model tiny-cnn] [--batch 32] \
        [--steps 48] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from child_runs import run_child  # the benchmarks folder: sys.path[0] of a script run here
from scipy.stats import binomtest

REPO = Path(__file__).resolve().parents[1]
CONFIG = """experiment_name: device
device: cpu
models: ["{model}"]
batch_sizes: [{batch}]
gpu_counts: [2]
measurement:
  steps: {steps}
  repeats: {repeats}
"""
SLOWER = ("straggler.device_slower", "straggler.device_partly", "straggler.device_in_window")


def load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def rate(hits: int, n: int) -> str:
    if n == 0:
        return "no runs"
    ci = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="exact")
    return f"{hits}/{n} [{ci.low:.0%}, {ci.high:.0%}]"


def one_run(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """One balanced cell: its verdict, calibration and cost, or why none was read."""
    out.mkdir(parents=True)
    config = out / "config.yaml"
    config.write_text(
        CONFIG.format(model=args.model, batch=args.batch, steps=args.steps, repeats=args.repeats)
    )
    argv = [sys.executable, "-m", "torchscale", "benchmark"]
    argv += ["-c", str(config), "-o", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    before = load()
    code, output = run_child(argv, env, timeout_s=900)
    record: dict[str, Any] = {"load_before": before, "load_after": load(), "exit": code}
    cells = sorted(out.rglob("cells/*.json"))
    if not cells:
        return record | {"error": output[-400:]}
    cell = json.loads(cells[0].read_text())
    verdict = (cell.get("diagnosis") or {}).get("straggler") or {}
    ranks = sorted(cell.get("ranks") or [], key=lambda r: r["rank"])
    calibration = [r.get("calibration") for r in ranks]
    record |= {
        "named": bool(verdict.get("named")),
        "rank": verdict.get("rank"),
        "kind": verdict.get("kind"),
        "gap_s": (verdict.get("gap_s") or {}).get("value"),
        "step_s": statistics.fmean(r["step_time"]["mean"] for r in ranks) if ranks else None,
        "device": (verdict.get("device") or {}).get("code"),
        "device_ratio": (verdict.get("device_ratio") or {}).get("value"),
    }
    if len(calibration) == 2 and all(calibration):
        cpu = [statistics.fmean(s for reps in c["device_s"] for s in reps) for c in calibration]
        record["cpu_ratio_1_over_0"] = cpu[1] / cpu[0]
        costs = [s for c in calibration for s in c["cost_s"]]
        record["cost_ms_per_window"] = statistics.median(costs) * 1e3
        window_s = statistics.fmean(r["step_time"]["mean"] for r in ranks) * args.steps
        record["cost_share_of_window"] = statistics.median(costs) / window_s
    return record


def short(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"no result (exit {r['exit']})"
    if not r["named"]:
        said = "nobody named"
    else:
        share = r["gap_s"] / r["step_s"] if r["gap_s"] and r["step_s"] else float("nan")
        said = f"rank {r['rank']} {r['kind']} {share:+.1%} of the step, {r['device'] or '-'}"
    ratio = r.get("cpu_ratio_1_over_0")
    cal = f"calibration r1/r0 {ratio:.3f}" if ratio else "no calibration"
    cost = r.get("cost_ms_per_window")
    spent = ""
    if cost:
        share, step = r["cost_share_of_window"], r["step_s"] * 1e3
        spent = f", cost {cost:.2f} ms/window ({share:.2%} of a {step:.2f} ms step x steps)"
    return f"{said}; {cal}{spent}; load {r['load_before']:.2f} -> {r['load_after']:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--model", default="tiny-cnn")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        print("needs 2 cores: one per rank")
        return 2
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            record = one_run(args, Path(tmp) / f"run{i}")
            records.append(record)
            print(f"run {i + 1}/{args.runs}: {short(record)}", flush=True)
            if args.json:
                args.json.write_text(json.dumps(records, indent=1))
    read = [r for r in records if "error" not in r]
    slower = sum(1 for r in read if r["named"] and r["device"] in SLOWER)
    nobody = sum(1 for r in read if not r["named"])
    job = len(read) - slower - nobody
    print(f"{args.model} batch {args.batch}, 2 CPU ranks, {args.steps} steps x {args.repeats}")
    print(f"  nobody named:           {rate(nobody, len(read))}")
    print(f"  the machine:            {rate(slower, len(read))}")
    print(f"  a straggler of the job: {rate(job, len(read))}")
    costs = [r["cost_ms_per_window"] for r in read if r.get("cost_ms_per_window")]
    shares = [r["cost_share_of_window"] for r in read if r.get("cost_share_of_window")]
    if costs:
        print(
            f"  calibration cost: median {statistics.median(costs):.2f} ms per window "
            f"({statistics.median(shares):.2%} of a window's steps), outside every timed step"
        )
    if len(read) < len(records):
        print(f"  {len(records) - len(read)} run(s) wrote no result")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
