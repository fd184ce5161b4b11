"""How well does torchscale's one diagnosis name stragglers? Measured, not assumed (issue 38).

Runs `torchscale profile` on CPU ranks, each run its own process, over a grid: an injected
delay (`--inject-delay RANK:PHASE:MS`, on the last rank) of each size in DELAYS ms, in each
phase of PHASES, at each rank count of RANKS, for each model of MODELS, plus one balanced run
(no delay) per model x ranks; all of it REPEATS times (the cases shuffled within each repeat,
seeded, so a drift of the machine does not line up with one case), in each condition of
CONDITIONS:
- quiet: no load started by this script. Other work on the machine during it is not quiet:
  its rates are then noise, and the output says so beside the load average;
- hogs: two busy-loop processes (`python -c "while True: pass"`, one core each) for the whole
  condition, killed on the way out (also on Ctrl-C, SIGTERM or SIGHUP).

After each run it reads the run's `analysis.json` (`diagnosis.straggler`: named, rank, phase,
summary, withdrawn_by; `diagnosis.caveat`: the busy-machine caveat or null) and `result.json`
beside it (`telemetry.hosts[].busy`: whether the run's own telemetry saw other work). A delay
run is right when a straggler is named with the injected rank and phase; else wrong rank,
wrong phase, or missed (nobody named). A balanced run is clean when nobody is named; a name
there is wrong, and with hogs it must carry the caveat. Every run's record is written as it
ends (`--json FILE`), and an interrupted measurement still prints what it has.

Targets (issue 38), each judged by its 95 % Clopper-Pearson interval: met (the interval
clears the target), missed (it lies below) or not settled (it straddles the target):
- a 40 ms delay named right in >= 95 % of quiet runs, and >= 90 % with two CPU hogs;
- balanced runs name nobody in >= 95 % of quiet runs; with hogs, every name carries the
  busy-machine caveat (a rule: one name without it misses it).

    python benchmarks/straggler_detection.py [--repeats 3] [--delays 20,40,60] \
        [--phases forward,backward] [--ranks 2,4] [--models tiny-mlp,tiny-gpt2] \
        [--conditions quiet,hogs] [--batch-size 8] [--steps 12] [--profile-steps 10] \
        [--keep] [--json runs.json]
    python benchmarks/straggler_detection.py --load runs.json    # the tables of saved runs
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
STOP_GRACE_S = 30.0  # torchscale takes its torchrun down on SIGTERM; then SIGKILL
HOGS = 2  # busy processes of the hogs condition
TARGET_DELAY_MS = 40.0  # the delay the targets speak of
TARGETS = {"quiet": 0.95, "hogs": 0.90}  # share of TARGET_DELAY_MS runs named right
BALANCED_CLEAN = 0.95  # share of quiet balanced runs naming nobody


@dataclass(frozen=True)
class Case:
    """One cell of the grid: a model at a rank count, with a delay or balanced."""

    model: str
    ranks: int
    delay_ms: float | None = None  # None: balanced
    phase: str | None = None

    @property
    def injected_rank(self) -> int:
        return self.ranks - 1

    def label(self) -> str:
        what = "balanced" if self.delay_ms is None else f"{self.delay_ms:g} ms {self.phase}"
        return f"{self.model} x{self.ranks} {what}"


def grid(args: argparse.Namespace) -> list[Case]:
    cases: list[Case] = []
    for model in args.models:
        for ranks in args.ranks:
            cases.append(Case(model, ranks))
            cases += [
                Case(model, ranks, delay, phase) for delay in args.delays for phase in args.phases
            ]
    return cases


# ------------------------------------------------------------------------ processes


class Stopped(Exception):
    """SIGTERM or SIGHUP: unwind like Ctrl-C so every process started is stopped."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signal.Signals(signum).name)


