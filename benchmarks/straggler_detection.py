r"""Does torchscale's diagnosis name stragglers of every kind, and the right kind? Measured.

Every straggler here is written as a user writes one: a model plug-in of
benchmarks/straggler_scenarios.py, never a torchscale knob (no --inject-delay). On the target
rank (the last) a scenario adds extra time of a chosen size every step; the other ranks train
normally. The scenarios, and the kind the verdict should give:

  balanced           nobody slow                                       -> nobody named
  sleep              a sleep in backward (an autograd Function)        -> compute
  compute-forward    real extra matmuls in forward, no sleep           -> compute
  compute-backward   real extra matmuls in backward, no sleep          -> compute
  input              each batch's __next__ sleeps (ModelBundle.batches) -> input
  host               a CPU hog pinned to the rank's core (duty cycle)   -> host
  communication      a DDP comm hook sleeps before allreduce           -> communication
                     (ModelBundle.ddp_comm_hook)

input and communication need ModelBundle fields (`batches`, `ddp_comm_hook`); with a torchscale
that lacks them they are left out, and the output says so.

Sizes are shares of the balanced step (--sizes, 10 to 60 %, default 30 %): for each model x
rank count x command the script first runs one balanced run (a second if the first fails; or
takes the balanced runs of saved records: --reuse-steps) and sets each scenario's extra ms =
share x the median step of the group's balanced runs so far (the grid's balanced runs join it,
so one noisy run on a shared machine does not size every case; each record keeps the step it
was sized on). The host hogs are sized on the balanced step's compute part (the
rank's time on a CPU). Each run is
its own `torchscale profile` (reads profile/*/analysis.json) or `torchscale benchmark` (reads
the cell's cells/*.json; its verdict comes from the phase timers) in its own process group, at
each rank count, REPEATS times, the cases shuffled within each repeat (seeded). The options
reach the plug-in as a benchmark config's model `options`, and as STRAGGLER_* environment
variables for `torchscale profile` (which takes no model options). From each run it reads
`diagnosis.straggler` (named, rank, kind, the rule that decided the kind, its one line, why
not named, the cross-checks that withdrew a name) and the diagnosis' busy-machine caveat, all
worded as every surface words them, and from the target rank's own record what it added (the
calibrated matmuls, the time it slept or burnt, the hog's duty).

Output (never wider than the terminal: COLUMNS): a confusion matrix per size (rows: the true
rank and kind of each scenario; columns: the target rank named with each kind, another rank
named, nobody named), the rate of right rank and right kind per true kind with 95 %
Clopper-Pearson intervals, judged at an extra time of 30 % of the step against the targets

  - right rank in >= 90 % of the runs of each kind, right kind in >= 80 %;
  - balanced runs name nobody in >= 95 %;

(met: the interval clears the target; missed: it lies below; not settled: it straddles), the
same split by command and rank count, the extra time each scenario actually made (the rank's
own measure, and the step against the balanced step), and every run not right in the
diagnosis' own words. The 1-min load average before, during and after says whether the machine
was quiet (other work makes the rates noise, and the output says so). Every run's record is
written as it ends (--json FILE); Ctrl-C, SIGTERM or SIGHUP stop the run in flight (its whole
process group; a host scenario's hog dies with its rank) and print what there is.

Runtime, on the 2-core development VM, nothing else running (2026-11-27, 24 traced steps): a
2-rank run 8-11 s, a 4-rank run 12-14 s; the default grid (7 scenarios x 2 rank counts x 2
commands x 3 repeats = 84 runs, + 4 calibration runs) 16 minutes (about 30 beside other
work). The estimate is printed at the start, and again from the calibration runs' own wall
times. At 3 repeats each kind has 12 runs at 30 % (compute 36, balanced 16): a
target can be missed with them, but settled as met only from 17 runs all right (80 %), 36
(90 %) or 72 (95 %); --repeats for more.

    python benchmarks/straggler_detection.py [--kinds balanced,sleep,compute-forward,...] \
        [--sizes 30] [--ranks 2,4] [--commands profile,benchmark] [--repeats 3] \
        [--models mlp] [--batch-size 8] [--steps 12] [--profile-steps 24] \
        [--bench-repeats 2] [--reuse-steps runs.json] [--keep] [--json runs.json]
    python benchmarks/straggler_detection.py --load runs.json    # the tables of saved runs
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# the benchmarks' shared child-process handling (benchmarks/child_runs.py), found beside this
# file however the script was started (`python benchmarks/...`, or imported by path in a test)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from child_runs import Stopped, run_child, stop

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import StragglerVerdict
from torchscale.contracts.thresholds import TRACED_STEPS
from torchscale.contracts.wording import say as words_of
from torchscale.contracts.wording.diagnosis_straggler import straggler_text

REPO = Path(__file__).resolve().parent.parent
SCENARIO_MODULE = "benchmarks.straggler_scenarios"
CALIBRATION_TRIES = 2  # balanced runs tried per group before its cases wait for the grid's
RECORDS_VERSION = 2  # version 1 (no key): records of the --inject-delay grid, not these

# scenario -> (plug-in factory, the kind the verdict should give; None: nobody named)
SCENARIOS: dict[str, tuple[str, str | None]] = {
    "balanced": ("balanced", None),
    "sleep": ("sleep", "compute"),
    "compute-forward": ("compute_forward", "compute"),
    "compute-backward": ("compute_backward", "compute"),
    "input": ("slow_input", "input"),
    "host": ("host", "host"),
    "communication": ("communication", "communication"),
}
KINDS = ("compute", "input", "host", "communication")
# scenarios that need a ModelBundle field some torchscale versions lack
NEEDS_FIELD = {"input": "batches", "communication": "ddp_comm_hook"}
# the user's model (benchmarks/straggler_scenarios.Net) in named shapes
MODELS: dict[str, dict[str, int]] = {
    "mlp": {"width": 512, "depth": 4},
    "mlp-large": {"width": 1024, "depth": 6},
}
COMMANDS = ("profile", "benchmark")
SHORT = {"communication": "comm"}

TARGET_SHARE = 0.30  # the extra time the targets speak of, as a share of the balanced step
RIGHT_RANK = 0.90
RIGHT_KIND = 0.80
BALANCED_CLEAN = 0.95
# seconds a run took on the 2-core development VM (another developer's work beside it), for
# the estimate printed before the calibration runs have measured this machine
EST_WALL_S = {("profile", 2): 16.0, ("benchmark", 2): 13.0}  # means of 21 and 26 runs
EST_WALL_S_PER_RANK = 4.5  # beyond those: 4 ranks took 16-23 s, 36-39 s under a load of 2.5


@dataclass(frozen=True)
class Case:
    """One cell of the grid: a scenario of a size, run by one command at a rank count."""

    command: str
    model: str
    ranks: int
    scenario: str
    share: float | None = None  # of the balanced step; None: balanced

    @property
    def target_rank(self) -> int:
        return self.ranks - 1

    @property
    def expected_kind(self) -> str | None:
        return SCENARIOS[self.scenario][1]

    @property
    def group(self) -> tuple[str, str, int]:
        return (self.command, self.model, self.ranks)

    def label(self) -> str:
        size = "" if self.share is None else f" {self.share:.0%}"
        return f"{self.command} {self.model} x{self.ranks} {self.scenario}{size}"


@dataclass(frozen=True)
class Balanced:
    """A group's balanced step, and the part of it a rank spends on a CPU (not waiting for its
    peers): what the scenarios' sizes are shares of, and what the host hogs are sized on."""

    step_ms: float
    busy_ms: float


