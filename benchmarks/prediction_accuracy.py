"""How far can `torchscale predict` be trusted here? Forecast, then measure, and score.

Into one experiment folder, in this order (each a real torchscale command):
  1. `benchmark` at 1 rank, and `comm` (all_reduce at 2 ranks: from one rank alone nothing
     measured a collective, and predict forecasts nothing it cannot assume honestly);
  2. `predict --gpus 2,3,4`                 (round "1": from the 1-rank cells and the comm run);
  3. `benchmark` at 2 ranks                 (scores round 1's forecasts of 2 ranks);
  4. `predict --gpus 3,4`                   (round "1,2": the 2-rank cells measured too);
  5. `comm` at 3 and 4 ranks, `predict --gpus 3,4` (round "1,2+comm": the collective measured
     at the sizes forecast, as `torchscale comm` across the nodes one plans to buy measures
     the link; the cells are still only 1 and 2 ranks);
  6. `benchmark` at 3 and 4 ranks           (scores every round's forecasts of 3 and 4 ranks).
The benchmark scores each forecast as it measures its cell (forecasts/scores/, the definitions of
torchscale/offline/analysis/prediction/score.py); this script reads the scores back and prints
the error of each, and per target world size the median absolute error and the share of
intervals that held. The headline forecasts are the latest made before each measurement: 2
ranks from round "1", 3 and 4 ranks from round "1,2+comm"; the earlier rounds' forecasts of 3
and 4 ranks are summarised apart.

Every sweep pins one intra-op thread per rank (`launcher.omp_num_threads: 1`, torchrun's own
default for several ranks), so the forecasts are judged on the model's terms, not on this VM's
OpenMP wake-ups: with 2 threads a 1-rank cell pays ~10 ms to wake an idle vCPU's thread after
each sleep. `--default-threads` keeps each sweep's default (2 threads at 1 rank) to measure the
thread term too.

Models: tiny-mlp and tiny-gpt2 (real work: at 3 and 4 ranks on 2 cores their ranks share cores)
and benchmarks/sleep_model.py (compute is a sleep, so its ranks do not contend for cores: its
error is the model's, not this machine's contention). Targets on a quiet machine: median absolute
error <= 10 % at 2 ranks and <= 15 % at 4 ranks, >= 80 % of intervals holding. With the 1-minute
load above the core count before the run, or a cell whose telemetry saw other processes busy
(HostLoad.busy), the figures are printed with "beside other work: noise, no verdict" instead
of a verdict. The load after is printed, not judged: it counts the run's own 3 and 4 ranks.
`--runs K` repeats the whole protocol K times (each waits for the load the last one left to
fall) and pools the quiet runs' headline forecasts: one run's three forecasts of a size move
together when the host shifts between runs.

    python benchmarks/prediction_accuracy.py [--quick] [--held-out] [--runs K]
                                             [--default-threads] [--out DIR] [--json FILE]

--held-out: configurations the forecast model was never tuned on (its terms were built and
checked on batch 8): tiny-mlp and tiny-gpt2 at batches 12 and 16, reported as held out, apart
from the tuned set.

--quick (a smoke test, ~2 minutes): the sleep model only, measured at 1 rank, forecast and
measured at 2 (no later round).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from child_runs import Stopped, run_child, stop

from torchscale.offline.results.forecast_store import read_forecasts

REPO = Path(__file__).resolve().parent.parent
EXPERIMENT = "prediction_accuracy"
TARGETS = {2: 0.10, 4: 0.15}  # world size -> median absolute error on a quiet machine
COVERAGE_TARGET = 0.80
TIMEOUT_S = 900.0
SLEEP_MODEL = {"name": "benchmarks.sleep_model:build", "label": "sleep", "options": {}}
MODELS: list[dict[str, Any]] = [
    {"name": "tiny-mlp"},
    {"name": "tiny-gpt2"},
    SLEEP_MODEL,
]
REAL_WORK = ("tiny-mlp", "tiny-gpt2")
TUNED_BATCHES = [8]
HELD_OUT_MODELS: list[dict[str, Any]] = [{"name": "tiny-mlp"}, {"name": "tiny-gpt2"}]
HELD_OUT_BATCHES = [12, 16]
ROUNDS = {  # a round's name: what had been measured when its forecasts were made
    "1": "1 rank, all_reduce at 2",
    "1,2": "1 and 2 ranks, all_reduce at 2",
    "1,2+comm": "1 and 2 ranks, all_reduce at 2, 3 and 4",
}


@dataclass(frozen=True)
class Row:
    """One forecast scored by the cell that measured it."""

    model: str
    batch_size: int
    world_size: int
    round: str  # what had been measured when it was made: a key of ROUNDS
    headline: bool  # the latest forecast of its cell made before the cell was measured
    step_s: float
    low_s: float | None
    high_s: float | None
    measured_s: float
    error: float
    inside: bool


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "MASTER_", "PET_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def uptime() -> str:
    done = subprocess.run(["uptime"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or f"load average {os.getloadavg()}"


def config(
    models: Sequence[dict[str, Any]],
    world_sizes: Sequence[int],
    quick: bool,
    default_threads: bool = False,
    batches: Sequence[int] = tuple(TUNED_BATCHES),
) -> str:
    return json.dumps(
        {
            "experiment_name": EXPERIMENT,
            "device": "cpu",
            "models": list(models),
            "batch_sizes": list(batches),
            "gpu_counts": list(world_sizes),
            "measurement": {"warmup_steps": 3, "steps": 12 if quick else 20, "repeats": 3},
            "launcher": {
                "env": {"PYTHONPATH": str(REPO)},
                "cell_timeout_s": 600,
                **({} if default_threads else {"omp_num_threads": 1}),
            },
        }
    )


def torchscale(argv: Sequence[str], env: dict[str, str]) -> str:
    code, output = run_child([sys.executable, "-m", "torchscale", *argv], env, TIMEOUT_S)
    if code != 0:
        tail = "\n".join(output.splitlines()[-25:])
        raise SystemExit(f"torchscale {' '.join(argv)} exited {code}:\n{tail}")
    return output


def measure(
    out: Path,
    models: Sequence[dict[str, Any]],
    sizes: Sequence[int],
    quick: bool,
    env: dict[str, str],
    default_threads: bool = False,
    batches: Sequence[int] = tuple(TUNED_BATCHES),
) -> str:
    path = out / f"config_w{'_'.join(map(str, sizes))}.yaml"
    path.write_text(config(models, sizes, quick, default_threads, batches), encoding="utf-8")
    return torchscale(["benchmark", "-c", str(path), "-o", str(out)], env)


def comm(out: Path, ranks: int, env: dict[str, str]) -> None:
    """`torchscale comm`: all_reduce at `ranks` ranks, into the experiment's comm/."""
    argv = ["comm", "--device", "cpu", "--gpus", str(ranks), "--max-bytes", "16M"]
    torchscale([*argv, "-o", str(out), "--name", EXPERIMENT], env)


