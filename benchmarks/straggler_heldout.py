r"""Held-out stragglers: does the rule name the rank, its kind and its pattern, for straggler
models written after the rule and never used to tune it? Measured.

The scenarios (benchmarks/heldout_plugins.py), each on the LAST rank only, real CPU work:
- `every-k`: a stall of --stall-ms every k-th step (k in --every), 2 ranks: compute, and the
  pattern 'every k-th step';
- `slower-S`: S more work in every forward and backward (--slower), 2 ranks: compute;
- `optimizer`: --stall-ms after each optimizer step (a step hook), 2 ranks: compute;
- `4 ranks slower-S`: the same on the last of 4 ranks (--slower4, the issue's 5-15 % gaps);
- balanced runs on 2 and 4 ranks: nobody named.
Each case runs `torchscale profile` (its default traced steps, or --profile-steps) and
`torchscale benchmark` (one cell, --steps measured steps) in its own process. Printed per
scenario and command: right rank, right kind (and pattern), with 95 % Clopper-Pearson
intervals, whether the two commands named the same rank and kind, and the load before and
after (other work on the machine makes the rates noise: said, not judged).

    python benchmarks/straggler_heldout.py [--every 2,4,8] [--stall-ms 30] [--slower 0.25,0.5] \
        [--slower4 0.15,0.5] [--repeats 2] [--steps 48] [--balanced 3] [--profile-steps N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from scipy.stats import binomtest

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.diagnosis import StepPattern
from torchscale.contracts.wording import say
from torchscale.contracts.wording.diagnosis_straggler import pattern_words

HERE = Path(__file__).resolve().parent
CONFIG = """experiment_name: heldout
device: cpu
models: ["heldout_plugins:{plugin}"]
batch_sizes: [32]
gpu_counts: [{ranks}]
measurement:
  steps: {steps}
  repeats: 1
"""


@dataclass(frozen=True)
class Case:
    label: str
    plugin: str
    ranks: int
    env: dict[str, str]
    straggler: bool = True  # the last rank straggles; False: balanced
    pattern: str | None = None  # words the verdict's pattern must hold


def cases(args: argparse.Namespace) -> list[Case]:
    found = []
    for k in map(int, filter(None, args.every.split(","))):
        nth = {2: "2nd", 3: "3rd"}.get(k, f"{k}th")
        env = {"HELDOUT_EVERY": str(k), "HELDOUT_STALL_MS": str(args.stall_ms)}
        found.append(Case(f"every {nth}", "periodic", 2, env, pattern=f"every {nth} step"))
    for share in map(float, filter(None, args.slower.split(","))):
        found.append(Case(f"slower {share:.0%}", "slower", 2, {"HELDOUT_SHARE": str(share)}))
    found.append(Case("optimizer", "optimizer", 2, {"HELDOUT_STALL_MS": str(args.stall_ms)}))
    for share in map(float, filter(None, args.slower4.split(","))):
        env = {"HELDOUT_SHARE": str(share)}
        found.append(Case(f"4 ranks slower {share:.0%}", "slower", 4, env))
    found = found * args.repeats
    balanced = [Case(f"balanced {n} ranks", "periodic", n, {}, straggler=False) for n in (2, 4)]
    return found + balanced * args.balanced


def verdict(command: str, case: Case, args: argparse.Namespace, out: Path) -> dict:
    """The run's stored straggler verdict (diagnosis.straggler), {} when none was written."""
    env = {**os.environ, "PYTHONPATH": str(HERE), **case.env}
    model = f"heldout_plugins:{case.plugin}"
    if command == "profile":
        argv = ["torchscale", "profile", "--gpus", str(case.ranks), "--device", "cpu"]
        argv += ["--model", model, "--steps", "16", "-o", str(out)]
        if args.profile_steps:
            argv += ["--profile-steps", str(args.profile_steps)]
        found = "analysis.json"
    else:
        config = out / "config.yaml"
        out.mkdir(parents=True, exist_ok=True)
        config.write_text(CONFIG.format(plugin=case.plugin, ranks=case.ranks, steps=args.steps))
        argv = ["torchscale", "benchmark", "-c", str(config), "-o", str(out)]
        found = "cells/*.json"
    subprocess.run(argv, env=env, capture_output=True, timeout=900, check=False)
    for path in sorted(out.rglob(found)):
        diagnosis = json.loads(path.read_text()).get("diagnosis") or {}
        checks = {c["check"]: c.get("detail") for c in diagnosis.get("cross_checks") or []}
        arrival = checks.get("arrival_order")
        code = arrival.get("code") if isinstance(arrival, dict) else None
        straggler = diagnosis.get("straggler") or {}
        return {**straggler, "arrival_check": code} if straggler else {}
    return {}