class BalancedSteps:
    """The median of every balanced run of each group so far (the calibration run, then each
    balanced run of the grid): a noisy first run on a shared machine does not size every case."""

    def __init__(self) -> None:
        self.runs: dict[tuple[str, str, int], list[tuple[float, float]]] = {}

    def add(self, group: tuple[str, str, int], record: dict[str, Any]) -> None:
        if record.get("step_ms"):
            # the rank is on a CPU for its compute (and data) part; the rest it waits, for its
            # peers or inside the transfer (blocked, off the CPU): a hog takes nothing there
            work = record.get("compute_share")
            if work is None:
                work = 1.0 - (record.get("wait_share") or 0.0)
            self.runs.setdefault(group, []).append((record["step_ms"], record["step_ms"] * work))

    def get(self, group: tuple[str, str, int]) -> Balanced | None:
        runs = self.runs.get(group)
        if not runs:
            return None
        return Balanced(
            statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        )


def grid(args: argparse.Namespace) -> list[Case]:
    cases: list[Case] = []
    for command in args.commands:
        for model in args.models:
            for ranks in args.ranks:
                for scenario in args.kinds:
                    if scenario == "balanced":
                        cases.append(Case(command, model, ranks, scenario))
                    else:
                        cases += [
                            Case(command, model, ranks, scenario, share) for share in args.sizes
                        ]
    return cases


def missing_fields() -> dict[str, str]:
    """Scenario -> the ModelBundle field this torchscale lacks for it."""
    import dataclasses

    sys.path.insert(0, str(REPO))
    from torchscale.rank.models.bundle import ModelBundle

    have = {f.name for f in dataclasses.fields(ModelBundle)}
    return {s: f for s, f in NEEDS_FIELD.items() if f not in have}


