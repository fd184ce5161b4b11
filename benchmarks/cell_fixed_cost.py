"""What does a torchscale cell cost before its first measured step? Against a bare torchrun.

Every cell is a fresh torchrun, so what a cell costs before it measures anything is paid once
per cell, probe and resume. This script times it against the least any distributed run pays,
and against the least a DDP training script pays:

- bare: `python -m torch.distributed.run --standalone --nproc-per-node=N --max-restarts=0` of
  this file, whose ranks import torch, initialise gloo, pass one barrier and mark;
- bare DDP: the same, with what any DDP training script does before it times anything: the
  model (torchscale's registry, as benchmarks/bare_ddp_loop.py), DDP (no wrapper at world
  size 1, as a cell), fused AdamW, the warm-up steps, then the barrier and the mark;
- torchscale: one cell launched by torchscale's own launch path
(`torchscale.orchestration.sweep.run_cell`:
  the spec, torchrun's argv and environment as a sweep builds them), whose ranks import the
  worker, build the model, warm up, count FLOPs and open the first window as any cell does;
  its model (the built-in one, wrapped by the plug-in `marked` below) marks when the first
  measured step starts (the forward call after the warm-up and FLOP steps).

A mark is the wall time and the rank's own CPU time then (user + system: what the rank
computed, whatever else the machine ran). Launch to the last rank's mark is the fixed cost;
launch to exit (the whole process: the gather, the result's write, the exit) is printed too.
All sides run with the same interpreter, OMP_NUM_THREADS and a CPU cell's malloc settings;
ROUNDS rounds, the order rotated every round (a drift of a shared machine, or a first-launch
effect, hits every side), and the medians of the rounds' ratios are what to quote (the
target: torchscale / bare <= 1.15). The 1-minute load average is printed before and after;
when other work held more than half the cores at the start, the output says the wall-time
ratios are noise (the CPU seconds hold up better: they count only the rank's own work).

    python benchmarks/cell_fixed_cost.py [--model tiny-mlp] [--batch 8] [--world 2] \
        [--warmup 5] [--steps 10] [--rounds 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PLUGIN = f"{Path(__file__).stem}:marked"  # imported by the ranks from benchmarks/
TARGET = 1.15
BUSY_SHARE = 0.5  # other work on more than this share of the cores at the start: noise
HEAVY = ("scipy", "pandas")  # what a rank should not have imported before its windows end
SIDES = ("bare", "bare DDP", "torchscale")


def _write_mark(prefix: str, rank: int | str) -> None:
    """This rank's mark: the time, its CPU seconds so far, which of HEAVY it has imported,
    how many objects it has frozen out of garbage collection."""
    now = time.time()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    loaded = [name for name in HEAVY if name in sys.modules]
    mark = {
        "time": now,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "loaded": loaded,
        "frozen": gc.get_freeze_count(),  # set-up's objects out of the edge's collection
    }
    Path(f"{prefix}.{rank}").write_text(json.dumps(mark))


def marked(model: str = "tiny-mlp", mark_file: str = "", mark_at: int = 1) -> Any:
    """The plug-in: built-in `model`, writing its mark to `mark_file`.<rank> when its forward
    is called for the `mark_at`-th time (runs inside every rank of the cell)."""
    from torchscale.rank.models import build_model

    bundle = build_model(model)
    calls = 0

    def mark(_module: Any, _inputs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == mark_at:
            _write_mark(mark_file, os.environ.get("RANK", "0"))

    bundle.model.register_forward_pre_hook(mark)
    return bundle


def bare_rank(out: str, model: str | None, batch: int, warmup: int) -> None:
    """One rank of a bare side: torch, gloo; with `model`, the model, DDP, fused AdamW and
    `warmup` training steps; one barrier, the mark, the exit."""
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    if model is not None:
        from torch.nn.parallel import DistributedDataParallel

        from torchscale.rank.models import build_model, call_model

        torch.manual_seed(0)
        bundle = build_model(model)
        wrapped = bundle.model
        if dist.get_world_size() > 1:  # as a cell: a lone rank has no DDP wrapper
            wrapped = DistributedDataParallel(bundle.model)
        optimizer = torch.optim.AdamW(wrapped.parameters(), lr=1e-4, fused=True)
        inputs, targets = bundle.make_batch(batch, torch.device("cpu"))
        loss_fn = bundle.eager_loss_fn or bundle.loss_fn
        for _ in range(warmup):
            loss_fn(call_model(wrapped, inputs), targets).backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    dist.barrier()
    _write_mark(out, dist.get_rank())
    dist.destroy_process_group()
    # as a cell's rank leaves (torchscale.rank.worker.harness.leave_without_teardown): on gloo
    # a rank sometimes aborts in interpreter teardown, seen here with DDP about 1 run in 10
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


@dataclass(frozen=True)
class Run:
    """One side's launch: seconds from launch to the last rank's mark and to exit, the
    largest CPU seconds of a rank at its mark, what of HEAVY any rank had imported, and the
    fewest objects a rank had frozen out of garbage collection."""

    first_s: float
    exit_s: float
    cpu_s: float
    loaded: list[str]
    frozen: int


def _run_of(prefix: Path, world: int, started: float, ended: float) -> Run:
    marks = [json.loads(Path(f"{prefix}.{rank}").read_text()) for rank in range(world)]
    return Run(
        first_s=max(float(m["time"]) for m in marks) - started,
        exit_s=ended - started,
        cpu_s=max(float(m["cpu_s"]) for m in marks),
        loaded=sorted({name for m in marks for name in m["loaded"]}),
        frozen=min(int(m["frozen"]) for m in marks),
    )


def run_bare(
    args: argparse.Namespace, workdir: Path, env: dict[str, str], index: int, ddp: bool
) -> Run:
    out = workdir / f"{'ddp' if ddp else 'bare'}-mark-{index}"
    argv = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={args.world}",
        "--max-restarts=0",
        str(Path(__file__).resolve()),
        "--bare-rank",
        str(out),
        *(("--bare-model", args.model, "--batch", str(args.batch)) if ddp else ()),
        *("--warmup", str(args.warmup)),
    ]
    started = time.time()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    ended = time.time()
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-80:])
        raise SystemExit(f"the {'bare DDP' if ddp else 'bare'} side failed:\n{tail}")
    return _run_of(out, args.world, started, ended)


def cell_config(args: argparse.Namespace, mark: Path, threads: int) -> Any:
    """A one-cell config of the plug-in, measured as a cell with these settings is."""
    from torchscale.orchestration.config.schema import BenchConfig

    flops = not args.no_flops
    mark_at = args.warmup + (1 if flops else 0) + 1  # the first measured step's forward
    return BenchConfig.model_validate(
        {
            "experiment_name": "fixed-cost",
            "models": [
                {
                    "name": PLUGIN,
                    "label": args.model,
                    "options": {"model": args.model, "mark_file": str(mark), "mark_at": mark_at},
                }
            ],
            "batch_sizes": [args.batch],
            "gpu_counts": [args.world],
            "device": "cpu",
            "measurement": {
                "warmup_steps": args.warmup,
                "steps": args.steps,
                "repeats": 1,
                "flops": flops,
            },
            "launcher": {"omp_num_threads": threads},
        }
    )


def run_torchscale(args: argparse.Namespace, workdir: Path, env: dict[str, str], index: int) -> Run:
    from torchscale.interfaces.api.benchmark import plan_benchmark
    from torchscale.offline.results.store import ResultStore
    from torchscale.orchestration.sweep import run_cell

    mark = workdir / f"cell-mark-{index}"
    config = cell_config(args, mark, int(env["OMP_NUM_THREADS"]))
    (planned,) = plan_benchmark(config).runnable
    store = ResultStore(workdir / f"cell-{index}")
    started = time.time()
    result = run_cell(planned, store, env)
    ended = time.time()
    if result.status != "ok":
        reason = result.error.reason if result.error else result.status
        raise SystemExit(f"the torchscale cell did not finish ok: {reason}")
    return _run_of(mark, args.world, started, ended)


def _median(values: list[float]) -> float:
    return statistics.median(values)


def report(rounds: list[dict[str, Run]], cores: int, load_before: float) -> None:
    """The medians over rounds: each side's seconds, and the rounds' ratios."""

    def ratios(top: str, bottom: str, field: Callable[[Run], float]) -> float:
        return _median([field(r[top]) / field(r[bottom]) for r in rounds])

    for side in SIDES:
        first = _median([r[side].first_s for r in rounds])
        whole = _median([r[side].exit_s for r in rounds])
        cpu = _median([r[side].cpu_s for r in rounds])
        print(
            f"{side:>10}: launch to first measured step {first:.2f} s, to exit {whole:.2f} s, "
            f"CPU of a rank by its first step {cpu:.2f} s (medians)"
        )
    ratio = ratios("torchscale", "bare", lambda r: r.first_s)
    print(
        f"median ratio torchscale / bare, to the first measured step: {ratio:.3f} "
        f"(target <= {TARGET:.2f}: {'met' if ratio <= TARGET else 'MISSED'}); whole process: "
        f"{ratios('torchscale', 'bare', lambda r: r.exit_s):.3f}; a rank's CPU: "
        f"{ratios('torchscale', 'bare', lambda r: r.cpu_s):.3f}"
    )
    print(
        f"median ratio torchscale / bare DDP (what the harness adds to a DDP script): to the "
        f"first measured step {ratios('torchscale', 'bare DDP', lambda r: r.first_s):.3f}; "
        f"whole process {ratios('torchscale', 'bare DDP', lambda r: r.exit_s):.3f}; a rank's "
        f"CPU {ratios('torchscale', 'bare DDP', lambda r: r.cpu_s):.3f}"
    )
    loaded = sorted({name for r in rounds for name in r["torchscale"].loaded})
    frozen = min(r["torchscale"].frozen for r in rounds)
    print(
        f"{' and '.join(HEAVY)} in a rank at its first measured step: "
        f"{', '.join(loaded) if loaded else 'neither'}; set-up objects frozen out of the "
        f"window edges' garbage collection: {frozen:,}"
    )
    if load_before > BUSY_SHARE * cores:
        print(
            f"noise: other work held the machine at the start (1-min load average "
            f"{load_before:.2f} on {cores} core(s)): the wall-time ratios say more about it "
            "than about torchscale; measure again on a quiet machine"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="tiny-mlp")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-flops", action="store_true", help="measurement.flops: false")
    parser.add_argument("--json", type=Path, help="also write every round here")
    parser.add_argument("--bare-rank", help=argparse.SUPPRESS)  # a rank of a bare side
    parser.add_argument("--bare-model", help=argparse.SUPPRESS)  # ... of the bare DDP side
    args = parser.parse_args()
    if args.bare_rank:
        bare_rank(args.bare_rank, args.bare_model, args.batch, args.warmup)
        return
    cores = len(os.sched_getaffinity(0))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "MASTER_", "PET_"))}
    env.setdefault("OMP_NUM_THREADS", str(max(1, cores // args.world)))
    # the repo first (torchscale), then benchmarks/ (the plug-in), then the caller's path
    paths = [str(REPO), str(REPO / "benchmarks"), env.get("PYTHONPATH")]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    from torchscale.orchestration.launch.cpu_malloc import malloc_reuse_env

    env.update(malloc_reuse_env(env))  # the bare sides under a CPU cell's malloc settings
    load_before = os.getloadavg()[0]
    print(
        f"{args.model}, batch {args.batch}, {args.world} gloo rank(s), {args.warmup} warm-up "
        f"steps, FLOP step {'off' if args.no_flops else 'on'}, OMP_NUM_THREADS="
        f"{env['OMP_NUM_THREADS']}, {cores} core(s); 1-min load average before: {load_before:.2f}",
        flush=True,
    )
    rounds: list[dict[str, Run]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cell-fixed-cost-") as tmp:
        workdir = Path(tmp)
        launch: dict[str, Callable[[int], Run]] = {
            "bare": lambda i: run_bare(args, workdir, env, i, ddp=False),
            "bare DDP": lambda i: run_bare(args, workdir, env, i, ddp=True),
            "torchscale": lambda i: run_torchscale(args, workdir, env, i),
        }
        for i in range(args.rounds):
            order = SIDES[i % len(SIDES) :] + SIDES[: i % len(SIDES)]
            runs = {side: launch[side](i) for side in order}
            rounds.append(runs)
            bare, cell = runs["bare"], runs["torchscale"]
            print(
                f"round {i + 1} ({', '.join(order)}): to the first step "
                + ", ".join(f"{side} {runs[side].first_s:.2f} s" for side in SIDES)
                + f" (torchscale / bare {cell.first_s / bare.first_s:.3f}); to exit "
                f"torchscale / bare {cell.exit_s / bare.exit_s:.3f}",
                flush=True,
            )
    print(
        f"\n{args.rounds} rounds in {time.perf_counter() - started:.0f} s; 1-min load average "
        f"after: {os.getloadavg()[0]:.2f}"
    )
    report(rounds, cores, load_before)
    if args.json is not None:
        records = [{side: vars(run) for side, run in r.items()} for r in rounds]
        args.json.write_text(json.dumps({"args": vars(args) | {"json": None}, "rounds": records}))


if __name__ == "__main__":
    main()
