"""Does the baseline rule (torchscale/analysis/baseline.py, docs/regressions.md) call a
regression when nothing changed, and does it catch a real slowdown? Measured, not assumed.

On a machine made busy on purpose (`--hog N` processes spinning a core each, killed at the
end, also on Ctrl-C or SIGTERM), runs one small cell (tiny-gpt2, batch 8, 2 CPU ranks) with
`torchscale benchmark` 2 x PAIRS + 1 times, as its own torchrun each time, alternating

    B0 S1 B1 S2 B2 ... S_PAIRS B_PAIRS

B: the unchanged cell. S: the same cell with a real slowdown: a plug-in model (`delayed`, in
this file) that wraps the built-in one and busy-waits SLOWDOWN x the mean step time of the
previous unchanged run in every forward pass, on every rank, so every step is longer by about
that share (throughput x 1 / (1 + SLOWDOWN); the realised ratio is printed). A busy wait, not
a sleep: on an oversubscribed CPU a sleeping rank is scheduled ahead when it wakes and wins
part of its sleep back, so a sleep slows the step by less than its length; spinning costs CPU
as slower code would. Both sides use the same plug-in and label (the delay is an option, so
the pairs match by key).

Then judges, with `torchscale.analysis.baseline.compare` (what `torchscale report --baseline`
runs):
- false positives: PAIRS identical rerun pairs (B_{i-1} -> B_i); any regression or
  improvement is a false positive;
- detection: PAIRS slowed pairs (B_{i-1} -> S_i); a regression is a detection.
Each run takes part in up to two pairs (neighbours in time share a machine state, as a CI job
and its baseline would not, so this is if anything kind to the rule: see the all-pairs line).
Also printed: the spread within runs and the drift between them, each run's 1-minute load
average (other work on the machine), the rates over every pair of runs (not independent), over
the pairs no other work disturbed, with the drift between runs removed (a re-analysis: the
rule under its own assumption), and what the noise-band rule it replaced would have said.
Targets: <= 5 % false positives, >= 95 % detection; what this machine gave, and why, is in
docs/regressions.md.

    python benchmarks/regression_detection.py [--pairs 20] [--repeats 20] [--steps 10] \
        [--slowdown 0.15] [--how spin|cpu|sleep] [--hog 1] [--model tiny-gpt2] \
        [--save runs.json]
    python benchmarks/regression_detection.py --quick    # smoke check: 3 pairs, ~2-3 min
    python benchmarks/regression_detection.py --load runs.json [--alpha A] [--min-effect E]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from torchscale.analysis.baseline import RegressionRule
    from torchscale.models import ModelBundle

REPO = Path(__file__).resolve().parent.parent
PLUGIN = "benchmarks.regression_detection:delayed"
LABEL = "delayed"
STOP_GRACE_S = 30.0  # torchscale takes its torchrun down on SIGTERM; then SIGKILL


def delayed(base: str = "tiny-gpt2", delay_ms: float = 0.0, how: str = "spin") -> ModelBundle:
    """Plug-in model (runs inside every rank): the built-in `base`, busy-waiting `delay_ms`
    of wall time in every forward pass. 0 is the unchanged model; both sides use this factory
    so that only the delay differs."""
    import time as clock

    from torch import nn

    from torchscale.models.bundle import ModelBundle
    from torchscale.models.registry import build_model

    inner = build_model(base)

    class Delayed(nn.Module):
        def __init__(self, model: nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, *args: Any, **kwargs: Any) -> Any:
            if how == "sleep":
                clock.sleep(delay_ms / 1000)
            else:  # spin: wall time; cpu: this thread's CPU time
                now = clock.perf_counter if how == "spin" else clock.thread_time
                end = now() + delay_ms / 1000
                while now() < end:
                    pass
            return self.model(*args, **kwargs)

    return ModelBundle(
        model=Delayed(inner.model),
        make_batch=inner.make_batch,
        loss_fn=inner.loss_fn,
        kind=inner.kind,
        tokens_per_sample=inner.tokens_per_sample,
        input_shape=inner.input_shape,
        conv_net=inner.conv_net,
    )


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
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        proc.wait()


@contextmanager
def cpu_hogs(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` busy Python processes (one core each), always killed on the way out."""
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
            _kill_group(hog, grace_s=5.0)