def forecast_ids(root: Path) -> set[str]:
    return {f.id for f in read_forecasts(root).forecasts}


def predict(root: Path, sizes: Sequence[int], env: dict[str, str]) -> set[str]:
    """The ids of the forecasts this predict made."""
    before = forecast_ids(root)
    torchscale(["predict", "-s", str(root), "--gpus", ",".join(map(str, sizes))], env)
    return forecast_ids(root) - before


def rows(root: Path, rounds: dict[str, set[str]]) -> list[Row]:
    stored = read_forecasts(root)
    by_id = {f.id: f for f in stored.forecasts}
    latest: dict[Any, str] = {}  # the key -> the last forecast made (the headline one)
    for forecast in sorted(stored.forecasts, key=lambda f: f.created_at):
        latest[forecast.key] = forecast.id
    made = {fid: name for name, ids in rounds.items() for fid in ids}
    out = []
    for score in stored.scores:
        forecast = by_id[score.forecast_id]
        out.append(
            Row(
                model=forecast.key.label,
                batch_size=forecast.key.batch_size,
                world_size=forecast.key.world_size,
                round=made.get(forecast.id, "?"),
                headline=latest[forecast.key] == forecast.id,
                step_s=score.forecast_step_s,
                low_s=forecast.step_s.low,
                high_s=forecast.step_s.high,
                measured_s=score.measured_step_s,
                error=score.error,
                inside=score.inside,
            )
        )
    return sorted(out, key=lambda r: (r.world_size, r.round, r.model, r.batch_size))