def leftover_hogs(token: str) -> list[int]:
    """Processes still running whose command line carries `token` (a host scenario's hog is
    given its run's record path): SIGKILLed, by pid; their pids. None should ever be found."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if token.encode() in argv:
                found.append(int(entry.name))
    for pid in found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return found


# ------------------------------------------------------------------------ runs


def outcome(case: Case, named: bool, rank: int | None, kind: str | None) -> str:
    if case.expected_kind is None:
        return "named" if named else "nobody"
    if not named:
        return "nobody"
    if rank != case.target_rank:
        return "wrong rank"
    return "right" if kind == case.expected_kind else "wrong kind"


def _options(case: Case, extra_ms: float, step: Balanced | None, record: Path) -> dict[str, Any]:
    return {
        **MODELS[case.model],
        "extra_ms": round(extra_ms, 3),
        "step_ms": round(step.step_ms, 3) if step else 0.0,
        "busy_ms": round(step.busy_ms, 3) if step else 0.0,
        "target_rank": case.target_rank,
        "record": str(record),
    }


def _profile_argv(args: argparse.Namespace, case: Case, factory: str, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torchscale",
        "profile",
        "--gpus",
        str(case.ranks),
        "--model",
        factory,
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


def _benchmark_config(
    args: argparse.Namespace, case: Case, factory: str, options: dict[str, Any]
) -> dict[str, Any]:
    """The one-cell config a user writes, the scenario's options as the model's `options`."""
    return {
        "experiment_name": "straggler",
        "models": [{"name": factory, "label": case.scenario, "options": options}],
        "batch_sizes": [args.batch_size],
        "gpu_counts": [case.ranks],
        "device": "cpu",
        "training": {"precision": "fp32", "strategy": "ddp"},
        "measurement": {"warmup_steps": 3, "steps": args.steps, "repeats": args.bench_repeats},
        "launcher": {"cell_timeout_s": args.timeout},
        "profiling": {"enabled": False},
    }


def run_case(
    args: argparse.Namespace,
    case: Case,
    step: Balanced | None,
    workdir: Path,
    env: dict[str, str],
    index: int,
) -> dict[str, Any]:
    """One run of `case` (sized on `step`, its group's balanced step); the verdict as a record."""
    out = workdir / f"run{index:04d}"
    out.mkdir(parents=True)
    record_file = out / "scenario-record.json"
    extra_ms = 0.0 if case.share is None or step is None else case.share * step.step_ms
    options = _options(case, extra_ms, step, record_file)
    factory = f"{SCENARIO_MODULE}:{SCENARIOS[case.scenario][0]}"
    run_env = dict(env)
    if case.command == "profile":  # no model options on its command line: the environment
        argv = _profile_argv(args, case, factory, out)
        run_env |= {f"STRAGGLER_{k.upper()}": str(v) for k, v in options.items()}
    else:
        config = out / "config.yaml"  # JSON is YAML
        config.write_text(json.dumps(_benchmark_config(args, case, factory, options)), "utf-8")
        argv = [sys.executable, "-m", "torchscale", "benchmark", "-c", str(config)]
        argv += ["-o", str(out / "results")]
    started = time.perf_counter()
    code, output = run_child(argv, run_env, args.timeout)
    record: dict[str, Any] = {
        "command": case.command,
        "model": case.model,
        "ranks": case.ranks,
        "scenario": case.scenario,
        "share": case.share,
        "expected_kind": case.expected_kind,
        "target_rank": case.target_rank,
        "balanced_step_ms": step.step_ms if step else None,
        "balanced_busy_ms": step.busy_ms if step else None,
        "extra_ms": round(extra_ms, 3),
        "exit_code": code,
        "wall_s": round(time.perf_counter() - started, 2),
        "load_1m": os.getloadavg()[0],  # this run's minute: its ranks and everyone else's
    }
    hogs = leftover_hogs(str(record_file))
    if hogs:
        record["leftover_hogs"] = hogs
    with contextlib.suppress(OSError, ValueError):
        record["added"] = json.loads(record_file.read_text(encoding="utf-8"))
    if case.command == "profile":
        found = sorted(out.glob("*/profile/*/analysis.json"))
        result_file = found[0].with_name("result.json") if found else None
    else:
        found = sorted(out.glob("results/*/cells/*.json"))
        result_file = found[0] if found else None
    document = json.loads(found[0].read_text(encoding="utf-8")) if found else {}
    diagnosis = document.get("diagnosis") or {}
    if not diagnosis:
        record.update(outcome="failed", error=output[-2000:], reason=_failure(output))
        _clean(args, out)
        return record
    result = (
        json.loads(result_file.read_text(encoding="utf-8"))
        if result_file is not None and result_file.exists()
        else {}
    )
    verdict = diagnosis.get("straggler") or {}
    hosts = (result.get("telemetry") or {}).get("hosts") or []
    named = bool(verdict.get("named"))
    why_not = Finding.model_validate(verdict["why_not"]) if verdict.get("why_not") else None
    withdrawn = why_not.figures["by"] if why_not and why_not.code == "straggler.withdrawn" else None
    record.update(
        outcome=outcome(case, named, verdict.get("rank"), verdict.get("kind")),
        named=named,
        named_rank=verdict.get("rank"),
        named_kind=verdict.get("kind"),
        named_phase=verdict.get("phase"),
        kind_rule=_said(verdict.get("kind_rule")),
        not_named=words_of(why_not) if why_not is not None else None,
        candidate_rank=verdict.get("candidate_rank"),
        p_value=verdict.get("p_value"),
        gap_ms=_ms((verdict.get("gap_s") or {}).get("value")),
        host_wait_ms=_ms((verdict.get("host_wait_s") or {}).get("value")),
        withdrawn_by=withdrawn,
        summary=_line(verdict, diagnosis.get("ranks") or case.ranks),
        caveat=_said(diagnosis.get("busy")),
        source=diagnosis.get("source"),
        busy=any(bool(h.get("busy")) for h in hosts) if hosts else None,
        step_ms=_ms((diagnosis.get("step_s") or {}).get("value")),
        wait_share=_part_share(diagnosis, "wait_for_peers"),
        compute_share=_part_share(diagnosis, "compute"),
    )
    _clean(args, out)
    return record


def _said(stored: dict[str, Any] | None) -> str | None:
    """A finding stored as its code and figures, in words; None: none stored."""
    return words_of(Finding.model_validate(stored)) if stored else None


def _line(verdict: dict[str, Any], ranks: int) -> str | None:
    """The straggler's one line, as every surface prints it; None: no verdict stored."""
    return straggler_text(StragglerVerdict.model_validate(verdict), ranks) if verdict else None


def skipped(case: Case) -> dict[str, Any]:
    """The record of a case not run."""
    return {
        "command": case.command,
        "model": case.model,
        "ranks": case.ranks,
        "scenario": case.scenario,
        "share": case.share,
        "expected_kind": case.expected_kind,
        "target_rank": case.target_rank,
        "extra_ms": 0.0,
        "outcome": "skipped",
        "exit_code": None,
        "wall_s": 0.0,
        "load_1m": os.getloadavg()[0],
    }


def _clean(args: argparse.Namespace, out: Path) -> None:
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)


