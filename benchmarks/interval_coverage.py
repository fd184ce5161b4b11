"""Does a run's printed "95 % interval" of throughput hold up across runs? Measured, not assumed.

Runs K identical cells (default: tiny-mlp, 2 CPU ranks, batch 16, 4 repeats), each its own
`torchscale benchmark` process, one after the other. For each run it reads the cell's result
(`throughput.repeats`: global samples/s of each repeat; `intervals.samples_per_s`: the Estimate
the run printed) and asks: does this run's interval cover the median of the OTHER runs'
medians? That is what a reader of one run's "4,540 ±350" is promised: a rerun of the same cell
lands inside. From the same per-repeat figures it recomputes what every candidate method would
have printed, so one measurement compares them:
- range of the repeats (what the percentile bootstrap of the median of 4 amounts to);
- the percentile bootstrap of the median, with torchscale's seeded resamples;
- Student t on log throughput, n - 1 degrees of freedom, centred on the median (no drift term);
- `median_of_repeats` as the code stands (Student t on log throughput widened by the
  between-run drift floor `BETWEEN_RUN_SD`, docs/methodology.md "Uncertainty").
It also estimates the between-run drift itself (one-way random effects on the log figures:
the variance of the runs' means beyond what their repeats' own spread explains): this
machine's own figure beside `BETWEEN_RUN_SD` (taken from docs/regressions.md's runs).

Counts are printed with their 95 % Clopper-Pearson interval and judged against TARGET (85 %):
met (the interval clears it), missed (it lies below) or not settled (it straddles it; 6 runs
cannot clear 85 %: 6 of 6 gives 54-100 %). The K coverage events share their targets, so the
interval is a guide, not exact. A verdict needs a quiet machine: when the 1-minute load average
exceeds BUSY_LOAD before the first run or after the last (read SETTLE_S after it, when about
e^-1 of this script's own ranks still shows in the average), the output says "load too high
to judge" instead; so it does when any run's own host-load record called the machine busy
(contracts/busy_machine.py): work that came and went between the two readings.

    python benchmarks/interval_coverage.py [--runs 6] [--model tiny-mlp] [--batch 16] \
        [--world 2] [--repeats 4] [--steps 10] [--settle 60] [--keep] [--json runs.json]
    python benchmarks/interval_coverage.py --load runs.json      # re-report saved runs
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from torchscale.offline.analysis.uncertainty import (
    BETWEEN_RUN_SD,
    LEVEL,
    block_indices,
    median_of_repeats,
    percentile_interval,
)

# the benchmarks' shared child-process handling (benchmarks/child_runs.py), found beside this
# file however the script was started (`python benchmarks/...`, or imported by path in a test)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from child_runs import Stopped, run_child, stop

REPO = Path(__file__).resolve().parent.parent

TARGET = 0.85  # an interval covers the other runs' median in >= 85 % of reruns
BUSY_LOAD = 1.5  # 1-min load above this before or after: not a quiet machine, no verdict
SETTLE_S = 60.0  # wait after the last run, so its own ranks have mostly left the 1-min load

Interval = tuple[float | None, float | None]


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "MASTER_", "PET_"))}
    # this checkout first, then whatever the caller's PYTHONPATH held
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


# ------------------------------------------------------------------------ runs


def write_config(args: argparse.Namespace, workdir: Path, name: str) -> Path:
    """The one cell, identical in every run but for its experiment name."""
    config = workdir / f"{name}.yaml"
    config.write_text(
        f"experiment_name: {name}\nmodels: [{args.model}]\nbatch_sizes: [{args.batch}]\n"
        f"gpu_counts: [{args.world}]\ndevice: cpu\n"
        "training: {precision: fp32, strategy: ddp}\n"
        f"measurement: {{warmup_steps: {args.warmup}, steps: {args.steps}, "
        f"repeats: {args.repeats}}}\n",
        encoding="utf-8",
    )
    return config


def read_cell(directory: Path) -> dict[str, Any]:
    """The per-repeat throughputs and the printed Estimate of the run's one cell
    (cell_result.py: `throughput.repeats`, `intervals.samples_per_s`), and its hosts' busy
    verdict (true when any host is busy, null when one was not judged)."""
    found = sorted(directory.glob("cells/*.json"))
    if not found:
        return {"outcome": "failed", "error": "no cells/*.json"}
    cell = json.loads(found[0].read_text(encoding="utf-8"))
    if cell.get("status") != "ok":
        return {"outcome": "failed", "error": str((cell.get("error") or {}).get("reason"))}
    printed = (cell.get("intervals") or {}).get("samples_per_s") or {}
    hosts = (cell.get("telemetry") or {}).get("hosts") or []
    verdicts = [h.get("busy") for h in hosts]
    return {
        "outcome": "ok",
        "busy": True if any(verdicts) else (None if None in verdicts or not hosts else False),
        "findings": [h.get("finding") for h in hosts],
        "repeats": cell["throughput"]["repeats"],
        "value": printed.get("value", cell["throughput"]["samples_per_s"]),
        "low": printed.get("low"),
        "high": printed.get("high"),
        "method": printed.get("method"),
        "other_cores": max((h.get("other_cores") or 0.0 for h in hosts), default=None),
    }


def benchmark_run(
    args: argparse.Namespace, workdir: Path, env: dict[str, str], index: int
) -> dict[str, Any]:
    """One `torchscale benchmark` of the cell; its figures as a record."""
    name = f"run{index:03d}"
    config = write_config(args, workdir, name)
    out = workdir / "results"
    argv = [sys.executable, "-m", "torchscale", "--quiet", "benchmark", "-c", str(config)]
    started = time.perf_counter()
    code, output = run_child([*argv, "-o", str(out)], env, args.timeout)
    record: dict[str, Any] = {
        "index": index,
        "exit_code": code,
        "wall_s": round(time.perf_counter() - started, 2),
        "load_1m": os.getloadavg()[0],  # this run's minute: its own ranks and everyone else's
        **read_cell(out / name),
    }
    if record["outcome"] != "ok":
        record["error"] = f"{record.get('error')}: {output[-1500:]}"
    if not args.keep:
        shutil.rmtree(out / name, ignore_errors=True)
    return record


def _save(path: Path | None, data: dict[str, Any]) -> None:
    if path is None:
        return
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(data, indent=1), encoding="utf-8")
    part.replace(path)


def measure(args: argparse.Namespace, workdir: Path, data: dict[str, Any]) -> None:
    """K runs one after the other; each record appended (and saved) as its run ends."""
    env = child_env()
    data["load_before"] = os.getloadavg()
    print(
        f"{args.runs} runs of {args.model}, {args.world} CPU ranks, batch {args.batch}, "
        f"{args.repeats} repeats of {args.steps} steps; 1-min load average before: "
        f"{data['load_before'][0]:.2f} (5-min {data['load_before'][1]:.2f}, "
        f"{os.cpu_count()} cores)",
        flush=True,
    )
    for index in range(1, args.runs + 1):
        record = benchmark_run(args, workdir, env, index)
        data["runs"].append(record)
        _save(args.json, data)
        what = (
            f"{record['value']:,.1f} samples/s [{record['low']:,.1f}, {record['high']:,.1f}]"
            if record["outcome"] == "ok" and record["low"] is not None
            else record["outcome"]
        )
        print(
            f"  [{index}/{args.runs}] {what}, {record['wall_s']:.0f} s, "
            f"load {record['load_1m']:.2f}",
            flush=True,
        )
    if args.settle > 0:
        print(f"waiting {args.settle:.0f} s for the runs' own load to leave the 1-min average")
        time.sleep(args.settle)
    data["load_after"] = os.getloadavg()
    print(f"1-min load average after: {data['load_after'][0]:.2f}", flush=True)
    _save(args.json, data)


# ------------------------------------------------------------------------ methods


def percentile_bootstrap(repeats: Sequence[float]) -> Interval:
    """The percentile bootstrap of the median, from torchscale's own seeded resamples: over 4
    repeats it is their range, the candidate `median_of_repeats` is measured against."""
    data = np.asarray(repeats, dtype=float)
    if data.size < 2:
        return None, None
    rows = block_indices(data.size, block=1)
    return percentile_interval(np.median(data[rows], axis=1))


def range_of_repeats(repeats: Sequence[float]) -> Interval:
    return (min(repeats), max(repeats)) if len(repeats) > 1 else (None, None)


def t_on_logs(repeats: Sequence[float]) -> Interval:
    """Student t on log throughput, n - 1 degrees of freedom, centred on the median: the
    repeats' own spread only, no between-run term."""
    from scipy import stats as scipy_stats

    logs = np.log(np.asarray(repeats, dtype=float))
    if logs.size < 2:
        return None, None
    half = float(scipy_stats.t.ppf(0.5 + LEVEL / 2, logs.size - 1)) * float(
        logs.std(ddof=1) / math.sqrt(logs.size)
    )
    centre = float(np.median(logs))
    return math.exp(centre - half), math.exp(centre + half)