@dataclass(frozen=True)
class OtherWork:
    """What else ran during the measured cells, from each cell's telemetry (HostLoad): the
    most cores other processes kept busy, in which cell, and the cells its `busy` flag marks
    (other processes >= 0.25 core per rank and fewer idle cores than ranks)."""

    most_cores: float
    most_in: str
    busy_cells: list[str]


def other_work(root: Path) -> OtherWork | None:
    """The load average after the run counts the run's own 3 and 4 ranks on 2 cores; this is
    what each cell saw besides itself."""
    from torchscale.offline.results.documents import read_cell

    most: tuple[float, str] | None = None
    busy: list[str] = []
    for path in sorted((root / "cells").glob("*.json")):
        result = read_cell(path).doc
        if result is None or result.telemetry is None or not result.telemetry.hosts:
            continue
        for host in result.telemetry.hosts:
            if host.other_cores is not None and (most is None or host.other_cores > most[0]):
                most = (host.other_cores, result.cell.id)
            if host.busy and result.cell.id not in busy:
                busy.append(result.cell.id)
    return None if most is None else OtherWork(most[0], most[1], busy)


def ms(value: float | None) -> str:
    return "?" if value is None else f"{value * 1e3:.1f}"


def summary(chosen: Sequence[Row]) -> tuple[float | None, float | None]:
    """(median absolute error, coverage) of `chosen`; None of nothing."""
    if not chosen:
        return None, None
    return (
        statistics.median(abs(r.error) for r in chosen),
        sum(r.inside for r in chosen) / len(chosen),
    )


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f} %"


def report(
    found: Sequence[Row],
    load_before: str,
    load_after: str,
    busy: bool,
    others: OtherWork | None = None,
) -> list[str]:
    lines = [
        f"{'model':<14} {'ranks':>5} {'from':>8}  {'forecast ms [interval]':<26} "
        f"{'measured':>8} {'error':>8}  held",
    ]
    for r in found:
        interval = f"{ms(r.step_s)} [{ms(r.low_s)}, {ms(r.high_s)}]"
        mark = "" if r.headline else "  (superseded)"
        lines.append(
            f"{f'{r.model} b{r.batch_size}':<14} {r.world_size:>5} {r.round:>8}  {interval:<26} "
            f"{ms(r.measured_s):>8} "
            f"{r.error * 100:>+7.1f}%  {'inside' if r.inside else 'outside'}{mark}"
        )
    headline = [r for r in found if r.headline]
    lines.append("")
    lines.append("headline forecasts (the latest before each measurement), by ranks forecast:")
    for size in sorted({r.world_size for r in headline}):
        at = [r for r in headline if r.world_size == size]
        real = [r for r in at if r.model in REAL_WORK]
        sleep = [r for r in at if r.model not in REAL_WORK]
        median, coverage = summary(at)
        lines.append(
            f"  {size} ranks: {len(at)} forecasts, median |error| {pct(median)} "
            f"(real work {pct(summary(real)[0])}, sleep {pct(summary(sleep)[0])}), "
            f"intervals held {pct(coverage)}"
        )
    median, coverage = summary(headline)
    lines.append(
        f"  all: {len(headline)} forecasts, median |error| {pct(median)}, "
        f"intervals held {pct(coverage)}"
    )
    superseded = [r for r in found if not r.headline]
    for made in sorted({r.round for r in superseded}):
        for size in sorted({r.world_size for r in superseded if r.round == made}):
            at = [r for r in superseded if r.round == made and r.world_size == size]
            median, coverage = summary(at)
            lines.append(
                f"  superseded, round '{made}' ({ROUNDS.get(made, '?')}), {size} ranks: "
                f"{len(at)} forecasts, median |error| {pct(median)}, intervals held "
                f"{pct(coverage)}"
            )
    lines.append("")
    lines.append(f"load before: {load_before}")
    lines.append(f"load after:  {load_after}")
    if others is not None:
        lines.append(
            f"other processes during the cells: up to {others.most_cores:.2f} cores busy "
            f"({others.most_in}); busy by its telemetry: {', '.join(others.busy_cells) or 'none'}"
        )
    if busy:
        lines.append(
            f"beside other work: noise, no verdict (1-min load above {os.cpu_count()} cores "
            "before the run, or other processes busy during a cell)"
        )
    else:
        lines.append("verdict on a quiet machine: " + "; ".join(verdicts(headline)))
    return lines


