"""What does per-step phase timing cost? The same step loop with it on and off, in one run.

Launches one torchrun (WORLD gloo ranks on CPU, or NCCL ranks on GPUs with --device cuda) whose
ranks build the cell's trainer exactly as a benchmark cell does, warm up, then run ROUNDS
rounds of two barrier-bounded windows of STEPS steps each through torchscale's own
`run_window`: one with phase timing (the per-step boundary timestamps, or CUDA events, and one
gradient hook per trainable parameter) and one without (the plain step timer only). The order
alternates every round (on/off, off/on, ...), so a slow drift of a shared machine hits both
alike. Prints each round's ratio (window wall time with / without) and the median ratio, the same
for the median step inside each window (less sensitive to one stalled step), plus the cost per
step in microseconds. The budget is 1 % (docs/methodology.md).

On a shared machine the windows' noise (several % between rounds) is far larger than the
cost, so the script also times the instrumentation alone, in this process: the recorder's
boundary calls and one hook call per trainable parameter (the count the cell's model has),
for as many steps, with no training around them. That figure does not depend on the noise:
divided by the measured step time it bounds the overhead from above (CPU clock; on CUDA the
boundary calls record events instead, a few microseconds each).

    python benchmarks/phase_timing_overhead.py [--model tiny-gpt2] [--batch 16] [--world 2] \
        [--steps 40] [--rounds 10] [--device cpu|cuda] [--accum 1]
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


def worker(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist

    from torchscale.contracts.cell import CellIdentity
    from torchscale.contracts.cell_settings import (
        DataConfig,
        MeasurementConfig,
        ModelSpec,
        TrainingConfig,
    )
    from torchscale.contracts.worker_spec import WorkerSpec
    from torchscale.rank.worker.measure import run_window
    from torchscale.rank.worker.phases import trainable
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
            id="overhead",
            definition_sha256="0" * 64,
            model=args.model,
            label=args.model,
            batch_size=args.batch,
            world_size=world,
            precision="fp32",
            strategy=args.strategy,
            device=args.device,
            backend="nccl" if cuda else "gloo",
        ),
        model=ModelSpec(name=args.model),
        training=TrainingConfig(grad_accum_steps=args.accum),
        measurement=MeasurementConfig(steps=args.steps, repeats=1, warmup_steps=args.warmup),
        data=DataConfig(),
        result_path="/dev/null",
        steps_path="/dev/null",
    )
    trainer = Trainer.build(spec, device)
    timing = resolve_timing("auto", device)
    warm_up(trainer, args.warmup)
    rounds = []
    for i in range(args.rounds):
        order = (True, False) if i % 2 == 0 else (False, True)
        walls, medians = {}, {}
        for phases in order:
            window = run_window(trainer, args.steps, timing, phases=phases)
            walls[phases] = window.wall_s
            medians[phases] = statistics.median(window.step_s)
        rounds.append(
            {
                "on_s": walls[True],
                "off_s": walls[False],
                "on_p50_s": medians[True],
                "off_p50_s": medians[False],
                "first": order[0],
            }
        )
    if rank == 0:
        result = {
            "model": args.model,
            "batch": args.batch,
            "world": world,
            "steps": args.steps,
            "accum": args.accum,
            "strategy": args.strategy,
            "device": args.device,
            "timing": timing,
            "trainable_parameters": len(trainable(trainer.model)),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "rounds": rounds,
        }
        Path(args.out).write_text(json.dumps(result), encoding="utf-8")
    dist.barrier()
    dist.destroy_process_group()


def instrumentation_cost(parameters: int, accum: int, steps: int = 2000) -> float:
    """Seconds per step of the phase recorder alone (CPU clock), hooks called by hand."""
    import torch

    from torchscale.rank.worker.phases import PhaseRecorder

    best = float("inf")
    param = torch.zeros(1)
    for _ in range(5):
        recorder = PhaseRecorder(steps, accum, torch.device("cpu"), cuda_events=False)
        hook = recorder._hook_cpu
        started = time.perf_counter()
        for _ in range(steps):
            recorder.step_start()
            for _ in range(accum):
                recorder.data_end()
                recorder.backward_start()
                for _ in range(parameters):
                    hook(param)
                recorder.backward_end()
            recorder.step_end()
        best = min(best, (time.perf_counter() - started) / steps)
        recorder.seconds()
    return best


def launch(args: argparse.Namespace) -> None:
    cores = len(os.sched_getaffinity(0))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "MASTER_", "PET_"))}
    env.setdefault("OMP_NUM_THREADS", str(max(1, cores // args.world)))
    # the repo first, then whatever the caller's PYTHONPATH held (site packages outside the venv)
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
            *("--device", args.device, "--accum", str(args.accum)),
            *("--strategy", args.strategy),
        ]
        started = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not out.exists():
            raise SystemExit(f"torchrun failed ({done.returncode}):\n{done.stderr[-4000:]}")
        result = json.loads(out.read_text(encoding="utf-8"))
    ratios = []
    for i, r in enumerate(result["rounds"], 1):
        ratio = r["on_s"] / r["off_s"]
        ratios.append(ratio)
        print(
            f"round {i:2d}: on {r['on_s'] / args.steps * 1e3:8.3f} ms/step, off "
            f"{r['off_s'] / args.steps * 1e3:8.3f} ms/step, ratio {ratio:.4f}"
            f" ({'on' if r['first'] else 'off'} first)",
            flush=True,
        )
    on = statistics.median(r["on_s"] for r in result["rounds"]) / args.steps
    off = statistics.median(r["off_s"] for r in result["rounds"]) / args.steps
    median_ratio = statistics.median(ratios)
    step_ratio = statistics.median(r["on_p50_s"] / r["off_p50_s"] for r in result["rounds"])
    print(
        f"\n{result['model']}, batch {result['batch']}, world {result['world']}, "
        f"{result['strategy']}, accum {result['accum']}, {result['device']} "
        f"({result['timing']}), {result['trainable_parameters']} trainable parameters, "
        f"OMP_NUM_THREADS={result['omp_num_threads']}, {args.rounds} rounds x 2 windows x "
        f"{args.steps} steps ({time.perf_counter() - started:.0f} s)"
    )
    print(f"median step: phase timing on {on * 1e3:.3f} ms, off {off * 1e3:.3f} ms")
    print(
        f"phase timing on / off: median of round ratios {median_ratio:.4f} "
        f"({(median_ratio - 1) * 100:+.2f}%), range {min(ratios):.4f}-{max(ratios):.4f}; "
        f"ratio of medians {on / off:.4f}; cost {(on - off) * 1e6:+.1f} us per step"
    )
    print(
        f"median step within each window, on / off: median over rounds {step_ratio:.4f} "
        f"({(step_ratio - 1) * 100:+.2f}%)"
    )
    alone = instrumentation_cost(result["trainable_parameters"], result["accum"])
    print(
        f"instrumentation alone (recorder calls + {result['trainable_parameters']} hook calls "
        f"per micro-batch, no training): {alone * 1e6:.1f} us per step = "
        f"{alone / off * 100:.3f}% of the median step"
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
    parser.add_argument("--accum", type=int, default=1)
    parser.add_argument("--strategy", choices=["ddp", "fsdp"], default="ddp")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
    else:
        launch(args)


if __name__ == "__main__":
    main()