def _failure(output: str) -> str:
    """The line of a failed run's output that says why: its last error line, else its last."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or ["no output"])[-1][:300]


def _part_share(diagnosis: dict[str, Any], name: str) -> float | None:
    """The share of the step of the diagnosis' part `name` (compute, wait_for_peers, ...)."""
    for part in diagnosis.get("parts") or []:
        if part.get("name") == name:
            return (part.get("share") or {}).get("value")
    return None


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1e3, 3)


def child_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RANK", "MASTER_", "PET_", "STRAGGLER_"))
    }
    # this checkout first (torchscale, and benchmarks/ for the plug-ins), then the caller's
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _save(path: Path | None, data: dict[str, Any]) -> None:
    if path is None:
        return
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(data, indent=1), encoding="utf-8")
    part.replace(path)


def reused_steps(paths: Sequence[Path]) -> BalancedSteps:
    """The balanced runs of saved records, per command x model x ranks."""
    steps = BalancedSteps()
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        for r in data.get("runs", []):
            if r.get("scenario") == "balanced":
                steps.add((r["command"], r["model"], r["ranks"]), r)
    return steps


def estimate_s(cases: Sequence[Case], walls: dict[tuple[str, int], float]) -> float:
    def one(command: str, ranks: int) -> float:
        if (command, ranks) in walls:
            return walls[(command, ranks)]
        base = EST_WALL_S.get((command, 2), 15.0)
        return base + EST_WALL_S_PER_RANK * (ranks - 2)

    return sum(one(c.command, c.ranks) for c in cases)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def measure(args: argparse.Namespace, workdir: Path, data: dict[str, Any]) -> None:
    """The calibration runs, then every repeat of the grid; records appended to
    `data["runs"]` (and saved) as runs end."""
    import numpy as np

    cases = grid(args)
    groups = sorted({c.group for c in cases})
    steps = reused_steps(args.reuse_steps or [])
    calibrate = [Case(*g, "balanced") for g in groups if steps.get(g) is None]
    total = len(calibrate) + len(cases) * args.repeats
    say(
        f"{len(cases)} case(s) x {args.repeats} repeat(s) + {len(calibrate)} calibration "
        f"run(s) = {total} runs; estimated {_minutes(estimate_s(calibrate, {}))} + "
        f"{_minutes(estimate_s(cases, {}) * args.repeats)} (from this project's 2-core VM)"
    )
    env = child_env()
    index = 0

    def one_run(case: Case, calibration: bool, repeat: int | None) -> dict[str, Any]:
        nonlocal index
        index += 1
        step = steps.get(case.group)
        if step is None and case.share is not None:  # nothing to size it on: not run
            record = {
                **skipped(case),
                "reason": "no balanced step of its group (every balanced run failed)",
            }
        else:
            record = run_case(args, case, step, workdir, env, index)
        record.update(calibration=calibration, repeat=repeat)
        if case.scenario == "balanced":
            steps.add(case.group, record)
        data["runs"].append(record)
        _save(args.json, data)
        named = (
            record.get("reason")
            if record["outcome"] in ("failed", "skipped")
            else f"named rank {record.get('named_rank')} {record.get('named_kind')}"
            if record.get("named")
            else "nobody named"
        )
        extra = f", +{record['extra_ms']:.1f} ms" if record["extra_ms"] else ""
        say(
            f"[{index}/{total}] {case.label()}{extra}: {record['outcome']} ({named}"
            f"{', caveat' if record.get('caveat') else ''}), {record['wall_s']:.0f} s, "
            f"load {record['load_1m']:.2f}"
            + (
                f"; LEFTOVER HOGS killed: {record['leftover_hogs']}"
                if "leftover_hogs" in record
                else ""
            ),
            indent=2,
        )
        return record

    walls: dict[tuple[str, int], list[float]] = {}
    for case in calibrate:
        for _ in range(CALIBRATION_TRIES):
            record = one_run(case, True, None)
            walls.setdefault((case.command, case.ranks), []).append(record["wall_s"])
            if steps.get(case.group) is not None:
                break
    for group in groups:
        step = steps.get(group)
        say(
            f"balanced step of {group[0]} {group[1]} x{group[2]}: "
            + (
                f"{step.step_ms:.1f} ms, {step.busy_ms:.1f} ms of it on a CPU (then the median "
                "of every balanced run so far)"
                if step
                else "none (its cases are skipped until a balanced run of the grid gives one)"
            ),
            indent=2,
        )
    if walls:
        measured = {k: statistics.mean(v) for k, v in walls.items()}
        say(
            "estimated from the calibration runs' wall times: "
            f"{_minutes(estimate_s(cases, measured) * args.repeats)} more"
        )
    rng = np.random.default_rng(args.seed)
    for repeat in range(args.repeats):
        for k in rng.permutation(len(cases)):
            one_run(cases[int(k)], False, repeat)