def rate(hits: int, n: int) -> str:
    if n == 0:
        return "no runs"
    ci = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="exact")
    return f"{hits}/{n} [{ci.low:.0%}, {ci.high:.0%}]"


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def said_in_short(v: dict) -> str:
    """Who, which kind, the cost as a share of the step (the minimum effect is 5 % of it) and
    the pattern; or why nobody was named."""
    if not v:
        return "no verdict written"
    gap, floor = (v.get("gap_s") or {}).get("value"), v.get("min_effect_s")
    cost = f"cost {gap / (floor / 0.05):.1%} of the step" if gap and floor else "cost unknown"
    if not v.get("named"):
        why = say(Finding.model_validate(v["why_not"])) if v.get("why_not") else "?"
        return f"nobody ({cost} for rank {v.get('candidate_rank')}): {why}"
    phase = f" in {v['phase']}" if v.get("phase") else ""
    # kept although arrival order, by count, singles out another rank that costs less
    kept = " (arrival order names another rank, at less cost)"
    kept = kept if v.get("arrival_check") == "cross_check.arrival_other_costs_less" else ""
    return f"rank {v.get('rank')} {v.get('kind')}{phase}, {cost}, {pattern_of(v)}{kept}"


def pattern_of(v: dict) -> str | None:
    """How the verdict's cost falls over the steps, in words ('every 4th step +60 ms')."""
    stored = v.get("pattern")
    return pattern_words(StepPattern.model_validate(stored)) if stored else None


def named_as(v: dict) -> tuple:
    return (v.get("rank"), v.get("kind")) if v.get("named") else (None, None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", default="2,4,8")
    parser.add_argument("--stall-ms", type=float, default=30.0)
    parser.add_argument("--slower", default="0.25,0.5")
    parser.add_argument("--slower4", default="0.15,0.5")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--steps", type=int, default=48)
    parser.add_argument("--balanced", type=int, default=3)
    parser.add_argument("--profile-steps", type=int, default=0)
    args = parser.parse_args()
    print(f"load before: {load()}")
    rows: list[tuple[Case, dict[str, dict]]] = []
    with tempfile.TemporaryDirectory(prefix="heldout-") as tmp:
        for index, case in enumerate(cases(args)):
            said = {}
            for command in ("profile", "benchmark"):
                said[command] = verdict(command, case, args, Path(tmp) / f"{index}-{command}")
                print(f"{case.label:22} {command:9} {said_in_short(said[command])}", flush=True)
            rows.append((case, said))
    print(f"load after: {load()}")
    for label in dict.fromkeys(case.label for case, _ in rows):
        runs = [(case, said) for case, said in rows if case.label == label]
        case = runs[0][0]
        for command in ("profile", "benchmark"):
            got = [said[command] for _, said in runs]
            if not case.straggler:
                clean = sum(1 for v in got if v and not v.get("named"))
                print(f"{label:22} {command:9} named nobody {rate(clean, len(got))}")
                continue
            last = case.ranks - 1
            right = [v for v in got if v.get("named") and v.get("rank") == last]
            kind = sum(1 for v in right if v.get("kind") == "compute")
            line = f"right rank {rate(len(right), len(got))}, compute {rate(kind, len(got))}"
            if case.pattern:
                said_it = sum(1 for v in got if case.pattern in (pattern_of(v) or ""))
                line += f", pattern {rate(said_it, len(got))}"
            print(f"{label:22} {command:9} {line}")
        same = sum(1 for _, s in runs if named_as(s["profile"]) == named_as(s["benchmark"]))
        print(f"{label:22} both      same rank and kind {rate(same, len(runs))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