def _kill_group(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM the child's process group (it leads its own session), then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace_s)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        proc.wait()


@contextmanager
def cpu_hogs(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` busy Python processes (one core each), each in its own session, always killed
    on the way out (SIGKILL: a busy loop has nothing to clean up)."""
    hogs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            hogs.append(
                subprocess.Popen(
                    [sys.executable, "-c", "while True: pass"],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
        yield hogs
    finally:
        for hog in hogs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(hog.pid, signal.SIGKILL)
            hog.wait()


def run_child(argv: Sequence[str], env: dict[str, str], timeout_s: float) -> tuple[int, str]:
    """Run `argv` in its own session: its exit status and output (124 past `timeout_s`); on
    any exception (Ctrl-C, SIGTERM) its group is stopped before the exception goes on."""
    proc = subprocess.Popen(
        list(argv),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc, STOP_GRACE_S)
        output, _ = proc.communicate()
        return 124, output.decode("utf-8", "replace")
    except BaseException:
        _kill_group(proc, STOP_GRACE_S)
        raise
    return proc.returncode, output.decode("utf-8", "replace")


# ------------------------------------------------------------------------ runs


def outcome(case: Case, named: bool, rank: int | None, phase: str | None) -> str:
    if case.delay_ms is None:
        return "named" if named else "clean"
    if not named:
        return "missed"
    if rank != case.injected_rank:
        return "wrong rank"
    return "right" if phase == case.phase else "wrong phase"


def profile_run(
    args: argparse.Namespace, case: Case, workdir: Path, env: dict[str, str], index: int
) -> dict[str, Any]:
    """One `torchscale profile` of `case`; the diagnosis' verdict as a record."""
    out = workdir / f"run{index:04d}"
    argv = [
        sys.executable,
        "-m",
        "torchscale",
        "profile",
        "--gpus",
        str(case.ranks),
        "--model",
        case.model,
        "--batch-size",
        str(args.batch_size),
        "--steps",
        str(args.steps),
        "--profile-steps",
        str(args.profile_steps),
        "--device",
        "cpu",
        "--tool",
        "torch",
        "-o",
        str(out),
        "--name",
        "straggler",
    ]
    if case.delay_ms is not None:
        argv += ["--inject-delay", f"{case.injected_rank}:{case.phase}:{case.delay_ms:g}"]
    started = time.perf_counter()
    code, output = run_child(argv, env, args.timeout)
    record: dict[str, Any] = {
        "model": case.model,
        "ranks": case.ranks,
        "delay_ms": case.delay_ms,
        "phase": case.phase,
        "injected_rank": None if case.delay_ms is None else case.injected_rank,
        "exit_code": code,
        "wall_s": round(time.perf_counter() - started, 2),
        "load_1m": os.getloadavg()[0],  # this run's minute: its ranks, hogs, everyone else's
    }
    found = sorted(out.glob("*/profile/*/analysis.json"))
    if not found:
        record.update(outcome="failed", error=output[-2000:])
        return record
    analysis = json.loads(found[0].read_text(encoding="utf-8"))
    diagnosis = analysis.get("diagnosis") or {}
    verdict = diagnosis.get("straggler") or {}
    result_file = found[0].with_name("result.json")
    result = json.loads(result_file.read_text(encoding="utf-8")) if result_file.exists() else {}
    hosts = (result.get("telemetry") or {}).get("hosts") or []
    named = bool(verdict.get("named"))
    record.update(
        outcome=outcome(case, named, verdict.get("rank"), verdict.get("phase")),
        named=named,
        named_rank=verdict.get("rank"),
        named_phase=verdict.get("phase"),
        candidate_rank=verdict.get("candidate_rank"),
        p_value=verdict.get("p_value"),
        gap_ms=_ms((verdict.get("gap_s") or {}).get("value")),
        withdrawn_by=verdict.get("withdrawn_by"),
        # result schema 12: the gap passed but the host took it (the rank waited for a CPU)
        host_bound=verdict.get("host_bound"),
        host_wait_ms=_ms((verdict.get("host_wait_s") or {}).get("value")),
        summary=verdict.get("summary"),
        caveat=diagnosis.get("caveat"),
        # the run's result holds the same diagnosis (result schema 10)
        result_agrees=(result.get("diagnosis") or {}).get("straggler") == verdict,
        busy=any(bool(h.get("busy")) for h in hosts) if hosts else None,
        other_cores=max((h.get("other_cores") or 0.0 for h in hosts), default=None),
        step_ms=_ms((diagnosis.get("step_s") or {}).get("value")),
    )
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)
    return record


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1e3, 3)


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "MASTER_", "PET_"))}
    # this checkout first, then whatever the caller's PYTHONPATH held
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _save(path: Path | None, data: dict[str, Any]) -> None:
    if path is None:
        return
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(data, indent=1), encoding="utf-8")
    part.replace(path)


def measure(args: argparse.Namespace, workdir: Path, data: dict[str, Any]) -> None:
    """Every condition in turn; records appended to `data["runs"]` (and saved) as runs end."""
    import numpy as np

    cases = grid(args)
    env = child_env()
    rng = np.random.default_rng(args.seed)
    total = len(cases) * args.repeats * len(args.conditions)
    index = 0
    for condition in args.conditions:
        before = os.getloadavg()
        data["conditions"][condition] = {"load_before": before, "load_after": None}
        print(
            f"\n{condition}: {len(cases)} cases x {args.repeats} repeat(s); 1-min load average "
            f"before: {before[0]:.2f} (5-min {before[1]:.2f}, {os.cpu_count()} cores)",
            flush=True,
        )
        with cpu_hogs(HOGS if condition == "hogs" else 0):
            for repeat in range(args.repeats):
                for k in rng.permutation(len(cases)):
                    case = cases[int(k)]
                    index += 1
                    record = profile_run(args, case, workdir, env, index)
                    record.update(condition=condition, repeat=repeat)
                    data["runs"].append(record)
                    _save(args.json, data)
                    named = (
                        f"named rank {record.get('named_rank')} {record.get('named_phase')}"
                        if record.get("named")
                        else "nobody named"
                    )
                    print(
                        f"  [{index}/{total}] {case.label()}: {record['outcome']} ({named}"
                        f"{', caveat' if record.get('caveat') else ''}), "
                        f"{record['wall_s']:.0f} s, load {record['load_1m']:.2f}",
                        flush=True,
                    )
            after = os.getloadavg()
            data["conditions"][condition]["load_after"] = after
        print(
            f"{condition}: 1-min load average after: {after[0]:.2f} (5-min {after[1]:.2f}"
            f"{', hogs still running' if condition == 'hogs' else ''})",
            flush=True,
        )
        _save(args.json, data)


# ------------------------------------------------------------------------ report


def interval(hits: int, n: int) -> tuple[float, float]:
    """95 % Clopper-Pearson interval of hits / n."""
    from scipy.stats import binomtest

    ci = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="exact")
    return float(ci.low), float(ci.high)


def rate(hits: int, n: int) -> str:
    if not n:
        return "0/0 (no runs)"
    low, high = interval(hits, n)
    return f"{hits}/{n} = {hits / n:.1%} (95 % interval {low:.1%} to {high:.1%})"


def judge(hits: int, n: int, target: float) -> str:
    if not n:
        return "not measured"
    low, high = interval(hits, n)
    if low >= target:
        return "met"
    if high < target:
        return "missed"
    return "not settled"


def runs_to_settle(target: float) -> int:
    """The fewest runs, all of them right, whose interval clears `target`."""
    n = 1
    while interval(n, n)[0] < target:
        n += 1
    return n


def _count(runs: list[dict[str, Any]], **where: Any) -> list[dict[str, Any]]:
    return [r for r in runs if all(r.get(k) == v for k, v in where.items())]


def _sort_key(value: Any) -> tuple[int, Any]:
    return (0, value) if value is not None else (1, 0)


def report_condition(condition: str, runs: list[dict[str, Any]], info: dict[str, Any]) -> None:
    before, after = info.get("load_before"), info.get("load_after")
    loads = sorted(r["load_1m"] for r in runs)
    print(f"\n=== {condition} ===")
    print(
        f"1-min load average: before {before[0]:.2f}" if before else "1-min load: not recorded",
        end="",
    )
    print(f", after {after[0]:.2f}" if after else ", after: not recorded (interrupted)", end="")
    if loads:
        print(f"; at the runs' ends median {loads[len(loads) // 2]:.2f}, max {loads[-1]:.2f}")
    else:
        print()
    busy = [r for r in runs if r.get("busy")]
    judged = [r for r in runs if r.get("busy") is not None]
    ranks_max = max((r["ranks"] for r in runs), default=0)
    if condition == "quiet":
        print(
            "WARNING: 'quiet' means no load started by this script. Other work on this machine "
            f"during it (each run's ranks alone make a load up to {ranks_max}) makes its rates "
            "noise, not a quiet machine's; the runs' own telemetry judged "
            f"{len(busy)} of {len(judged)} busy."
        )
    else:
        print(
            f"{HOGS} CPU hog process(es) ran throughout; the runs' own telemetry judged "
            f"{len(busy)} of {len(judged)} busy."
        )
    failed = _count(runs, outcome="failed")
    done = [r for r in runs if r["outcome"] != "failed"]
    delayed = [r for r in done if r["delay_ms"] is not None]
    if delayed:
        print("\ninjected delay (on the last rank): named right / runs")
        head = ("delay", "phase", "ranks", "model", "right", "wrong rank", "wrong phase", "missed")
        rows = []
        keys = sorted(
            {(r["delay_ms"], r["phase"], r["ranks"], r["model"]) for r in delayed},
            key=lambda k: (k[0], k[1], k[2], k[3]),
        )
        for delay, phase, ranks, model in keys:
            cell = _count(delayed, delay_ms=delay, phase=phase, ranks=ranks, model=model)
            rows.append(
                (
                    f"{delay:g} ms",
                    phase,
                    str(ranks),
                    model,
                    f"{len(_count(cell, outcome='right'))}/{len(cell)}",
                    *(str(len(_count(cell, outcome=o))) for o in ("wrong rank", "wrong phase")),
                    str(len(_count(cell, outcome="missed"))),
                )
            )
        _table(head, rows)
        print("totals per delay size:")
        for delay in sorted({r["delay_ms"] for r in delayed}):
            cell = _count(delayed, delay_ms=delay)
            counts = ", ".join(
                f"{o} {len(_count(cell, outcome=o))}"
                for o in ("wrong rank", "wrong phase", "missed")
            )
            print(
                f"  {delay:g} ms: right {rate(len(_count(cell, outcome='right')), len(cell))}; "
                f"{counts}"
            )
    balanced = [r for r in done if r["delay_ms"] is None]
    if balanced:
        print(
            "\nbalanced (no delay): named / runs, caveat on the named, and runs whose gap "
            "passed but was the rank's wait for a CPU (host-bound: nobody named)"
        )
        rows = []
        for ranks, model in sorted({(r["ranks"], r["model"]) for r in balanced}):
            cell = _count(balanced, ranks=ranks, model=model)
            named = _count(cell, named=True)
            caveated = [r for r in named if r.get("caveat")]
            held = _count(cell, host_bound=True)
            rows.append(
                (
                    str(ranks),
                    model,
                    f"{len(named)}/{len(cell)}",
                    f"{len(caveated)}/{len(named)}",
                    f"{len(held)}/{len(cell)}",
                )
            )
        _table(("ranks", "model", "named", "caveat on named", "host-bound"), rows)
        named = _count(balanced, named=True)
        caveated = [r for r in named if r.get("caveat")]
        held = _count(balanced, host_bound=True)
        print(
            f"totals: named {rate(len(named), len(balanced))}; caveat on the named "
            f"{len(caveated)}/{len(named)}; host-bound {len(held)}/{len(balanced)}"
        )
    if failed:
        print(f"\nfailed runs (no analysis; left out of every rate): {len(failed)}")
        for r in failed:
            tail = (r.get("error") or "").strip().splitlines()[-1:] or [""]
            print(f"  {_label(r)}: exit {r['exit_code']}: {tail[0][:200]}")
    held = [r for r in done if r.get("host_bound")]
    if held:
        print("\nruns whose gap was the rank's wait for a CPU (host-bound), in their own words:")
        for r in held:
            print(f"  {_label(r)} (repeat {r.get('repeat')}): {r['outcome']}: {r.get('summary')}")
    wrong = [r for r in done if r["outcome"] not in ("right", "clean")]
    if wrong:
        print("\nruns not right, with the diagnosis' own words:")
        for r in wrong:
            withdrawn = f" [withdrawn by: {r['withdrawn_by']}]" if r.get("withdrawn_by") else ""
            print(
                f"  {_label(r)} (repeat {r.get('repeat')}): {r['outcome']}: "
                f"{r.get('summary')}{withdrawn}"
            )


def _label(r: dict[str, Any]) -> str:
    what = "balanced" if r["delay_ms"] is None else f"{r['delay_ms']:g} ms {r['phase']}"
    return f"{r['model']} x{r['ranks']} {what}"


def _table(head: Sequence[str], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    for row in (tuple(head), *rows):
        print("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def report_targets(runs: list[dict[str, Any]]) -> None:
    print("\ntargets (issue 38), 95 % Clopper-Pearson intervals over the runs:")
    done = [r for r in runs if r["outcome"] != "failed"]
    for condition, target in TARGETS.items():
        cell = _count(done, condition=condition, delay_ms=TARGET_DELAY_MS)
        right = len(_count(cell, outcome="right"))
        print(
            f"  {condition}: a {TARGET_DELAY_MS:g} ms delay named right >= {target:.0%}: "
            f"{rate(right, len(cell))}: {judge(right, len(cell), target)}"
        )
    cell = _count(done, condition="quiet", delay_ms=None)
    clean = len(_count(cell, named=False))
    print(
        f"  quiet: balanced runs name nobody >= {BALANCED_CLEAN:.0%}: {rate(clean, len(cell))}: "
        f"{judge(clean, len(cell), BALANCED_CLEAN)}"
    )
    cell = _count(done, condition="hogs", delay_ms=None)
    named = _count(cell, named=True)
    bare = [r for r in named if not r.get("caveat")]
    verdict = "not measured" if not cell else "missed" if bare else "met"
    print(
        f"  hogs: every name in a balanced run carries the busy-machine caveat: "
        f"{len(named) - len(bare)}/{len(named)} named carry it; named without it "
        f"{rate(len(bare), len(cell))}: {verdict}"
    )
    print(
        f"  (all runs right, an interval clears 95 % from {runs_to_settle(0.95)} runs and 90 % "
        f"from {runs_to_settle(0.90)} runs; fewer runs read 'not settled' at best)"
    )


def report(data: dict[str, Any]) -> None:
    grid_args = data.get("grid", {})
    print(
        f"\nstraggler detection: torchscale profile on CPU ranks, batch "
        f"{grid_args.get('batch_size')}, {grid_args.get('steps')} measured + "
        f"{grid_args.get('profile_steps')} traced steps, delay injected on the last rank; "
        f"{len(data['runs'])} run(s)"
    )
    for condition in data.get("conditions", {}):
        runs = _count(data["runs"], condition=condition)
        if runs:
            report_condition(condition, runs, data["conditions"][condition])
    report_targets(data["runs"])
    disagree = [r for r in data["runs"] if r.get("result_agrees") is False]
    if disagree:
        print(
            f"\nNOTE: {len(disagree)} run(s) whose result.json holds another straggler verdict "
            "than analysis.json"
        )


def merge_saved(saved: list[dict[str, Any]]) -> dict[str, Any]:
    """Pool several saved measurements (e.g. a balanced-only top-up beside a delay grid):
    the runs together, each condition's load the lowest before and the highest after: the
    whole range the parts saw, never a quieter machine than the busiest part had."""
    if len(saved) == 1:
        return saved[0]
    merged: dict[str, Any] = {"grid": saved[0].get("grid", {}), "conditions": {}, "runs": []}
    for data in saved:
        merged["runs"] += data["runs"]
        for condition, info in data.get("conditions", {}).items():
            pooled = merged["conditions"].setdefault(
                condition, {"load_before": None, "load_after": None}
            )
            for key, pick in (("load_before", min), ("load_after", max)):
                if info.get(key) and pooled[key]:
                    pooled[key] = pick(pooled[key], info[key], key=lambda load: load[0])
                elif info.get(key):
                    pooled[key] = info[key]
    return merged


def _csv(kind: type) -> Any:
    def parse(text: str) -> list[Any]:
        return [kind(item) for item in text.split(",") if item.strip()]

    return parse


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs of each case per condition")
    parser.add_argument(
        "--delays", type=_csv(float), default=[20.0, 40.0, 60.0], help="ms, comma-separated"
    )
    parser.add_argument("--phases", type=_csv(str), default=["forward", "backward"])
    parser.add_argument("--ranks", type=_csv(int), default=[2, 4])
    parser.add_argument("--models", type=_csv(str), default=["tiny-mlp", "tiny-gpt2"])
    parser.add_argument("--conditions", type=_csv(str), default=["quiet", "hogs"])
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--steps", type=int, default=12, help="measured steps per run")
    parser.add_argument("--profile-steps", type=int, default=10, help="traced steps per rank")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a run may take")
    parser.add_argument("--seed", type=int, default=0, help="the order of cases in a repeat")
    parser.add_argument("--keep", action="store_true", help="keep the runs' output directory")
    parser.add_argument("--json", type=Path, help="write every run's record here, as runs end")
    parser.add_argument(
        "--load",
        type=Path,
        nargs="+",
        help="print the tables of saved records instead (several files are pooled)",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    if args.load:
        report(merge_saved([json.loads(path.read_text(encoding="utf-8")) for path in args.load]))
        return
    unknown = set(args.conditions) - {"quiet", "hogs"}
    if unknown:
        parser.error(f"--conditions: quiet or hogs, not {', '.join(sorted(unknown))}")
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    data: dict[str, Any] = {
        "grid": {
            "repeats": args.repeats,
            "delays": args.delays,
            "phases": args.phases,
            "ranks": args.ranks,
            "models": args.models,
            "batch_size": args.batch_size,
            "steps": args.steps,
            "profile_steps": args.profile_steps,
            "seed": args.seed,
        },
        "cores": os.cpu_count(),
        "conditions": {},
        "runs": [],
    }
    workdir = Path(tempfile.mkdtemp(prefix="straggler-detection-"))
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
        raise SystemExit(f"{stopped}: every process ended; the tables hold the runs so far")


if __name__ == "__main__":
    main()