# ------------------------------------------------------------------------ report


def width() -> int:
    return max(40, shutil.get_terminal_size((100, 24)).columns)


def say(text: str, indent: int = 0) -> None:
    """Print `text` wrapped to the terminal's width (continuation lines indented 2 more)."""
    print(
        textwrap.fill(
            text,
            width=width(),
            initial_indent=" " * indent,
            subsequent_indent=" " * (indent + 2),
            break_on_hyphens=False,
        ),
        flush=True,
    )


def _table(head: Sequence[str], rows: list[tuple[str, ...]], keep: int = 1) -> None:
    """A table within the terminal's width: columns that do not fit go to a further block,
    which repeats the first `keep` columns."""
    if not rows:
        return
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    limit = width() - 2
    rest = list(range(keep, len(head)))
    while rest:
        block = list(range(keep))
        used = sum(widths[i] + 2 for i in block)
        while rest and (len(block) == keep or used + widths[rest[0]] + 2 <= limit):
            used += widths[rest[0]] + 2
            block.append(rest.pop(0))
        for row in (tuple(head), *rows):
            line = "  ".join(row[i].ljust(widths[i]) for i in block).rstrip()
            print("  " + line[:limit])
        if rest:
            print()


def interval(hits: int, n: int) -> tuple[float, float]:
    """95 % Clopper-Pearson interval of hits / n."""
    from scipy.stats import binomtest

    ci = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="exact")
    return float(ci.low), float(ci.high)


def rate(hits: int, n: int) -> str:
    if not n:
        return "0/0"
    low, high = interval(hits, n)
    return f"{hits}/{n} {hits / n:.0%} [{low:.0%}, {high:.0%}]"


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


def _where(runs: list[dict[str, Any]], **where: Any) -> list[dict[str, Any]]:
    return [r for r in runs if all(r.get(k) == v for k, v in where.items())]


def _share_key(share: float | None) -> float:
    return -1.0 if share is None else share


def _truth(scenario: str, kind: str | None) -> str:
    return f"{scenario}: {kind or 'nobody'}"


def report_load(data: dict[str, Any]) -> None:
    runs = data["runs"]
    cores = data.get("cores") or os.cpu_count() or 1
    before, after = data.get("load_before"), data.get("load_after")
    loads = sorted(r["load_1m"] for r in runs)
    ranks_max = max((r["ranks"] for r in runs), default=0)
    busy = [r for r in runs if r.get("busy")]
    judged = [r for r in runs if r.get("busy") is not None]
    parts = [f"{cores} cores; 1-min load average before {before[0]:.2f}" if before else ""]
    parts.append(f"after {after[0]:.2f}" if after else "after: not recorded (interrupted)")
    if loads:
        parts.append(f"at the runs' ends median {loads[len(loads) // 2]:.2f}, max {loads[-1]:.2f}")
    quiet = (
        before is not None and before[0] < 0.5 * cores and len(busy) <= 0.25 * max(1, len(judged))
    )
    say("machine: " + ", ".join(p for p in parts if p) + ".", indent=0)
    if quiet:
        say(
            "QUIET: little other work before the runs, and the runs' own telemetry judged "
            f"{len(busy)} of {len(judged)} busy (each run's ranks alone make a load up to "
            f"{ranks_max}).",
        )
    else:
        say(
            "LOADED: other work ran on this machine (load before the runs "
            f"{before[0] if before else float('nan'):.2f} on {cores} cores; the runs' own "
            f"telemetry judged {len(busy)} of {len(judged)} busy): the rates below are this "
            "machine's under that load, noisier than a quiet machine's.",
        )