def current(repeats: Sequence[float]) -> Interval:
    estimate = median_of_repeats(repeats)
    return estimate.low, estimate.high


def printed(run: dict[str, Any]) -> Interval:
    return run.get("low"), run.get("high")


CANDIDATES: dict[str, Callable[[Sequence[float]], Interval]] = {
    "range of the repeats": range_of_repeats,
    "percentile bootstrap of the median": percentile_bootstrap,
    "Student t on log, n - 1 df, no drift term": t_on_logs,
    f"median_of_repeats (drift floor sd {BETWEEN_RUN_SD:g})": current,
}


# ------------------------------------------------------------------------ report


def recomputed(
    method: Callable[[Sequence[float]], Interval],
) -> Callable[[dict[str, Any]], Interval]:
    """A run's interval as `method` takes it from the run's own per-repeat figures."""
    return lambda run: method(run["repeats"])


def others_median(runs: list[dict[str, Any]], i: int) -> float:
    """The median of every other run's median: where a rerun of the cell lands."""
    return float(np.median([r["value"] for j, r in enumerate(runs) if j != i]))


def covers(interval: Interval, target: float) -> bool | None:
    low, high = interval
    return None if low is None or high is None else low <= target <= high


def coverage(runs: list[dict[str, Any]], interval_of: Callable[[dict[str, Any]], Interval]) -> int:
    """How many runs' intervals (by `interval_of`) hold the other runs' median."""
    return sum(bool(covers(interval_of(r), others_median(runs, i))) for i, r in enumerate(runs))