def run_child(argv: Sequence[str], env: dict[str, str]) -> None:
    """Run `argv` in its own session; on any exception (Ctrl-C, SIGTERM) stop its group."""
    proc = subprocess.Popen(
        list(argv),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate()
    except BaseException:
        _kill_group(proc, STOP_GRACE_S)
        raise
    if proc.returncode != 0:
        tail = output.decode("utf-8", "replace")[-3000:]
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{tail}")


# ------------------------------------------------------------------------ runs


def benchmark_run(
    args: argparse.Namespace, workdir: Path, env: dict[str, str], name: str, delay_ms: float
) -> dict[str, Any]:
    """One `torchscale benchmark` of the cell; its per-repeat figures as a record."""
    import torchscale.results
    from torchscale.analysis.baseline import STEP_REPEATS, with_step_repeats

    config = workdir / f"{name}.yaml"
    config.write_text(
        f"experiment_name: {name}\n"
        f"models:\n  - name: '{PLUGIN}'\n    label: {LABEL}\n"
        f"    options: {{base: {args.model}, delay_ms: {delay_ms:.4f}, how: {args.how}}}\n"
        f"batch_sizes: [{args.batch}]\ngpu_counts: [{args.world}]\ndevice: cpu\n"
        "training: {precision: fp32, strategy: ddp}\n"
        f"measurement: {{warmup_steps: {args.warmup}, steps: {args.steps}, "
        f"repeats: {args.repeats}, comm_overhead: false, flops: false}}\n"
        f"launcher: {{omp_num_threads: {env['OMP_NUM_THREADS']}}}\n",
        encoding="utf-8",
    )
    out = workdir / "results"
    started = time.perf_counter()
    argv = [sys.executable, "-m", "torchscale", "--quiet", "benchmark", "-c", str(config)]
    run_child([*argv, "-o", str(out)], env)
    experiment = torchscale.results.load(out / name)
    cells = with_step_repeats(experiment.cells, experiment.steps)
    (row,) = cells.to_dict("records")
    if row["status"] != "ok":
        raise SystemExit(f"{name}: the cell did not run: {row.get('error')}")
    return {
        "name": name,
        "delay_ms": delay_ms,
        "wall_s": time.perf_counter() - started,
        "samples_per_s": row["samples_per_s"],
        "step_p50_s": row["step_p50_s"],
        "throughput_spread": row["throughput_spread"],
        "samples_per_s_repeats": row["samples_per_s_repeats"],
        STEP_REPEATS: row[STEP_REPEATS],
        "global_batch": args.batch * args.world,
        "load_1m": os.getloadavg()[0],  # this run's minute: hog + ranks + everyone else's work
        # the cell's own host-load record (telemetry on, as by default): the rule's busy gate
        "busy_machine": _plain(row.get("busy_machine")),
        "other_cpu_cores": _plain(row.get("other_cpu_cores")),
    }


def _plain(value: Any) -> Any:
    """A table value as JSON keeps it (NaN and numpy scalars as None and Python numbers)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value.item() if hasattr(value, "item") else value


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """B0, then PAIRS x (S_i, B_i), under the CPU hogs."""
    cores = len(os.sched_getaffinity(0))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "MASTER_", "PET_"))}
    env["OMP_NUM_THREADS"] = str(max(1, cores // args.world))
    # the repo first (the plug-in is imported inside every rank), then the caller's path
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, cpu_hogs(args.hog):
        workdir = Path(tmp)
        base = benchmark_run(args, workdir, env, "b0", 0.0)
        runs.append(base)
        print(f"b0: {base['samples_per_s']:,.1f} samples/s", flush=True)
        for i in range(1, args.pairs + 1):
            # SLOWDOWN x the mean step of the last unchanged run (window time / steps), so the
            # delay follows the machine's load as a slower code path would
            step_s = base["global_batch"] / base["samples_per_s"]
            delay_ms = args.slowdown * step_s * 1000
            for name, ms in ((f"s{i}", delay_ms), (f"b{i}", 0.0)):
                record = benchmark_run(args, workdir, env, name, ms)
                runs.append(record)
                delay = f", delay ({args.how}) {ms:.2f} ms/step" if ms else ""
                print(
                    f"{name}: {record['samples_per_s']:,.1f} samples/s "
                    f"(repeats' spread {record['throughput_spread']:.1%}){delay}, "
                    f"{record['wall_s']:.0f} s, load {record['load_1m']:.1f}",
                    flush=True,
                )
            base = runs[-1]
    return {
        "model": args.model,
        "batch": args.batch,
        "world": args.world,
        "steps": args.steps,
        "repeats": args.repeats,
        "warmup": args.warmup,
        "slowdown": args.slowdown,
        "hog": args.hog,
        "how": args.how,
        "pairs": args.pairs,
        "cores": cores,
        "runs": runs,
    }


# ------------------------------------------------------------------------ judging


def _cells(record: dict[str, Any]) -> pd.DataFrame:
    """A one-cell table as `torchscale.results.load(...).cells` gives it (the columns the
    comparison reads); both kinds of run share the key, so pairs match by key."""
    import pandas as pd

    from torchscale.analysis.baseline import STEP_REPEATS

    row = {
        "cell_id": record["name"],
        "definition_sha256": record["name"],
        "status": "ok",
        "model_label": LABEL,
        "batch_size": 8,
        "world_size": 2,
        "precision": "fp32",
        "strategy": "ddp",
        "device": "cpu",
        "samples_per_s": record["samples_per_s"],
        "samples_per_s_repeats": record["samples_per_s_repeats"],
        "step_p50_s": record["step_p50_s"],
        STEP_REPEATS: record[STEP_REPEATS],
        # runs saved before the busy gate have no host-load record: judged as before
        "busy_machine": record.get("busy_machine"),
        "other_cpu_cores": record.get("other_cpu_cores"),
    }
    return pd.DataFrame([row])


def verdict(baseline: dict[str, Any], current: dict[str, Any], rule: RegressionRule) -> str:
    from torchscale.analysis.baseline import compare

    pairs = compare(_cells(current), _cells(baseline), rule).pairs
    return str(pairs.loc[0, "verdict"])


def old_rule(baseline: dict[str, Any], current: dict[str, Any]) -> str:
    """The noise band this rule replaced: flagged when the medians are further apart than
    half of each side's repeat range together (never below 1 %)."""
    base, now = baseline["samples_per_s"], current["samples_per_s"]
    band = (baseline["throughput_spread"] * base + current["throughput_spread"] * now) / 2 / base
    change = (now - base) / base
    if abs(change) <= max(band, 0.01):
        return "no significant change"
    return "regression" if change < 0 else "improvement"


def _rate(hits: int, total: int) -> str:
    return f"{hits}/{total} = {hits / total:.1%}" if total else "0/0"


Pair = tuple[dict[str, Any], dict[str, Any]]


def _tally(items: list[Pair], judge: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for base, now in items:
        outcome = judge(base, now)
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


def _wrong(counts: dict[str, int]) -> int:
    return counts.get("regression", 0) + counts.get("improvement", 0)


def _rates(same: list[Pair], slow: list[Pair], judge: Any) -> str:
    fp, det = _tally(same, judge), _tally(slow, judge)
    return (
        f"false positives {_rate(_wrong(fp), len(same))}, "
        f"detection {_rate(det.get('regression', 0), len(slow))}"
    )


def _repeats(record: dict[str, Any], key: str) -> list[float]:
    from torchscale.analysis.baseline import parse_repeats

    return parse_repeats(record.get(key))


def _centred(record: dict[str, Any], level: float) -> dict[str, Any]:
    """`record` with its repeats scaled so that its median throughput is `level`: the run's
    own repeat-to-repeat noise kept, its offset from the other runs of its kind removed."""
    from torchscale.analysis.baseline import STEP_REPEATS

    factor = level / statistics.median(_repeats(record, "samples_per_s_repeats"))
    out = dict(record)
    out["samples_per_s"] = record["samples_per_s"] * factor
    out["samples_per_s_repeats"] = [v * factor for v in _repeats(record, "samples_per_s_repeats")]
    out[STEP_REPEATS] = [v / factor for v in _repeats(record, STEP_REPEATS)]
    return out


def report(data: dict[str, Any], rule: RegressionRule) -> None:
    """Print the rates of `rule` on the measured runs, with its parameters."""
    runs = {r["name"]: r for r in data["runs"]}
    pairs = int(data["pairs"])
    same = [(runs[f"b{i - 1}"], runs[f"b{i}"]) for i in range(1, pairs + 1)]
    slow = [(runs[f"b{i - 1}"], runs[f"s{i}"]) for i in range(1, pairs + 1)]
    bases = [runs[f"b{i}"] for i in range(pairs + 1)]
    slows = [runs[f"s{i}"] for i in range(1, pairs + 1)]

    def judge(base: dict[str, Any], now: dict[str, Any]) -> str:
        return verdict(base, now, rule)

    b_thr = statistics.median(r["samples_per_s"] for r in bases)
    s_thr = statistics.median(r["samples_per_s"] for r in slows)
    within = [
        float(np.subtract(*np.percentile(_repeats(r, "samples_per_s_repeats"), [75, 25])))
        / r["samples_per_s"]
        for r in data["runs"]
    ]
    drift = [abs(b["samples_per_s"] / a["samples_per_s"] - 1) for a, b in same]
    realised = [s["samples_per_s"] / b["samples_per_s"] for b, s in slow]
    print(
        f"\n{data['model']}, batch {data['batch']}, {data['world']} CPU ranks, "
        f"{data['steps']} steps x {data['repeats']} repeats per run, {data['hog']} CPU hog "
        f"process(es) on {data['cores']} cores; {len(data['runs'])} runs, "
        f"delay: {data['slowdown']:.0%} of the last unchanged run's mean step "
        f"({data.get('how', 'spin')})"
    )
    print(
        f"median throughput: unchanged {b_thr:,.1f}, slowed {s_thr:,.1f} samples/s (ratio "
        f"{s_thr / b_thr:.3f}); slowed / its baseline per pair: median "
        f"{statistics.median(realised):.3f}"
    )
    print(
        f"within a run, repeats' IQR / median: median {statistics.median(within):.1%}; "
        f"between neighbouring unchanged runs |ratio - 1|: median "
        f"{statistics.median(drift):.1%}, max {max(drift):.1%}"
    )
    loads = [r.get("load_1m") for r in data["runs"]]
    if all(v is not None for v in loads):
        print(
            f"1-min load average at each run's end: median {statistics.median(loads):.1f}, "
            f"max {max(loads):.1f} (the cell's {data['world']} ranks and {data['hog']} hog(s) "
            f"make {data['world'] + data['hog']}; the rest is other work on the machine)"
        )
    print(f"\nrule: {rule.describe()}")
    print(
        f"parameters: test = {rule.test}, alpha = {rule.alpha:g}, minimum effect = "
        f"{rule.min_effect:.0%}, interval = 95 % percentile bootstrap of the ratio of "
        f"medians, repeats needed per side >= {rule.repeats_needed}"
    )
    fp, det = _tally(same, judge), _tally(slow, judge)
    print(
        f"\nfalse positives (unchanged rerun pairs): {_rate(_wrong(fp), len(same))} "
        f"(regression {fp.get('regression', 0)}, improvement {fp.get('improvement', 0)}, "
        f"not enough repeats {fp.get('not enough repeats', 0)}, "
        f"not judged for a busy machine {fp.get('busy machine', 0)}); target <= 5 %"
    )
    print(
        f"detection ({data['slowdown']:.0%} slower step): "
        f"{_rate(det.get('regression', 0), len(slow))} "
        f"(outcomes: {', '.join(f'{k} {v}' for k, v in sorted(det.items()))}); target >= 95 %"
    )
    if all(v is not None for v in loads):
        quiet = data["world"] + data["hog"] + 0.5

        def calm(pair: Pair) -> bool:
            return all(r["load_1m"] <= quiet for r in pair)

        print(
            f"pairs where both runs ended at a load <= {quiet:g} (hog and ranks only): "
            f"{_rates([p for p in same if calm(p)], [p for p in slow if calm(p)], judge)}"
        )
    every_same = [(a, b) for j, a in enumerate(bases) for b in bases[j + 1 :]]
    every_slow = [(a, s) for a in bases for s in slows]
    print(f"every pair of runs (not independent): {_rates(every_same, every_slow, judge)}")
    level_b = statistics.median(
        statistics.median(_repeats(r, "samples_per_s_repeats")) for r in bases
    )
    level_s = statistics.median(
        statistics.median(_repeats(r, "samples_per_s_repeats")) for r in slows
    )
    centred = {
        r["name"]: _centred(r, level_b if r["name"][0] == "b" else level_s) for r in data["runs"]
    }
    print(
        "the same runs with the drift between runs removed (each run's repeats rescaled to "
        "the median of its kind; not a measurement, the rule under its own assumption): "
        + _rates(
            [(centred[a["name"]], centred[b["name"]]) for a, b in same],
            [(centred[a["name"]], centred[b["name"]]) for a, b in slow],
            judge,
        )
    )
    print(f"the noise-band rule it replaced, same pairs: {_rates(same, slow, old_rule)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="tiny-gpt2", help="a built-in model")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10, help="steps per repeat (window)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--slowdown", type=float, default=0.15, help="share of the step slept")
    parser.add_argument("--how", choices=("spin", "cpu", "sleep"), default="spin")
    parser.add_argument("--hog", type=int, default=1, help="busy processes, one core each")
    parser.add_argument("--quick", action="store_true", help="smoke check: 3 pairs, 10 repeats")
    parser.add_argument("--save", type=Path, help="write the runs' per-repeat figures here")
    parser.add_argument("--load", type=Path, help="judge saved runs instead of measuring")
    parser.add_argument("--alpha", type=float, default=None, help="override the rule's alpha")
    parser.add_argument("--min-effect", type=float, default=None, help="override, a fraction")
    args = parser.parse_args()
    if args.quick:
        args.pairs, args.repeats, args.steps = 3, 10, 8
    sys.path.insert(0, str(REPO))
    from torchscale.analysis.baseline import RULE, RegressionRule

    rule = RegressionRule(
        alpha=RULE.alpha if args.alpha is None else args.alpha,
        min_effect=RULE.min_effect if args.min_effect is None else args.min_effect,
    )
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    started = time.perf_counter()
    if args.load:
        data = json.loads(args.load.read_text(encoding="utf-8"))
    else:
        try:
            data = measure(args)
        except (KeyboardInterrupt, Stopped) as exc:
            raise SystemExit(f"stopped ({type(exc).__name__} {exc}): every process ended") from None
        if args.save:
            args.save.write_text(json.dumps(data, indent=1), encoding="utf-8")
    report(data, rule)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
