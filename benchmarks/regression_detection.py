"""Does the baseline rule (offline/analysis/regression_rule.py, docs/regressions.md) call a
regression when nothing changed, and does it catch a real slowdown? Measured, not assumed.

On a machine made busy on purpose (`--hog N` processes spinning a core each, killed at the
end, also on Ctrl-C or SIGTERM), runs one small cell (tiny-gpt2, batch 8, 2 CPU ranks) with
`torchscale benchmark` many times, each its own torchrun, in time order

    b0, b1 s1, b2 s2, ..., bN sN

b: the unchanged cell. s: the same cell with a real slowdown: a plug-in model (`delayed`, in
this file) that wraps the built-in one and busy-waits SLOWDOWN x the mean step time of the
previous unchanged run in every forward pass, on every rank, so every step is longer by about
that share (throughput x 1 / (1 + SLOWDOWN); the realised ratio is printed). A busy wait, not
a sleep: on an oversubscribed CPU a sleeping rank is scheduled ahead when it wakes and wins
part of its sleep back, so a sleep slows the step by less than its length; spinning costs CPU
as slower code would. Both kinds use the same plug-in and label (the delay is an option).

Then judges with `torchscale.offline.analysis.regressions.compare` (what `torchscale report
--baseline` runs), three ways:
- RUNS runs a side, interleaved (the protocol docs/regressions.md asks for on a shared
  machine: the baseline's runs alternate with the current ones): PAIRS pairs j, over the runs
  with indices 2j .. 2j+2*RUNS-1; the baseline the unchanged runs at even indices of that span,
  compared with the unchanged runs at odd indices (false positive if a regression or an
  improvement) and with the slowed runs at odd indices (detection if a regression).
- RUNS runs a side, sequential (a baseline stored earlier: every baseline run before every
  current one): the same span, its first half against its second half.
  Neighbouring pairs share most of their runs (stride 2), so the pairs are not independent;
  the rates are still the rule's rates on these runs.
- one run a side, as before: b[k-1] -> b[k] and b[k-1] -> s[k] for every k (the rule's
  units are then one run's repeats, which cannot see the drift between runs).
Targets: <= 5 % false positives, >= 95 % detection; what this machine gave is in
docs/regressions.md.

    python benchmarks/regression_detection.py [--pairs 20] [--runs 8] [--repeats 10] \
        [--steps 10] [--slowdown 0.15] [--how spin|cpu|sleep] [--hog 1] [--save runs.json]
    python benchmarks/regression_detection.py --quick    # smoke check: 2 pairs, ~5 min
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
from itertools import pairwise
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from torchscale.offline.analysis.regression_rule import RegressionRule
    from torchscale.rank.models import ModelBundle

REPO = Path(__file__).resolve().parent.parent
PLUGIN = "benchmarks.regression_detection:delayed"
LABEL = "delayed"
STOP_GRACE_S = 30.0  # torchscale takes its torchrun down on SIGTERM; then SIGKILL
DEFAULT_RUNS = 8  # runs a side: what this VM needed under one CPU hog (docs/regressions.md)


def delayed(base: str = "tiny-gpt2", delay_ms: float = 0.0, how: str = "spin") -> ModelBundle:
    """Plug-in model (runs inside every rank): the built-in `base`, busy-waiting `delay_ms`
    of wall time in every forward pass. 0 is the unchanged model; both sides use this factory
    so that only the delay differs."""
    import time as clock

    from torch import nn

    from torchscale.rank.models.bundle import ModelBundle
    from torchscale.rank.models.registry import build_model

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
    from torchscale.offline.analysis.regression_rule import STEP_REPEATS
    from torchscale.offline.analysis.regressions import with_step_repeats

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


def runs_needed(pairs: int, runs: int) -> int:
    """The last index N of b0..bN (and s1..sN) that PAIRS pairs of RUNS runs a side need."""
    return 2 * (pairs - 1) + 2 * runs - 1


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """b0, then N x (b_k, s_k), under the CPU hogs."""
    cores = len(os.sched_getaffinity(0))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "MASTER_", "PET_"))}
    env["OMP_NUM_THREADS"] = str(max(1, cores // args.world))
    # the repo first (the plug-in is imported inside every rank), then the caller's path
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    runs: list[dict[str, Any]] = []
    last = runs_needed(args.pairs, args.runs)
    with tempfile.TemporaryDirectory() as tmp, cpu_hogs(args.hog):
        workdir = Path(tmp)
        base = benchmark_run(args, workdir, env, "b0", 0.0)
        runs.append(base)
        print(f"b0: {base['samples_per_s']:,.1f} samples/s", flush=True)
        for k in range(1, last + 1):
            # SLOWDOWN x the mean step of the last unchanged run (window time / steps), so the
            # delay follows the machine's load as a slower code path would
            step_s = base["global_batch"] / base["samples_per_s"]
            delay_ms = args.slowdown * step_s * 1000
            for name, ms in ((f"b{k}", 0.0), (f"s{k}", delay_ms)):
                record = benchmark_run(args, workdir, env, name, ms)
                runs.append(record)
                delay = f", delay ({args.how}) {ms:.2f} ms/step" if ms else ""
                print(
                    f"{name}: {record['samples_per_s']:,.1f} samples/s "
                    f"(repeats' spread {record['throughput_spread']:.1%}){delay}, "
                    f"{record['wall_s']:.0f} s, load {record['load_1m']:.1f}",
                    flush=True,
                )
                if name.startswith("b"):
                    base = record
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
        "runs_per_side": args.runs,
        "cores": cores,
        "runs": runs,
    }


# ------------------------------------------------------------------------ judging

Side = list[dict[str, Any]]  # the runs of one side, each a record of `benchmark_run`


def _cells(side: Side, loads: bool = True) -> pd.DataFrame:
    """A cells table as `torchscale.results.load(...).cells` gives it (the columns the
    comparison reads), one row per run, each run its own experiment: `compare` pools the runs
    of one definition, as `torchscale report` does with a results directory holding several
    runs of one config."""
    import pandas as pd

    from torchscale.offline.analysis.regression_rule import STEP_REPEATS

    rows = [
        {
            "experiment": record["name"],
            "cell_id": record["name"],
            "definition_sha256": "the-cell",
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
            # runs saved without a host-load record: judged as results before it are
            "busy_machine": record.get("busy_machine") if loads else None,
            "other_cpu_cores": record.get("other_cpu_cores") if loads else None,
        }
        for record in side
    ]
    return pd.DataFrame(rows)


def judged(
    baseline: Side, current: Side, rule: RegressionRule, loads: bool = True
) -> tuple[str, float | None]:
    """The pair's verdict by `compare`, and the throughput drop the rule would find 95 % of
    the time at the spread of this pair (`samples_per_s_detectable`); `loads=False` hides the
    host-load record (the rule without its busy-machine gate: what it would say, not what a
    report says)."""
    from torchscale.offline.analysis.regressions import compare

    pairs = compare(_cells(current, loads), _cells(baseline, loads), rule).pairs
    blind = pairs.loc[0, "samples_per_s_detectable"]
    return str(pairs.loc[0, "verdict"]), None if blind is None or blind != blind else float(blind)


def verdict(baseline: Side, current: Side, rule: RegressionRule, loads: bool = True) -> str:
    """The pair's verdict by `compare` (see `judged`)."""
    return judged(baseline, current, rule, loads)[0]