def report_confusion(done: list[dict[str, Any]], share: float) -> None:
    cell = [r for r in done if r["share"] in (share, None)]
    scenarios = [s for s in SCENARIOS if _where(cell, scenario=s)]
    if not scenarios:
        return
    print()
    say(
        f"confusion at an extra time of {share:.0%} of the balanced step (commands, rank counts "
        "and models pooled; balanced runs at every size): rows the truth, columns what the "
        "verdict named: the target (last) rank with each kind ('-': no kind), another rank, "
        "or nobody"
    )
    head = ("truth", "n", *(SHORT.get(k, k) for k in KINDS), "-", "other rank", "nobody")
    rows = []
    for scenario in scenarios:
        runs = _where(cell, scenario=scenario)
        target = [r for r in runs if r.get("named") and r["named_rank"] == r["target_rank"]]
        rows.append(
            (
                _truth(scenario, SCENARIOS[scenario][1]),
                str(len(runs)),
                *(str(len(_where(target, named_kind=k))) for k in KINDS),
                str(len(_where(target, named_kind=None))),
                str(len([r for r in runs if r.get("named")]) - len(target)),
                str(len(_where(runs, named=False))),
            )
        )
    _table(head, rows)


def short_rate(hits: int, n: int) -> str:
    """'hits share [low-high]' in %: the 95 % Clopper-Pearson interval, compact for a table."""
    if not n:
        return "-"
    low, high = interval(hits, n)
    return f"{hits} {hits / n:.0%} [{low * 100:.0f}-{high * 100:.0f}]"


def _groups(
    runs: list[dict[str, Any]], keys: Sequence[str]
) -> list[tuple[tuple[str, ...], list[dict[str, Any]]]]:
    values = sorted({tuple(r[k] for k in keys) for r in runs}, key=lambda v: tuple(map(str, v)))
    return [(tuple(map(str, v)), _where(runs, **dict(zip(keys, v, strict=True)))) for v in values]


def _kind_rows(
    runs: list[dict[str, Any]], keys: Sequence[str], judged: bool
) -> list[tuple[str, ...]]:
    """Per true kind (and `keys`): runs, right rank and right rank and kind, with intervals."""
    rows = []
    for kind in KINDS:
        for values, cell in _groups(_where(runs, expected_kind=kind), keys):
            n = len(cell)
            rank = [r for r in cell if r.get("named") and r["named_rank"] == r["target_rank"]]
            right = len(_where(rank, named_kind=kind))
            row = [kind, *values, str(n), short_rate(len(rank), n)]
            if judged:
                row.append(judge(len(rank), n, RIGHT_RANK))
            row.append(short_rate(right, n))
            if judged:
                row.append(judge(right, n, RIGHT_KIND))
            rows.append(tuple(row))
    return rows


def _balanced_rows(runs: list[dict[str, Any]], keys: Sequence[str]) -> list[tuple[str, ...]]:
    rows = []
    for values, cell in _groups(_where(runs, expected_kind=None), keys):
        clean = len(_where(cell, named=False))
        caveat = len([r for r in cell if r.get("named") and r.get("caveat")])
        rows.append(
            (
                "balanced",
                *values,
                str(len(cell)),
                short_rate(clean, len(cell)),
                judge(clean, len(cell), BALANCED_CLEAN),
                str(caveat),
            )
        )
    return rows


def report_rates(done: list[dict[str, Any]], sizes: list[float]) -> None:
    at_target = [r for r in done if r["share"] in (TARGET_SHARE, None)]
    print()
    say(
        f"targets at an extra time of {TARGET_SHARE:.0%} of the step, per true kind: right rank "
        f">= {RIGHT_RANK:.0%} of the runs, right rank and kind >= {RIGHT_KIND:.0%}, balanced "
        f"runs name nobody >= {BALANCED_CLEAN:.0%}. Each rate: runs, share [its 95 % "
        "Clopper-Pearson interval]; met: the interval clears the target, missed: it lies "
        "below, not settled: it straddles"
    )
    head = ("kind", "n", "right rank", "judged", "right kind", "judged")
    clean_head = ("scenario", "n", "nobody named", "judged", "named with caveat")
    if at_target:
        _table(head, _kind_rows(at_target, (), judged=True))
        _table(clean_head, _balanced_rows(at_target, ()))
        print()
        say(f"the same, by command and rank count ({TARGET_SHARE:.0%}):")
        keys = ("command", "ranks")
        _table((head[0], *keys, *head[1:]), _kind_rows(at_target, keys, True), keep=3)
        _table((clean_head[0], *keys, *clean_head[1:]), _balanced_rows(at_target, keys), 3)
    else:
        say(f"  no runs at {TARGET_SHARE:.0%}: not judged")
    say(
        f"(all runs right, an interval clears 95 % from {runs_to_settle(0.95)} runs, 90 % from "
        f"{runs_to_settle(0.90)} and 80 % from {runs_to_settle(0.80)}; fewer read 'not settled' "
        "at best)",
        indent=2,
    )
    others = sorted({r["share"] for r in done if r["share"] not in (None, TARGET_SHARE)})
    if others or len(sizes) > 1:
        print()
        say(f"per size (judged only at {TARGET_SHARE:.0%}):")
        sized = [{**r, "size": f"{r['share']:.0%}"} for r in done if r["share"] is not None]
        _table(
            ("kind", "size", "n", "right rank", "right kind"),
            _kind_rows(sized, ("size",), False),
            2,
        )