def verdicts(headline: Sequence[Row], coverage_shown: bool = False) -> list[str]:
    """Each target against `headline` forecasts: 'met', 'missed', or 'not measured' for a
    target world size with none; the coverage's own figure in it when `coverage_shown`."""
    out = []
    for size, target in sorted(TARGETS.items()):
        median = summary([r for r in headline if r.world_size == size])[0]
        said = "not measured" if median is None else "met" if median <= target else "missed"
        out.append(f"median <= {target:.0%} at {size} ranks: {said}")
    coverage = summary(headline)[1]
    if coverage is not None:
        held = "met" if coverage >= COVERAGE_TARGET else "missed"
        figure = f" ({pct(coverage)})" if coverage_shown else ""
        out.append(f"coverage >= {COVERAGE_TARGET:.0%}{figure}: {held}")
    return out


@dataclass(frozen=True)
class Run:
    """One whole protocol (1 rank -> 2 -> 3 and 4) into its own experiment folder."""

    rows: list[Row]
    load_before: str
    load_after: str
    busy: bool  # beside other work: no verdict from it
    others: OtherWork | None


def wait_for_quiet(limit_s: float = 180.0) -> None:
    """Let the 1-minute load fall to the core count (a run just ended leaves its own 4 ranks
    in it) before the next run is judged by it; after `limit_s` the run goes on, and is judged
    busy if the load is still high."""
    cores = os.cpu_count() or 1
    deadline = time.monotonic() + limit_s
    while os.getloadavg()[0] > cores and time.monotonic() < deadline:
        time.sleep(5.0)


def one_run(out: Path, args: argparse.Namespace, env: dict[str, str]) -> Run:
    root = out / EXPERIMENT
    out.mkdir(parents=True, exist_ok=True)
    models = [SLEEP_MODEL] if args.quick else HELD_OUT_MODELS if args.held_out else MODELS
    batches = batches_of(args)
    load_before, first_load = uptime(), os.getloadavg()[0]
    rounds: dict[str, set[str]] = {}
    try:
        print(f"measuring 1 rank, and all_reduce at 2 ranks, into {root}", flush=True)
        measure(out, models, [1], args.quick, env, args.default_threads, batches)
        comm(out, 2, env)
        rounds["1"] = predict(root, [2] if args.quick else [2, 3, 4], env)
        print(f"round '1': {len(rounds['1'])} forecasts; measuring 2 ranks", flush=True)
        measure(out, models, [2], args.quick, env, args.default_threads, batches)
        if not args.quick:
            rounds["1,2"] = predict(root, [3, 4], env)
            print(
                f"round '1,2': {len(rounds['1,2'])} forecasts; all_reduce at 3 and 4 ranks",
                flush=True,
            )
            for size in (3, 4):
                comm(out, size, env)
            rounds["1,2+comm"] = predict(root, [3, 4], env)
            print(
                f"round '1,2+comm': {len(rounds['1,2+comm'])} forecasts; measuring 3 and 4 ranks",
                flush=True,
            )
            measure(out, models, [3, 4], args.quick, env, args.default_threads, batches)
    except (KeyboardInterrupt, Stopped):
        raise SystemExit(f"stopped; what was measured is in {root}") from None
    others = other_work(root)
    # the load after counts this run's own 3 and 4 ranks: the judge of other work is the load
    # before and what each cell's telemetry saw besides its ranks
    busy = first_load > (os.cpu_count() or 1) or bool(others and others.busy_cells)
    return Run(rows(root, rounds), load_before, uptime(), busy, others)


