"""What launcher.cpu_malloc: reuse changes on CPU: a bare training loop with glibc's own malloc
thresholds against the same loop with the ones a CPU cell gets
(torchscale/orchestration/launch/cpu_malloc.py).

Each side is its own process (the dynamic mmap threshold is a process's history), ROUNDS
rounds taking turns, the order swapped every round. Per run: tokens/s over the measured steps,
and over the same steps the minor page faults a second and the share of the process's CPU time
spent in the kernel (its /proc/self/stat, read by the loop itself; Linux). The loop is
benchmarks/workload_reference.py's bare GPT (tiny-gpt2's shapes, fused AdamW).

    python benchmarks/cpu_malloc.py [--rounds 8] [--steps 300] [--batch 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_loop(args: argparse.Namespace) -> dict[str, float]:
    """The bare loop in this process: tokens/s, page faults a second and the kernel's share of
    the CPU time, all over its measured steps."""
    sys.path.insert(0, str(HERE))
    import workload_reference

    reference = argparse.Namespace(
        model="tiny-gpt2",
        batch=args.batch,
        steps=args.steps,
        warmup=5,
        device="cpu",
        compile=False,
    )
    return dict(workload_reference.reference_run(reference))


def one_run(env: dict[str, str], args: argparse.Namespace) -> dict[str, float]:
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            *("--role", "loop", "--steps", str(args.steps), "--batch", str(args.batch)),
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--role", default="driver", choices=["driver", "loop"])
    args = parser.parse_args()
    if args.role == "loop":
        print(json.dumps(run_loop(args)))
        return
    sys.path.insert(0, str(HERE.parent))
    from torchscale.orchestration.launch.cpu_malloc import TUNABLES_VAR, malloc_reuse_env

    threads = os.environ.get("OMP_NUM_THREADS", str(len(os.sched_getaffinity(0))))
    glibc = {
        k: v for k, v in os.environ.items() if k != TUNABLES_VAR and not k.startswith("MALLOC_")
    }
    glibc["OMP_NUM_THREADS"] = threads
    reuse = {**glibc, **malloc_reuse_env(glibc)}
    sides = {"glibc defaults": glibc, "cpu_malloc reuse": reuse}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    for round_ in range(1, args.rounds + 1):
        order = list(sides) if round_ % 2 else list(reversed(sides))
        for name in order:
            runs[name].append(one_run(sides[name], args))
        print(
            f"round {round_}: "
            + ", ".join(
                f"{name} {runs[name][-1]['tokens_per_s']:,.0f} tokens/s "
                f"({runs[name][-1]['page_faults_per_s']:,.0f} faults/s)"
                for name in sides
            ),
            flush=True,
        )
    print(f"tiny-gpt2 b{args.batch}, {threads} thread(s), {args.rounds} rounds, medians:")
    for name, rows in runs.items():
        tokens = [r["tokens_per_s"] for r in rows]
        print(
            f"  {name:17s} {statistics.median(tokens):9,.0f} tokens/s "
            f"(runs {min(tokens):,.0f}-{max(tokens):,.0f}), "
            f"{statistics.median(r['page_faults_per_s'] for r in rows):9,.0f} page faults/s, "
            f"kernel {100 * statistics.median(r['kernel_share'] for r in rows):4.1f} % of CPU time"
        )
    ratios = [
        b["tokens_per_s"] / a["tokens_per_s"]
        for a, b in zip(runs["glibc defaults"], runs["cpu_malloc reuse"], strict=True)
    ]
    print(f"reuse / defaults, median of the rounds' ratios: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