def report_extra(done: list[dict[str, Any]]) -> None:
    """What each scenario made: the rank's own measure of what it added, and the step."""
    print()
    say(
        "extra time made, medians: asked (share x balanced step), added (the target rank's "
        "own measure per call: sleep, matmuls, batch wait, hook wait; host: the hog's duty), "
        "and the step against its group's balanced step"
    )
    balanced: dict[tuple[str, str, int], list[float]] = {}
    for r in _where(done, scenario="balanced"):
        if r.get("step_ms"):
            balanced.setdefault((r["command"], r["model"], r["ranks"]), []).append(r["step_ms"])
    rows: list[tuple[str, ...]] = []
    keys = sorted(
        {(r["scenario"], r["share"], r["command"], r["ranks"]) for r in done},
        key=lambda k: (list(SCENARIOS).index(k[0]), _share_key(k[1]), k[2], k[3]),
    )
    for scenario, share, command, ranks in keys:
        cell = _where(done, scenario=scenario, share=share, command=command, ranks=ranks)
        steps = [r["step_ms"] for r in cell if r.get("step_ms")]
        base = [s for (c, _, n), v in balanced.items() if (c, n) == (command, ranks) for s in v]
        added = [(r.get("added") or {}) for r in cell]
        means = [a["added_ms_mean"] for a in added if a.get("added_ms_mean") is not None]
        duties = [a["duty"] for a in added if a.get("duty") is not None]
        made = (
            f"duty {statistics.median(duties):.0%}"
            if duties
            else f"{statistics.median(means):.1f} ms"
            if means
            else "-"
        )
        step = statistics.median(steps) if steps else None
        ref = statistics.median(base) if base else None
        rows.append(
            (
                scenario,
                "-" if share is None else f"{share:.0%}",
                command,
                str(ranks),
                f"{statistics.median(r['extra_ms'] for r in cell):.1f} ms",
                made,
                f"{step:.1f} ms" if step else "-",
                f"{step / ref - 1:+.0%}" if step and ref and share is not None else "-",
            )
        )
    _table(("scenario", "size", "command", "ranks", "asked", "added", "step", "vs bal."), rows)


def report(data: dict[str, Any]) -> None:
    grid_args = data.get("grid", {})
    runs = data["runs"]
    print()
    say(
        f"straggler detection over kinds: {len(runs)} run(s) of "
        f"{', '.join(grid_args.get('commands', []))} on CPU ranks, model(s) "
        f"{', '.join(grid_args.get('models', []))}, batch {grid_args.get('batch_size')}, "
        f"{grid_args.get('steps')} measured steps (profile: + {grid_args.get('profile_steps')} "
        f"traced; benchmark: x {grid_args.get('bench_repeats')} repeats), extra time on the "
        "last rank, written as model plug-ins (benchmarks/straggler_scenarios.py)"
    )
    for scenario, field in (data.get("left_out") or {}).items():
        say(f"left out: {scenario} (this torchscale's ModelBundle has no '{field}' field)", 2)
    if not runs:
        return
    report_load(data)
    done = [r for r in runs if r["outcome"] not in ("failed", "skipped")]
    sizes = sorted({r["share"] for r in done if r["share"] is not None})
    for share in sizes or [TARGET_SHARE]:
        report_confusion(done, share)
    report_rates(done, sizes)
    report_extra(done)
    failed = [r for r in runs if r["outcome"] in ("failed", "skipped")]
    if failed:
        print()
        say(f"failed or skipped runs (no diagnosis; left out of every rate): {len(failed)}")
        for r in failed:
            why = r.get("reason") or _failure(r.get("error") or "")
            say(f"{_label(r)}: {r['outcome']}, exit {r['exit_code']}: {why}", indent=2)
    leftovers = [r for r in runs if r.get("leftover_hogs")]
    if leftovers:
        say(f"WARNING: {len(leftovers)} run(s) left a hog running (killed after the run)")
    wrong = [r for r in done if r["outcome"] not in ("right", "nobody") or (
        r["outcome"] == "nobody" and r["expected_kind"] is not None)]  # fmt: skip
    if wrong:
        print()
        say("runs not right, in the diagnosis' own words:")
        for r in wrong:
            extra = [r.get("summary") or ""]
            if r.get("kind_rule"):
                extra.append(f"kind: {r['kind_rule']}")
            if r.get("caveat"):
                extra.append(f"caveat: {r['caveat']}")
            when = "calibration" if r.get("calibration") else f"repeat {r.get('repeat')}"
            say(f"{_label(r)} ({when}): {r['outcome']}: {'; '.join(extra)}", 2)