def pooled(runs: Sequence[Run]) -> list[str]:
    """Several runs: each one's verdict, then the headline forecasts of the quiet runs pooled
    (a run-to-run shift of this host moves one run's three forecasts at once)."""
    quiet = [r for r in runs if not r.busy]
    lines = ["", f"pooled over {len(runs)} runs, {len(quiet)} of them quiet:"]
    headline = [row for r in quiet for row in r.rows if row.headline]
    if not headline:
        why = "no scored forecast in the quiet runs" if quiet else "no quiet run"
        return [*lines, f"  {why}: no verdict"]
    for size in sorted({row.world_size for row in headline}):
        at = [row for row in headline if row.world_size == size]
        median, coverage = summary(at)
        lines.append(
            f"  {size} ranks: {len(at)} forecasts, median |error| {pct(median)}, "
            f"intervals held {pct(coverage)}"
        )
    meeting = sum(all(v.endswith("met") for v in verdict_of(r.rows)) for r in quiet)
    lines.append(f"  quiet runs meeting every target on their own: {meeting} of {len(quiet)}")
    pooled_verdicts = verdicts(headline, coverage_shown=True)
    lines.append("verdict on the quiet runs pooled: " + "; ".join(pooled_verdicts))
    return lines


def verdict_of(found: Sequence[Row]) -> list[str]:
    """One run's verdicts, on its headline forecasts (what `report` says of it)."""
    return verdicts([r for r in found if r.headline])


def batches_of(args: argparse.Namespace) -> list[int]:
    return HELD_OUT_BATCHES if args.held_out else TUNED_BATCHES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sleep model, 1 -> 2 ranks only")
    parser.add_argument(
        "--held-out",
        action="store_true",
        help="configurations the forecast model was not tuned on, reported apart",
    )
    parser.add_argument(
        "--default-threads",
        action="store_true",
        help="each sweep's default intra-op threads (2 at 1 rank here) instead of 1 everywhere",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="the whole protocol this many times, each into its own folder, then pooled",
    )
    parser.add_argument("--out", type=Path, help="results folder (kept); default: a temporary one")
    parser.add_argument("--json", type=Path, help="also write the rows and loads to this file")
    args = parser.parse_args()
    if args.runs < 1:
        raise SystemExit("--runs: at least 1")
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    out = args.out or Path(tempfile.mkdtemp(prefix="prediction_accuracy_"))
    folders = [out] if args.runs == 1 else [out / f"run{k + 1}" for k in range(args.runs)]
    taken = [f / EXPERIMENT for f in folders if (f / EXPERIMENT).exists()]
    if taken:
        raise SystemExit(
            f"{taken[0]} exists: pick another --out (scores from an earlier run would mix in)"
        )
    if args.held_out and args.quick:
        raise SystemExit("--held-out and --quick: choose one")
    env = child_env()
    runs: list[Run] = []
    tuned = "held out (never tuned on)" if args.held_out else "tuned on"
    print(f"configurations: {tuned}, batch {', '.join(map(str, batches_of(args)))}")
    for k, folder in enumerate(folders):
        if k:
            wait_for_quiet()
        run = one_run(folder, args, env)
        runs.append(run)
        if args.runs > 1:
            print(f"\nrun {k + 1} of {args.runs}:")
        print("\n".join(report(run.rows, run.load_before, run.load_after, run.busy, run.others)))
    if args.runs > 1:
        print("\n".join(pooled(runs)))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "rows": [asdict(row) for r in runs for row in r.rows],
                    "cores": os.cpu_count(),
                    "held_out": args.held_out,
                    "batches": batches_of(args),
                    "runs": [
                        {
                            "rows": [asdict(row) for row in r.rows],
                            "load_before": r.load_before,
                            "load_after": r.load_after,
                            "busy": r.busy,
                            "other_cores_max": r.others.most_cores if r.others else None,
                            "busy_cells": r.others.busy_cells if r.others else [],
                        }
                        for r in runs
                    ],
                },
                indent=2,
            ),
            encoding="utf-8",
        )
    if args.out is None:
        shutil.rmtree(out, ignore_errors=True)
    else:
        print(f"results: {out}")


if __name__ == "__main__":
    main()