def clopper_pearson(hits: int, n: int) -> tuple[float, float]:
    from scipy.stats import binomtest

    ci = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="exact")
    return float(ci.low), float(ci.high)


def verdict(hits: int, n: int, quiet: bool) -> str:
    if not quiet:
        return "load too high to judge"
    low, high = clopper_pearson(hits, n)
    if low >= TARGET:
        return "met"
    return "missed" if high < TARGET else "not settled"


def between_run_sd(runs: list[dict[str, Any]]) -> tuple[float, float, float]:
    """(between-run sd, within-run sd, sd of the runs' log medians), log throughput. One-way
    random effects by moments: var(run means of the logs) - mean(within variance) / n is
    what the runs differ by beyond what their own repeats' spread explains (0 if negative)."""
    logs = [np.log(np.asarray(r["repeats"], dtype=float)) for r in runs]
    means = np.array([x.mean() for x in logs])
    within = float(np.mean([x.var(ddof=1) for x in logs]))
    n = float(np.mean([x.size for x in logs]))
    tau2 = max(0.0, float(means.var(ddof=1)) - within / n)
    medians = np.log([r["value"] for r in runs])
    return math.sqrt(tau2), math.sqrt(within), float(medians.std(ddof=1))


def load_text(load: Sequence[float] | None) -> str:
    return f"{load[0]:.2f}" if load else "not recorded"