def _label(r: dict[str, Any]) -> str:
    size = "" if r["share"] is None else f" {r['share']:.0%}"
    return f"{r['command']} {r['model']} x{r['ranks']} {r['scenario']}{size}"


def merge_saved(saved: list[dict[str, Any]]) -> dict[str, Any]:
    """Pool several saved measurements: the runs together, the load the lowest before and the
    highest after (the whole range the parts saw)."""
    for data in saved:
        if data.get("version") != RECORDS_VERSION:
            raise SystemExit(
                f"these records are version {data.get('version')} (the --inject-delay grid), "
                f"not this script's {RECORDS_VERSION}: read them with the "
                "straggler_detection.py of that time (git log)"
            )
    if len(saved) == 1:
        return saved[0]
    traced = sorted({str((data.get("grid") or {}).get("profile_steps")) for data in saved})
    if len(traced) > 1:  # the tables name one grid: runs of another would be mislabelled
        raise SystemExit(f"these records traced different step counts ({', '.join(traced)})")
    merged: dict[str, Any] = {**saved[0], "runs": [], "left_out": {}}
    for data in saved:
        merged["runs"] += data["runs"]
        merged["left_out"] |= data.get("left_out") or {}
        for key, pick in (("load_before", min), ("load_after", max)):
            if data.get(key) and merged.get(key):
                merged[key] = pick(merged[key], data[key], key=lambda load: load[0])
            elif data.get(key):
                merged[key] = data[key]
    return merged


def _csv(kind: type) -> Any:
    def parse(text: str) -> list[Any]:
        return [kind(item.strip()) for item in text.split(",") if item.strip()]

    return parse


def _shares(text: str) -> list[float]:
    """Sizes in % of the balanced step: '10,30,60' -> [0.1, 0.3, 0.6]."""
    return [round(float(item.strip().rstrip("%")) / 100, 4) for item in text.split(",") if item]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--kinds",
        "--scenarios",
        type=_csv(str),
        default=list(SCENARIOS),
        help=f"scenarios, comma-separated (default all: {', '.join(SCENARIOS)})",
    )
    parser.add_argument(
        "--sizes", type=_shares, default=[TARGET_SHARE], help="%% of the balanced step (30)"
    )
    parser.add_argument("--ranks", type=_csv(int), default=[2, 4])
    parser.add_argument("--commands", type=_csv(str), default=list(COMMANDS))
    parser.add_argument("--repeats", type=int, default=3, help="runs of each case")
    parser.add_argument("--models", type=_csv(str), default=["mlp"], help=f"of {', '.join(MODELS)}")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--steps", type=int, default=12, help="measured steps per window")
    parser.add_argument(
        "--profile-steps",
        type=int,
        default=TRACED_STEPS,
        help=f"profile: traced steps (default {TRACED_STEPS}, as torchscale profile's)",
    )
    parser.add_argument(
        "--bench-repeats", type=int, default=2, help="benchmark: measured windows per cell"
    )
    parser.add_argument(
        "--reuse-steps",
        type=Path,
        nargs="+",
        help="take each group's balanced step from these saved runs (no calibration run)",
    )
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
    for name, values, known in (
        ("--kinds", args.kinds, SCENARIOS),
        ("--commands", args.commands, COMMANDS),
        ("--models", args.models, MODELS),
    ):
        unknown = sorted(set(values) - set(known))
        if unknown:
            parser.error(f"{name}: one of {', '.join(known)}, not {', '.join(unknown)}")
    if any(not 0.0 < s <= 1.0 for s in args.sizes):
        parser.error("--sizes: percentages of the balanced step, above 0 and at most 100")
    if any(r < 2 for r in args.ranks):
        parser.error("--ranks: a straggler needs at least 2 ranks")
    left_out = {s: f for s, f in missing_fields().items() if s in args.kinds}
    args.kinds = [s for s in args.kinds if s not in left_out]
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    data: dict[str, Any] = {
        "version": RECORDS_VERSION,
        "grid": {
            "kinds": args.kinds,
            "sizes": args.sizes,
            "ranks": args.ranks,
            "commands": args.commands,
            "models": args.models,
            "repeats": args.repeats,
            "batch_size": args.batch_size,
            "steps": args.steps,
            "profile_steps": args.profile_steps,
            "bench_repeats": args.bench_repeats,
            "seed": args.seed,
        },
        "left_out": left_out,
        "cores": os.cpu_count(),
        "load_before": os.getloadavg(),
        "load_after": None,
        "runs": [],
    }
    for scenario, field in left_out.items():
        say(f"left out: {scenario} (this torchscale's ModelBundle has no '{field}' field)")
    before = data["load_before"]
    say(
        f"1-min load average before: {before[0]:.2f} (5-min {before[1]:.2f}, "
        f"{os.cpu_count()} cores)"
    )
    workdir = Path(tempfile.mkdtemp(prefix="straggler-detection-"))
    stopped: str | None = None
    try:
        measure(args, workdir, data)
        data["load_after"] = os.getloadavg()
        _save(args.json, data)
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