def _rate(hits: int, total: int) -> str:
    return f"{hits}/{total} = {hits / total:.1%}" if total else "0/0"


Pair = tuple[Side, Side]


def _tally(
    items: list[Pair], rule: RegressionRule, loads: bool = True, blind: list[float] | None = None
) -> dict[str, int]:
    """Verdicts counted; each pair's detectable drop appended to `blind` where given."""
    counts: dict[str, int] = {}
    for base, now in items:
        outcome, detectable = judged(base, now, rule, loads)
        counts[outcome] = counts.get(outcome, 0) + 1
        if blind is not None and detectable is not None:
            blind.append(detectable)
    return counts


def _wrong(counts: dict[str, int]) -> int:
    return counts.get("regression", 0) + counts.get("improvement", 0)


def _outcomes(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def _print_rates(
    title: str,
    same: list[Pair],
    slow: list[Pair],
    rule: RegressionRule,
    loads: bool = True,
    drop: float | None = None,
) -> None:
    blind: list[float] = []
    fp, det = _tally(same, rule, loads, blind), _tally(slow, rule, loads)
    print(f"\n{title}")
    print(
        f"  false positives (unchanged pairs): {_rate(_wrong(fp), len(same))} "
        f"({_outcomes(fp)}); target <= 5 %"
    )
    print(
        f"  detection (slowed pairs): {_rate(det.get('regression', 0), len(slow))} "
        f"({_outcomes(det)}); target >= 95 %"
    )
    if blind and drop is not None:
        print(
            "  the rule's own estimate, per unchanged pair, of the throughput drop it finds "
            f"95 % of the time at that pair's spread: median {statistics.median(blind):.1%}, "
            f"{min(blind):.1%} to {max(blind):.1%} (the slowed runs' drop here: a median "
            f"{drop:.1%}; the estimate is an approximation, this is its check)"
        )


def _repeats(record: dict[str, Any], key: str) -> list[float]:
    from torchscale.offline.analysis.numbers import parse_repeats

    return parse_repeats(record.get(key))


def _centred(record: dict[str, Any], level: float) -> dict[str, Any]:
    """`record` with its repeats scaled so that its median throughput is `level`: the run's
    own repeat-to-repeat noise kept, its offset from the other runs of its kind removed."""
    from torchscale.offline.analysis.regression_rule import STEP_REPEATS

    factor = level / statistics.median(_repeats(record, "samples_per_s_repeats"))
    out = dict(record)
    out["samples_per_s"] = record["samples_per_s"] * factor
    out["samples_per_s_repeats"] = [v * factor for v in _repeats(record, "samples_per_s_repeats")]
    out[STEP_REPEATS] = [v / factor for v in _repeats(record, STEP_REPEATS)]
    return out


RESAMPLED_PAIRS = 200  # random groupings per side size (seeded)


def _resampled_rates(bases: Side, slows: Side, rule: RegressionRule, measured: int) -> None:
    """How many runs a side this machine needs: the rates of the rule over random groups of
    the measured runs (time order ignored, so slow drifts of the machine are averaged in, not
    lined up against one side), for a few side sizes. A planning aid, not a measurement."""
    rng = np.random.default_rng(0)
    sizes = sorted({measured, 4, 6, 8, 10} - {1})
    print(
        f"\nresampled: {RESAMPLED_PAIRS} random pairs of groups of the measured runs per side "
        "size (time order ignored; how many runs a side this machine needs):"
    )
    for size in sizes:
        if 2 * size > len(bases) or size > len(slows):
            continue
        wrong = found = 0
        for _ in range(RESAMPLED_PAIRS):
            order = rng.permutation(len(bases))
            base = [bases[i] for i in order[:size]]
            again = [bases[i] for i in order[size : 2 * size]]
            slowed = [slows[i] for i in rng.permutation(len(slows))[:size]]
            wrong += verdict(base, again, rule) in ("regression", "improvement")
            found += verdict(base, slowed, rule) == "regression"
        print(
            f"  {size} runs a side: false positives {wrong / RESAMPLED_PAIRS:.1%}, detection "
            f"{found / RESAMPLED_PAIRS:.1%}"
        )


def protocol_pairs(
    runs: dict[str, dict[str, Any]], pairs: int, per_side: int, protocol: str
) -> tuple[list[Pair], list[Pair]]:
    """The unchanged pairs and the slowed pairs of a protocol, pair j over the runs with
    indices 2j .. 2j + 2 x per_side - 1 (time order b0, b1 s1, b2 s2, ...).

    interleaved: the baseline is the unchanged runs at even offsets of that span, the current
    side the unchanged (or slowed) runs at odd offsets: each current run sits between two
    baseline runs, so a machine that drifts for minutes moves both sides alike.
    sequential: the baseline is the span's first half, the current side its second half: a
    drift between the halves reads as a change."""
    same: list[Pair] = []
    slow: list[Pair] = []
    for j in range(pairs):
        span = range(2 * j, 2 * j + 2 * per_side)
        if protocol == "interleaved":
            base_idx, now_idx = list(span)[0::2], list(span)[1::2]
        else:
            base_idx, now_idx = list(span)[:per_side], list(span)[per_side:]
        base_side = [runs[f"b{k}"] for k in base_idx]
        same.append((base_side, [runs[f"b{k}"] for k in now_idx]))
        slow.append((base_side, [runs[f"s{k}"] for k in now_idx]))
    return same, slow


def report(data: dict[str, Any], rule: RegressionRule) -> None:
    """Print the rates of `rule` on the measured runs, with its parameters."""
    runs = {r["name"]: r for r in data["runs"]}
    last = max(int(name[1:]) for name in runs)
    per_side = int(data.get("runs_per_side", 1))
    # as many pairs as asked, or as the runs hold when judged with more runs a side
    pairs = min(int(data["pairs"]), (last - 2 * per_side + 1) // 2 + 1)
    bases = [runs[f"b{k}"] for k in range(last + 1)]
    slows = [runs[f"s{k}"] for k in range(1, last + 1)]
    b_thr = statistics.median(r["samples_per_s"] for r in bases)
    s_thr = statistics.median(r["samples_per_s"] for r in slows)
    within = [
        float(np.subtract(*np.percentile(_repeats(r, "samples_per_s_repeats"), [75, 25])))
        / r["samples_per_s"]
        for r in data["runs"]
    ]
    drift = [abs(b["samples_per_s"] / a["samples_per_s"] - 1) for a, b in pairwise(bases)]
    spread = float(np.std(np.log([r["samples_per_s"] for r in bases]), ddof=1))
    realised = [
        s["samples_per_s"] / runs[f"b{k - 1}"]["samples_per_s"]
        for k, s in enumerate(slows, start=1)
    ]
    print(
        f"\n{data['model']}, batch {data['batch']}, {data['world']} CPU ranks, "
        f"{data['steps']} steps x {data['repeats']} repeats per run, {data['hog']} CPU hog "
        f"process(es) on {data['cores']} cores; {len(data['runs'])} runs, "
        f"delay: {data['slowdown']:.0%} of the last unchanged run's mean step "
        f"({data.get('how', 'spin')})"
    )
    print(
        f"median throughput: unchanged {b_thr:,.1f}, slowed {s_thr:,.1f} samples/s (ratio "
        f"{s_thr / b_thr:.3f}); slowed / the unchanged run before it: median "
        f"{statistics.median(realised):.3f}"
    )
    print(
        f"within a run, repeats' IQR / median: median {statistics.median(within):.1%}; "
        f"between neighbouring unchanged runs |ratio - 1|: median "
        f"{statistics.median(drift):.1%}, max {max(drift):.1%}; unchanged runs' throughput, "
        f"sd of its log: {spread:.3f}"
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
        f"medians, units needed per side >= {rule.repeats_needed}"
    )
    if per_side > 1:
        for protocol, title in (
            (
                "interleaved",
                f"{per_side} runs a side, interleaved (the baseline's runs alternate with the "
                "current ones, as docs/regressions.md asks on a shared machine; units: runs), "
                f"{pairs} pairs, neighbouring pairs sharing most of their runs:",
            ),
            (
                "sequential",
                f"{per_side} runs a side, sequential (every baseline run before every current "
                "one, as with a baseline stored earlier; units: runs), "
                f"{pairs} pairs, neighbouring pairs sharing most of their runs:",
            ),
        ):
            same, slow = protocol_pairs(runs, pairs, per_side, protocol)
            _print_rates(title, same, slow, rule, drop=1 - statistics.median(realised))
    one_same = [([runs[f"b{k - 1}"]], [runs[f"b{k}"]]) for k in range(1, last + 1)]
    one_slow = [([runs[f"b{k - 1}"]], [runs[f"s{k}"]]) for k in range(1, last + 1)]
    _print_rates(
        f"one run a side (units: its repeats), {last} pairs of neighbouring runs, as a report "
        "judges them (on a busy machine: not judged):",
        one_same,
        one_slow,
        rule,
    )
    _print_rates(
        "the same pairs by the rule alone (host-load record hidden: what one run a side would "
        "say without the busy-machine gate):",
        one_same,
        one_slow,
        rule,
        loads=False,
    )
    _resampled_rates(bases, slows, rule, per_side)
    level_b = statistics.median(
        statistics.median(_repeats(r, "samples_per_s_repeats")) for r in bases
    )
    level_s = statistics.median(
        statistics.median(_repeats(r, "samples_per_s_repeats")) for r in slows
    )
    centred = {
        r["name"]: _centred(r, level_b if r["name"][0] == "b" else level_s) for r in data["runs"]
    }
    _print_rates(
        "one run a side with the drift between runs removed (each run's repeats rescaled to "
        "the median of its kind; not a measurement, the rule under its own assumption):",
        [([centred[a[0]["name"]]], [centred[b[0]["name"]]]) for a, b in one_same],
        [([centred[a[0]["name"]]], [centred[b[0]["name"]]]) for a, b in one_slow],
        rule,
        loads=False,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="tiny-gpt2", help="a built-in model")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10, help="steps per repeat (window)")
    parser.add_argument("--repeats", type=int, default=10, help="repeats (windows) per run")
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument(
        "--runs",
        type=int,
        default=None,
        help="runs a side (the rule's units); default 8, or with --load the saved runs' own",
    )
    parser.add_argument("--slowdown", type=float, default=0.15, help="share of the step slept")
    parser.add_argument("--how", choices=("spin", "cpu", "sleep"), default="spin")
    parser.add_argument("--hog", type=int, default=1, help="busy processes, one core each")
    parser.add_argument("--quick", action="store_true", help="smoke check: 2 pairs, 4 runs a side")
    parser.add_argument("--save", type=Path, help="write the runs' per-repeat figures here")
    parser.add_argument("--load", type=Path, help="judge saved runs instead of measuring")
    parser.add_argument("--alpha", type=float, default=None, help="override the rule's alpha")
    parser.add_argument("--min-effect", type=float, default=None, help="override, a fraction")
    args = parser.parse_args()
    if args.quick:
        args.pairs, args.runs, args.repeats, args.steps = 2, 4, 5, 8
    sys.path.insert(0, str(REPO))
    from torchscale.offline.analysis.regression_rule import RULE, RegressionRule

    rule = RegressionRule(
        alpha=RULE.alpha if args.alpha is None else args.alpha,
        min_effect=RULE.min_effect if args.min_effect is None else args.min_effect,
    )
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    started = time.perf_counter()
    if args.load:
        data = json.loads(args.load.read_text(encoding="utf-8"))
        if args.runs is not None:  # judge the saved runs with other side sizes
            data["runs_per_side"] = args.runs
    else:
        args.runs = DEFAULT_RUNS if args.runs is None else args.runs
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
