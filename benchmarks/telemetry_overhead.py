"""What does the telemetry sampler cost the training loop? Windows with it on and off, one run.

Launches one torchrun (WORLD gloo ranks on CPU, or NCCL ranks on GPUs with --device cuda) whose
ranks build the cell's trainer exactly as a benchmark cell does, warm up, then run ROUNDS
rounds of three barrier-bounded windows of STEPS steps each through torchscale's own
`run_window`: one with the rank's sampler running (the same `rank_sampler` a cell uses: psutil
on CPU, NVML + psutil on CUDA, every INTERVAL ms) and two without it, the bare baseline and a
second bare window, the noise floor (A/A: what two identical windows differ by). The order
rotates every round (on/off/off2, off/off2/on, off2/on/off), so a slow drift of a shared
machine, or a first-window effect, hits all alike. Prints each round's ratios (window wall time
on / off and off2 / off), their medians, the same for the median step inside each window, and
the cost per step. The budget is 1 %. `--no-nvml` samples only the process on CUDA too (to
tell NVML's share of a cost from the thread's).

Window ratios on a shared machine carry a few % of noise, so the script also times the
sampler's work alone, in this process: one sample of every source (what the thread does each
tick), as CPU time per second of training at this interval. That share of one core bounds what
the thread can take from the loop (it holds the GIL only while Python runs; NVML's ctypes calls
release it).

    python benchmarks/telemetry_overhead.py [--model tiny-gpt2] [--batch 16] [--world 2] \
        [--steps 40] [--rounds 10] [--interval-ms 100] [--device cpu|cuda]
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

REPO = Path(__file__).resolve().parent.parent
BUDGET = 0.01


def worker(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist

    from torchscale.contracts.cell import CellIdentity
    from torchscale.contracts.cell_settings import (
        DataConfig,
        MeasurementConfig,
        ModelSpec,
        TelemetryConfig,
        TrainingConfig,
    )
    from torchscale.contracts.worker_spec import WorkerSpec
    from torchscale.rank.telemetry.process_source import ProcessSource
    from torchscale.rank.telemetry.rank import rank_sampler
    from torchscale.rank.telemetry.sampler import Sampler
    from torchscale.rank.worker.measure import run_window
    from torchscale.rank.worker.steady_state import warm_up
    from torchscale.rank.worker.timing import resolve_timing
    from torchscale.rank.worker.trainer import Trainer

    cuda = args.device == "cuda"
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if cuda:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    spec = WorkerSpec(
        cell=CellIdentity(
            id="telemetry-overhead",
            definition_sha256="0" * 64,
            model=args.model,
            label=args.model,
            batch_size=args.batch,
            world_size=world,
            precision="fp32",
            strategy="ddp",
            device=args.device,
            backend="nccl" if cuda else "gloo",
        ),
        model=ModelSpec(name=args.model),
        training=TrainingConfig(),
        measurement=MeasurementConfig(steps=args.steps, repeats=1, warmup_steps=args.warmup),
        data=DataConfig(),
        result_path="/dev/null",
        steps_path="/dev/null",
    )
    trainer = Trainer.build(spec, device)
    timing = resolve_timing("auto", device)
    sampler = rank_sampler(TelemetryConfig(interval_ms=args.interval_ms), device)
    assert sampler is not None
    if args.no_nvml:  # the process source alone (diagnosis: NVML's share of a cost)
        sampler = Sampler(
            [s for s in sampler.sources if isinstance(s, ProcessSource)],
            sampler.interval_s,
            sampler.device,
        )
    warm_up(trainer, args.warmup)
    arms = ("on", "off", "off2")
    rounds = []
    for i in range(args.rounds):
        order = arms[i % 3 :] + arms[: i % 3]
        walls, medians = {}, {}
        for arm in order:
            telemetry = sampler if arm == "on" else None
            window = run_window(trainer, args.steps, timing, telemetry=telemetry)
            walls[arm] = window.wall_s
            medians[arm] = statistics.median(window.step_s)
        rounds.append(
            {
                **{f"{arm}_s": walls[arm] for arm in arms},
                **{f"{arm}_p50_s": medians[arm] for arm in arms},
                "first": order[0],
            }
        )
    report = sampler.report()
    samples = sum(len(w.t) for w in report.windows)
    if rank == 0:
        result = {
            "model": args.model,
            "batch": args.batch,
            "world": world,
            "steps": args.steps,
            "device": args.device,
            "timing": timing,
            "interval_ms": args.interval_ms,
            "sources": [type(s).__name__ for s in sampler.sources],
            "samples_per_rank": samples,
            "unavailable": report.unavailable,
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "rounds": rounds,
        }
        Path(args.out).write_text(json.dumps(result), encoding="utf-8")
    dist.barrier()
    dist.destroy_process_group()


def sample_cost(device: str, no_nvml: bool, samples: int = 500) -> tuple[float, float, list[str]]:
    """(CPU seconds, wall seconds) of one sample of every source a rank of this device
    samples (best of 5), measured in this process with the sampler's own read path; and the
    source names. Wall beyond CPU is time in the driver, with the GIL released."""
    import torch

    from torchscale.contracts.cell_settings import TelemetryConfig
    from torchscale.rank.telemetry.process_source import ProcessSource
    from torchscale.rank.telemetry.rank import rank_sampler
    from torchscale.rank.telemetry.samples import WindowSamples

    sampler = rank_sampler(TelemetryConfig(), torch.device(device))
    assert sampler is not None
    if no_nvml:
        sampler.sources = [s for s in sampler.sources if isinstance(s, ProcessSource)]
    for source in sampler.sources:
        source.open()
    fields = tuple(f for s in sampler.sources for f in s.fields)
    best = best_wall = float("inf")
    for _ in range(5):
        record = WindowSamples(values={name: [] for name in fields})
        started, wall = time.process_time(), time.perf_counter()
        for _ in range(samples):
            sampler._take(record)
        best = min(best, (time.process_time() - started) / samples)
        best_wall = min(best_wall, (time.perf_counter() - wall) / samples)
    return best, best_wall, [type(s).__name__ for s in sampler.sources]


def launch(args: argparse.Namespace) -> None:
    cores = len(os.sched_getaffinity(0))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "MASTER_", "PET_"))}
    env.setdefault("OMP_NUM_THREADS", str(max(1, cores // args.world)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "overhead.json"
        argv = [
            sys.executable,
            *("-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={args.world}"),
            "--max-restarts=0",
            str(Path(__file__).resolve()),
            "--worker",
            *("--out", str(out)),
            *("--model", args.model, "--batch", str(args.batch), "--steps", str(args.steps)),
            *("--rounds", str(args.rounds), "--warmup", str(args.warmup)),
            *("--device", args.device, "--interval-ms", str(args.interval_ms)),
            *(["--no-nvml"] if args.no_nvml else []),
        ]
        started = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not out.exists():
            raise SystemExit(f"torchrun failed ({done.returncode}):\n{done.stderr[-4000:]}")
        result = json.loads(out.read_text(encoding="utf-8"))
    rounds = result["rounds"]
    ratios = [r["on_s"] / r["off_s"] for r in rounds]
    noise = [r["off2_s"] / r["off_s"] for r in rounds]
    for i, (r, ratio, aa) in enumerate(zip(rounds, ratios, noise, strict=True), 1):
        print(
            f"round {i:2d}: on {r['on_s'] / args.steps * 1e3:8.3f} ms/step, off "
            f"{r['off_s'] / args.steps * 1e3:8.3f}, off2 {r['off2_s'] / args.steps * 1e3:8.3f}; "
            f"on/off {ratio:.4f}, off2/off {aa:.4f} ({r['first']} first)",
            flush=True,
        )
    on = statistics.median(r["on_s"] for r in rounds) / args.steps
    off = statistics.median(r["off_s"] for r in rounds) / args.steps
    median_ratio = statistics.median(ratios)
    median_noise = statistics.median(noise)
    step_ratio = statistics.median(r["on_p50_s"] / r["off_p50_s"] for r in rounds)
    step_noise = statistics.median(r["off2_p50_s"] / r["off_p50_s"] for r in rounds)
    print(
        f"\n{result['model']}, batch {result['batch']}, world {result['world']}, "
        f"{result['device']} ({result['timing']}), sampler every {result['interval_ms']} ms "
        f"({' + '.join(result['sources'])}), {result['samples_per_rank']} samples per rank, "
        f"OMP_NUM_THREADS={result['omp_num_threads']}, {args.rounds} rounds x 3 windows x "
        f"{args.steps} steps ({time.perf_counter() - started:.0f} s)"
    )
    if result["unavailable"]:
        fields = ", ".join(sorted(result["unavailable"]))
        print(f"fields not sampled here (null with the reason in results): {fields}")
    print(f"median step: sampler on {on * 1e3:.3f} ms, off (bare baseline) {off * 1e3:.3f} ms")
    print(
        f"sampler on / off: median of round ratios {median_ratio:.4f} "
        f"({(median_ratio - 1) * 100:+.2f}%), range {min(ratios):.4f}-{max(ratios):.4f}; "
        f"ratio of medians {on / off:.4f}; cost {(on - off) * 1e6:+.1f} us per step"
    )
    print(
        f"noise floor, off2 / off (two bare windows): median {median_noise:.4f} "
        f"({(median_noise - 1) * 100:+.2f}%), range {min(noise):.4f}-{max(noise):.4f}"
    )
    print(
        f"median step within each window: on / off {step_ratio:.4f} "
        f"({(step_ratio - 1) * 100:+.2f}%), off2 / off {step_noise:.4f} "
        f"({(step_noise - 1) * 100:+.2f}%) (medians over rounds)"
    )
    per_sample, per_sample_wall, sources = sample_cost(args.device, args.no_nvml)
    share = per_sample / (args.interval_ms / 1000)
    print(
        f"one sample alone ({' + '.join(sources)}, this process): {per_sample * 1e6:.1f} us of "
        f"CPU ({per_sample_wall * 1e6:.1f} us wall) = {share * 100:.3f}% of one core at one "
        f"sample per {args.interval_ms} ms"
    )
    within = abs(median_ratio - 1) < BUDGET
    print(
        f"budget {BUDGET * 100:.0f}%: sampler work {share * 100:.3f}% of a core "
        f"({'within' if share < BUDGET else 'ABOVE'}); windows on/off "
        f"{(median_ratio - 1) * 100:+.2f}% against a noise floor of "
        f"{(median_noise - 1) * 100:+.2f}% ({'within' if within else 'outside'} +-1%)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="tiny-gpt2")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--interval-ms", type=int, default=100)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--no-nvml", action="store_true", help="sample the process only")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
    else:
        launch(args)


if __name__ == "__main__":
    main()
