r"""The balanced floor of this machine: identical work on two cores, judged by the straggler
rule. How often would the rule name a rank that does exactly what the other does? Measured.

No torchscale process runs here: two bare ranks (torch.distributed, gloo, the store in this
process as torchrun's agent hosts it), each bound to a core of its own and one intra-op thread
(as torchscale binds CPU ranks), train the same model with the same seed and the same batch,
with torchscale's defaults (fused AdamW; with --ddp, DDP with gradients as bucket views). A
rank's own work per step is timed as the phase timers time it: from the step's start to its
last gradient, plus the optimizer step (wall time, its thread's CPU time and its wait for a CPU,
Linux run_delay). The gradients' allreduce overlaps backward with --ddp (as a run trains), and
follows the step's own work without it (so it never shares the core with the work). The ranks
synchronise only by their gradients and every 48 steps (to stop together). Every difference
between the ranks' own work is the machine's, not the program's.

Then the product's rule, the same pure functions a diagnosis calls (`excess_costs`,
`cost_test` at ALPHA with the 5 % minimum effect of the window's mean step), judges every
non-overlapping window of --windows steps (a benchmark cell measures 48 steps, a profile traces
24), as if each window were one balanced run. Printed: how many windows it would name a rank
in (a rate with its 95 % Clopper-Pearson interval), whether the named rank's own CPU time rose
with its wall time (a slower core: the same instructions took longer on the CPU) or its wait for
a CPU did (the host), and how long a core stayed slower (runs of consecutive seconds with one
rank's median step at least 5 % over the other's).

    python benchmarks/core_speed.py [--ddp] [--seconds 300] [--cores 0,1] [--sleep-ms 0] \
        [--windows 24,48] [--json f] [--load f ...]

--sleep-ms makes rank 1 sleep that long in each step's work (a slow loader): what the ranks'
waits for a CPU do then, with no torchscale process beside them.

With fewer than 2 cores it says so and stops. The load before and after and the cores other
processes used beside the ranks are printed: beside other work the windows measure that work,
not the machine (said, not judged).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from scipy.stats import binomtest

from torchscale.offline.analysis.diagnosis.cost import cost_test, excess_costs
from torchscale.offline.analysis.diagnosis.step_model import ALPHA, MIN_EFFECT_SHARE

WIDTH, LAYERS, BATCH, WARMUP = 768, 4, 32, 30  # benchmarks/heldout_plugins.py's balanced run
WINDOW_EDGE = 48  # steps between the syncs that decide when to stop


def _run_delay_s() -> float:
    """This thread's time runnable but not running (Linux schedstat), or NaN."""
    try:
        fields = Path(f"/proc/self/task/{_tid()}/schedstat").read_text(encoding="ascii")
        return int(fields.split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return float("nan")


def _busy_s(times: psutil._common.scputimes) -> float:
    """The host's busy CPU seconds since boot (all but idle and iowait)."""
    return float(sum(times) - times.idle - getattr(times, "iowait", 0.0))


def _children_s() -> float:
    """CPU seconds of this script's finished children: the 2 ranks, once joined."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tid() -> int:
    return int(getattr(os, "gettid", os.getpid)())


def _clocks() -> tuple[float, float, float]:
    return time.perf_counter(), time.thread_time(), _run_delay_s()


def _rank(
    rank: int, port: int, seconds: float, out: str, ddp: bool, core: int, sleep_s: float
) -> None:
    os.sched_setaffinity(0, {core})
    torch.set_num_threads(1)
    # the store lives in the parent, as torchrun's agent hosts it: no rank serves it
    store = dist.TCPStore("127.0.0.1", port, 2, is_master=False)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=2)
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS)])
    params = list(model.parameters())
    # backward's own work ends at its last gradient (CPU autograd runs on this thread); under
    # DDP what follows is the wait for the overlapped allreduce, not work
    last_grad: list[tuple[float, float, float]] = [(0.0, 0.0, 0.0)]
    for p in params:
        p.register_post_accumulate_grad_hook(lambda _: last_grad.__setitem__(0, _clocks()))
    # torchscale's defaults: gradients as bucket views, fused AdamW
    trained = (
        torch.nn.parallel.DistributedDataParallel(model, gradient_as_bucket_view=True)
        if ddp
        else model
    )
    optimizer = torch.optim.AdamW(params, lr=1e-4, fused=True)
    x, y = torch.randn(BATCH, WIDTH), torch.randn(BATCH, WIDTH)
    rows: list[tuple[float, float, float, float]] = []
    stop = torch.zeros(1)
    started = time.perf_counter()
    step = 0
    while True:
        begin = _clocks()
        if rank == 1 and sleep_s > 0:
            time.sleep(sleep_s)  # a slow loader on rank 1: not runnable, so no wait for a CPU
        optimizer.zero_grad(set_to_none=False)
        torch.nn.functional.mse_loss(trained(x), y).backward()
        if not ddp:
            flat = torch.cat([p.grad.reshape(-1) for p in params])
            dist.all_reduce(flat)
        before_step = _clocks()
        optimizer.step()
        end = _clocks()
        own = [(last_grad[0][i] - begin[i]) + (end[i] - before_step[i]) for i in range(3)]
        step += 1
        if step > WARMUP:
            rows.append((*own, end[0] - begin[0]))
        if step % WINDOW_EDGE:
            continue
        # rank 0 decides when to stop; both learn it at the same step (a sync every
        # WINDOW_EDGE steps, as a run synchronises only at its windows' edges)
        stop[0] = float(rank == 0 and time.perf_counter() - started > seconds)
        dist.all_reduce(stop)
        if stop[0] > 0:
            break
    Path(out).write_text(json.dumps(rows), encoding="utf-8")
    dist.destroy_process_group()


def measure(
    seconds: float,
    folder: Path,
    ddp: bool,
    cores: tuple[int, int] = (0, 1),
    sleep_s: float = 0.0,
) -> dict[str, list[list[float]]]:
    """Per rank, per measured step: (own wall s, own CPU s, own wait for a CPU s, the step's
    wall s with its allreduce)."""
    outs = [str(folder / f"rank{r}.json") for r in range(2)]
    store = dist.TCPStore("127.0.0.1", 0, 2, is_master=True, wait_for_workers=False)
    port = store.port
    mp.start_processes(
        _rank_entry,
        args=(port, seconds, outs, ddp, cores, sleep_s),
        nprocs=2,
        join=True,
        start_method="spawn",
    )
    return {str(r): json.loads(Path(o).read_text(encoding="utf-8")) for r, o in enumerate(outs)}


def _rank_entry(
    rank: int,
    port: int,
    seconds: float,
    outs: list[str],
    ddp: bool,
    cores: tuple[int, int],
    sleep_s: float,
) -> None:
    _rank(rank, port, seconds, outs[rank], ddp, cores[rank], sleep_s)


def _interval(k: int, n: int) -> str:
    if n == 0:
        return "no windows"
    ci = binomtest(k, n).proportion_ci(0.95, method="exact")
    return f"{k} of {n} ({100 * k / n:.1f} %, {100 * ci.low:.1f}-{100 * ci.high:.1f} %)"


def judge(runs: dict[str, list[list[float]]], window: int) -> list[dict[str, float | bool]]:
    """Each non-overlapping window of `window` steps judged by the product's cost rule."""
    steps = min(len(runs["0"]), len(runs["1"]))
    data = {r: np.asarray(runs[r][:steps]) for r in ("0", "1")}
    found: list[dict[str, float | bool]] = []
    for start in range(0, steps - window + 1, window):
        part = slice(start, start + window)
        own = pd.DataFrame({r: data[r][part, 0] for r in ("0", "1")})
        # the minimum effect is a share of the whole step, its allreduce included, as in a run
        step_mean = float(np.mean([data[r][part, 3].mean() for r in ("0", "1")]))
        costs = excess_costs(own)
        candidate = max(("0", "1"), key=lambda r: float(costs[r].mean()))
        other = "1" if candidate == "0" else "0"
        test = cost_test(
            costs[candidate],
            min_effect_s=MIN_EFFECT_SHARE * step_mean,
            alpha=ALPHA,
            candidates=2,
        )
        found.append(
            {
                "named": bool(test.significant),
                "rank": int(candidate),
                "cost_share": test.mean_s / step_mean,
                "wall_extra_s": float(np.mean(data[candidate][part, 0] - data[other][part, 0])),
                "cpu_extra_s": float(np.mean(data[candidate][part, 1] - data[other][part, 1])),
                "wait_extra_s": float(np.mean(data[candidate][part, 2] - data[other][part, 2])),
            }
        )
    return found


def slow_spells(runs: dict[str, list[list[float]]]) -> tuple[float, list[int]]:
    """(share of seconds one rank's median step was >= 5 % over the other's, the lengths in
    seconds of the runs of such seconds)."""
    steps = min(len(runs["0"]), len(runs["1"]))
    walls = [np.asarray(runs[r][:steps])[:, 0] for r in ("0", "1")]
    ends = np.cumsum(np.maximum(walls[0], walls[1]))  # roughly the steps' own-work clock
    second = (ends // 1.0).astype(int)
    slow: list[bool] = []
    for s in np.unique(second):
        inside = second == s
        if inside.sum() < 5:
            continue
        a, b = np.median(walls[0][inside]), np.median(walls[1][inside])
        slow.append(max(a, b) >= (1 + MIN_EFFECT_SHARE) * min(a, b))
    spells: list[int] = []
    length = 0
    for flag in [*slow, False]:
        if flag:
            length += 1
        elif length:
            spells.append(length)
            length = 0
    return (float(np.mean(slow)) if slow else 0.0), spells


def report(runs: dict[str, list[list[float]]], windows: list[int]) -> None:
    cores = [int(c) for c in np.asarray(runs.get("cores", [[0], [1]])).ravel()]
    steps = min(len(runs["0"]), len(runs["1"]))
    walls = [np.asarray(runs[r][:steps])[:, 0] for r in ("0", "1")]
    whole = np.asarray(runs["0"][:steps])
    whole_ms = f"{1e3 * np.median(whole[:, 3]):.2f} ms" if whole.shape[1] > 3 else "not recorded"
    print(f"{steps} steps per rank, median step {whole_ms} (with its allreduce)")
    print(
        f"own work median {1e3 * np.median(walls[0]):.2f} ms (rank 0, core {cores[0]}) and "
        f"{1e3 * np.median(walls[1]):.2f} ms (rank 1, core {cores[1]})"
    )
    waits = [1e3 * np.asarray(runs[r][:steps])[:, 2].mean() for r in ("0", "1")]
    print(f"wait for a CPU per step, mean: rank 0 {waits[0]:.3f} ms, rank 1 {waits[1]:.3f} ms")
    share, spells = slow_spells(runs)
    longest = max(spells) if spells else 0
    print(
        f"seconds with one core >= {MIN_EFFECT_SHARE * 100:.0f} % slower: {100 * share:.1f} %, "
        f"in {len(spells)} spells, the longest {longest} s"
    )
    for window in windows:
        found = judge(runs, window)
        named = [w for w in found if w["named"]]
        rate = _interval(len(named), len(found))
        print(f"windows of {window} steps: the rule names a rank in {rate}")
        if named:
            cpu_led = sum(
                1 for w in named if float(w["cpu_extra_s"]) >= 0.5 * float(w["wall_extra_s"])
            )
            wait_led = sum(
                1 for w in named if float(w["wait_extra_s"]) >= 0.5 * float(w["wall_extra_s"])
            )
            costs = sorted(100 * float(w["cost_share"]) for w in named)
            on_rank0 = sum(1 for w in named if w["rank"] == 0)
            print(
                f"  named at {costs[0]:.1f}-{costs[-1]:.1f} % of the step; its CPU time carried "
                f"half its extra or more in {cpu_led}, its wait for a CPU in {wait_led}; "
                f"rank 0 (core {cores[0]}) in {on_rank0}, rank 1 (core {cores[1]}) in "
                f"{len(named) - on_rank0}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--windows", default="24,48")
    parser.add_argument(
        "--cores",
        type=lambda text: tuple(int(c) for c in text.split(",")),
        default=(0, 1),
        help="the core of rank 0 and of rank 1",
    )
    parser.add_argument(
        "--sleep-ms", type=float, default=0.0, help="rank 1 sleeps this long in each step's work"
    )
    parser.add_argument(
        "--ddp", action="store_true", help="DDP's allreduce overlapped with backward, as a run"
    )
    parser.add_argument("--json", type=Path, help="save the per-step figures here")
    parser.add_argument("--load", type=Path, nargs="*", help="judge saved runs, run nothing")
    args = parser.parse_args()
    windows = [int(w) for w in args.windows.split(",")]
    if args.load:
        for path in args.load:
            print(f"{path}:")
            report(json.loads(path.read_text(encoding="utf-8")), windows)
        return
    if len(os.sched_getaffinity(0)) < 2:
        sys.exit("core_speed: needs 2 cores to bind 2 ranks to")
    before, host_before, ranks_before = os.getloadavg()[0], psutil.cpu_times(), _children_s()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        runs = measure(args.seconds, Path(tmp), args.ddp, args.cores, args.sleep_ms / 1e3)
    runs["cores"] = [[c] for c in args.cores]
    wall = time.perf_counter() - started
    host_after = psutil.cpu_times()
    busy = _busy_s(host_after) - _busy_s(host_before)
    others = max(0.0, busy - (_children_s() - ranks_before)) / wall
    print(
        f"1-minute load {before:.2f} before, {os.getloadavg()[0]:.2f} after; other processes "
        f"used {others:.2f} cores beside the 2 ranks"
    )
    if others >= 0.25:
        print("  other work was running: these windows measure it too, not the machine alone")
    if args.json:
        args.json.write_text(json.dumps(runs), encoding="utf-8")
    report(runs, windows)


if __name__ == "__main__":
    main()
