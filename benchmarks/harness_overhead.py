"""Does torchscale's harness change what it measures? Throughput it reports vs a bare DDP loop.

For one model, batch and world size, runs the bare loop (benchmarks/bare_ddp_loop.py) and a
one-cell `torchscale benchmark` alternately ROUNDS times (A B A B ...: slow drifts of a shared
machine hit both), each as its own torchrun with the same OMP_NUM_THREADS, and prints the
ratio of the medians. Also prints torchscale's fixed cost per cell: cell wall time minus the
time inside measured windows (launch, imports, DDP set-up, warm-up, FLOP step, gather, exit).
On CPU both sides run with the glibc malloc settings of a CPU cell (launcher.cpu_malloc:
reuse, torchscale/orchestration/launch/cpu_malloc.py).

    python benchmarks/harness_overhead.py [--model tiny-gpt2] [--batch 16] [--world 2] \
        [--steps 40] [--rounds 5] [--device cpu|cuda] [--precision fp32|bf16]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torchscale.results

REPO = Path(__file__).resolve().parent.parent


def bare(args: argparse.Namespace, workdir: Path, env: dict[str, str]) -> float:
    out = workdir / "bare.json"
    argv = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={args.world}",
        "--max-restarts=0",
        str(REPO / "benchmarks" / "bare_ddp_loop.py"),
        "--model",
        args.model,
        "--batch",
        str(args.batch),
        "--warmup",
        str(args.warmup),
        "--steps",
        str(args.steps),
        "--out",
        str(out),
        "--device",
        args.device,
        "--precision",
        args.precision,
    ]
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return float(json.loads(out.read_text())["samples_per_s"])


def harness(
    args: argparse.Namespace, workdir: Path, env: dict[str, str], index: int
) -> tuple[float, float, float]:
    config = workdir / "cfg.yaml"
    config.write_text(
        f"experiment_name: overhead{index}\nmodels: [{args.model}]\nbatch_sizes: [{args.batch}]\n"
        f"gpu_counts: [{args.world}]\ndevice: {args.device}\n"
        f"training: {{precision: {args.precision}, strategy: ddp}}\n"
        f"measurement: {{warmup_steps: {args.warmup}, steps: {args.steps}, repeats: 1, "
        "comm_overhead: false, flops: true}\n"
        f"launcher: {{omp_num_threads: {env['OMP_NUM_THREADS']}}}\n"
    )
    out = workdir / "results"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "torchscale",
            "--quiet",
            "benchmark",
            "-c",
            str(config),
            "-o",
            str(out),
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    (cell,) = torchscale.results.load(out / f"overhead{index}").results
    if cell.status != "ok" or cell.throughput is None or cell.step_time is None:
        raise SystemExit(f"torchscale cell failed: {cell.error}")
    wall = cell.wall_s or 0.0
    measured = cell.step_time.mean * cell.step_time.count / cell.cell.world_size
    return cell.throughput.samples_per_s, wall, wall - measured


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="tiny-gpt2")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "MASTER_", "PET_"))}
    env["OMP_NUM_THREADS"] = str(max(1, cores // args.world))
    # the repo first, then whatever the caller's PYTHONPATH held (site packages outside the venv)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    if args.device == "cpu":  # the bare loop under the malloc settings a CPU cell runs with
        from torchscale.orchestration.launch.cpu_malloc import malloc_reuse_env

        env.update(malloc_reuse_env(env))
    bare_runs: list[float] = []
    harness_runs: list[float] = []
    walls: list[float] = []
    fixed: list[float] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for i in range(args.rounds):
            bare_runs.append(bare(args, workdir, env))
            thr, wall, cost = harness(args, workdir, env, i)
            harness_runs.append(thr)
            walls.append(wall)
            fixed.append(cost)
            print(
                f"round {i + 1}: bare {bare_runs[-1]:,.1f} samples/s, torchscale "
                f"{thr:,.1f} samples/s (ratio {thr / bare_runs[-1]:.3f})",
                flush=True,
            )
    ratio = statistics.median(harness_runs) / statistics.median(bare_runs)
    print(
        f"\n{args.model}, batch {args.batch}, world {args.world}, {args.device}, "
        f"{args.precision}, {args.steps} steps, "
        f"OMP_NUM_THREADS={env['OMP_NUM_THREADS']}, {args.rounds} alternating rounds "
        f"({time.perf_counter() - started:.0f} s)"
    )
    print(
        f"median throughput: bare {statistics.median(bare_runs):,.1f}, torchscale "
        f"{statistics.median(harness_runs):,.1f} samples/s"
    )
    print(f"harness / bare ratio: {ratio:.4f} ({(ratio - 1) * 100:+.2f}%)")
    print(
        f"torchscale cell wall time: median {statistics.median(walls):.1f} s; fixed cost "
        f"(wall - measured steps): median {statistics.median(fixed):.1f} s"
    )


if __name__ == "__main__":
    main()