def disturbed(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs whose own host-load record called the machine busy (the cell's busy verdict:
    contracts/busy_machine.py). The 1-min load before and after cannot see work that came and
    went between them; this can."""
    return [r for r in runs if r.get("busy")]


def report(data: dict[str, Any]) -> None:
    cell = data.get("cell", {})
    runs = [r for r in data["runs"] if r.get("outcome") == "ok"]
    failed = len(data["runs"]) - len(runs)
    before, after = data.get("load_before"), data.get("load_after")
    busy = disturbed(runs)
    quiet = bool(before and after and before[0] <= BUSY_LOAD and after[0] <= BUSY_LOAD)
    quiet = quiet and not busy
    print(
        f"\ninterval coverage: {cell.get('model')}, {cell.get('world')} CPU ranks, batch "
        f"{cell.get('batch')}, {cell.get('repeats')} repeats of {cell.get('steps')} steps; "
        f"{len(runs)} run(s) ok, {failed} failed"
    )
    loads = sorted(r["load_1m"] for r in data["runs"])
    print(
        f"1-min load average: before {load_text(before)}, after {load_text(after)} "
        f"(read {cell.get('settle', SETTLE_S):.0f} s after the last run); at the runs' ends "
        f"median {loads[len(loads) // 2] if loads else float('nan'):.2f} (their own ranks "
        f"included)"
    )
    print(
        f"runs whose own host-load record called the machine busy: {len(busy)} of {len(runs)}"
        + ("" if not busy else f" (runs {', '.join(str(r['index']) for r in busy)})")
    )
    if not quiet:
        print(
            f"not a quiet machine (1-min load above {BUSY_LOAD} before or after, or a run that "
            "saw other work): the counts below are this machine's, no verdict"
        )
    if len(runs) < 2:
        print("fewer than 2 runs: nothing to cover")
        return
    print("\n  run  median     printed interval        other runs' median  covered  method")
    for i, r in enumerate(runs):
        target = others_median(runs, i)
        low, high = printed(r)
        shown = f"[{low:,.1f}, {high:,.1f}]" if low is not None and high is not None else "none"
        print(
            f"  {r['index']:>3}  {r['value']:>9,.1f}  {shown:<22}  {target:>18,.1f}  "
            f"{'yes' if covers((low, high), target) else 'no':<7}  {r.get('method')}"
        )
    n = len(runs)
    print(f"\ncovers the other runs' median (target >= {TARGET:.0%}), 95 % Clopper-Pearson:")
    rows = [("as printed by the runs", coverage(runs, printed))]
    rows += [(name, coverage(runs, recomputed(method))) for name, method in CANDIDATES.items()]
    for name, hits in rows:
        low, high = clopper_pearson(hits, n)
        print(
            f"  {name}: {hits}/{n} = {hits / n:.0%} ({low:.0%} to {high:.0%}): "
            f"{verdict(hits, n, quiet)}"
        )
    tau, within, spread = between_run_sd(runs)
    print(
        f"\nlog throughput: between-run sd {tau:.4f} beyond the repeats (floor in "
        f"median_of_repeats: {BETWEEN_RUN_SD:g}); within-run sd {within:.4f}; sd of the runs' "
        f"medians {spread:.4f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=6, help="K: identical runs of the cell")
    parser.add_argument("--model", default="tiny-mlp", help="a built-in model")
    parser.add_argument("--batch", type=int, default=16, help="batch per rank")
    parser.add_argument("--world", type=int, default=2, help="CPU ranks")
    parser.add_argument("--repeats", type=int, default=4, help="repeats (windows) per run")
    parser.add_argument("--steps", type=int, default=10, help="steps per repeat")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up steps per run")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a run may take")
    parser.add_argument(
        "--settle", type=float, default=SETTLE_S, help="seconds to wait before the last load"
    )
    parser.add_argument("--keep", action="store_true", help="keep the runs' output directory")
    parser.add_argument("--json", type=Path, help="write every run's record here, as runs end")
    parser.add_argument("--load", type=Path, help="re-report saved runs instead of measuring")
    args = parser.parse_args()
    started = time.perf_counter()
    if args.load:
        report(json.loads(args.load.read_text(encoding="utf-8")))
        return
    if args.runs < 2:
        parser.error("--runs: at least 2 (a run is judged against the others)")
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    data: dict[str, Any] = {
        "cell": {
            "model": args.model,
            "batch": args.batch,
            "world": args.world,
            "repeats": args.repeats,
            "steps": args.steps,
            "warmup": args.warmup,
            "settle": args.settle,
        },
        "cores": os.cpu_count(),
        "load_before": None,
        "load_after": None,
        "runs": [],
    }
    workdir = Path(tempfile.mkdtemp(prefix="interval-coverage-"))
    stopped: str | None = None
    try:
        measure(args, workdir, data)
    except (KeyboardInterrupt, Stopped) as exc:
        stopped = f"stopped ({type(exc).__name__} {exc}) after {len(data['runs'])} run(s)"
    finally:
        if args.keep:
            print(f"\nruns' output kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    report(data)
    print(f"\n({time.perf_counter() - started:.0f} s)")
    if stopped:
        raise SystemExit(f"{stopped}: every process ended; the table holds the runs so far")


if __name__ == "__main__":
    main()
