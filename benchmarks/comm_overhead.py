"""Does `torchscale comm` report the bandwidth a bare collective loop gets? Same run, same sizes.

Two comparisons per size; algbw ratios (busbw is algbw times a constant, so its ratio is the same):

- in one process group (judged): benchmarks/comm_interleaved_loop.py, one torchrun, takes turns
  between the bare all_reduce loop and the very function `torchscale comm` runs per size
  (`_row`: its buffers, window, gather and formulas), in rounds alternating which goes first,
  for `--seconds` per size. Bound: the median per-round ratio within 3 %; its 95 % bootstrap
  interval is printed beside it, so a noisy machine shows as a wide interval, not a verdict.
- whole commands (shown): the bare loop (benchmarks/bare_collective_loop.py) and the
  `torchscale comm` CLI, each its own torchrun, alternately for `--rounds` rounds. This adds the
  launch, but on a shared 2-core machine a 1 MiB window scatters by 2x from one launch to the
  next for either side, so it is printed for reference, not judged.

    python benchmarks/comm_overhead.py [--world 2] [--sizes 1M,64M] [--iters 20] \
        [--seconds 60] [--rounds 5] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from torchscale.contracts.units import parse_bytes  # noqa: E402

BOUND = 0.03


def _torchrun(
    args: argparse.Namespace, script: str, size: int, out: Path, env: dict[str, str], *extra: str
) -> None:
    """One torchrun of a benchmarks/ script on `args.world` local ranks."""
    argv = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={args.world}",
        "--max-restarts=0",
        str(REPO / "benchmarks" / script),
        f"--bytes={size}",
        f"--warmup={args.warmup}",
        f"--iters={args.iters}",
        f"--out={out}",
        f"--device={args.device}",
        *extra,
    ]
    subprocess.run(argv, env=env, check=True, capture_output=True)


def bare(args: argparse.Namespace, size: int, workdir: Path, env: dict[str, str]) -> float:
    out = workdir / "bare.json"
    _torchrun(args, "bare_collective_loop.py", size, out, env)
    return size / float(json.loads(out.read_text())["time_s"]) / 1e9


def interleaved(
    args: argparse.Namespace, size: int, workdir: Path, env: dict[str, str]
) -> list[dict[str, float]]:
    """Per round {"bare": GB/s, "torchscale": GB/s}, both taken in one process group."""
    out = workdir / "interleaved.json"
    _torchrun(args, "comm_interleaved_loop.py", size, out, env, f"--seconds={args.seconds}")
    rounds: list[dict[str, float]] = json.loads(out.read_text())["rounds"]
    return rounds


def harness(args: argparse.Namespace, size: int, workdir: Path, env: dict[str, str]) -> float:
    out = workdir / "comm.json"
    argv = [
        sys.executable,
        "-m",
        "torchscale",
        "--quiet",
        "comm",
        f"--gpus={args.world}",
        "--ops=all_reduce",
        f"--min-bytes={size}",
        f"--max-bytes={size}",
        f"--warmup={args.warmup}",
        f"--iters={args.iters}",
        "--no-check",
        f"--device={args.device}",
        f"--output-dir={workdir / 'results'}",
        f"--json={out}",
    ]
    subprocess.run(argv, env=env, check=True, capture_output=True)
    (row,) = json.loads(out.read_text())["rows"]
    return float(row["algbw_gbps"])


def paired_ratio(pairs: list[tuple[float, float]]) -> tuple[float, float, float, float]:
    """(median per-pair ratio, ratio of medians, lowest, highest pair ratio) of (ours, bare)."""
    ratios = [o / b for o, b in pairs]
    of_medians = statistics.median(o for o, _ in pairs) / statistics.median(b for _, b in pairs)
    return statistics.median(ratios), of_medians, min(ratios), max(ratios)


def median_interval(values: list[float], resamples: int = 2000) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of the median (fixed seed: the same data, the same
    interval)."""
    rng = random.Random(0)  # noqa: S311 (a bootstrap, not a secret)
    medians = sorted(
        statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples)
    )
    return medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--sizes", default="1M,64M")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument(
        "--seconds", type=float, default=60, help="per size, rounds in one process group"
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds of whole commands (0: none)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "MASTER_", "PET_"))}
    env["OMP_NUM_THREADS"] = str(max(1, cores // args.world))
    # the repo first, then whatever the caller's PYTHONPATH held (site packages outside the venv)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    started = time.perf_counter()
    verdicts = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for text in args.sizes.split(","):
            size = parse_bytes(text)
            turns = interleaved(args, size, workdir, env)
            median, of_medians, low, high = paired_ratio(
                [(t["torchscale"], t["bare"]) for t in turns]
            )
            lower, upper = median_interval([t["torchscale"] / t["bare"] for t in turns])
            ok = abs(median - 1) <= BOUND
            verdicts.append(ok)
            print(
                f"{text} ({size} B), one process group, {len(turns)} rounds: median algbw bare "
                f"{statistics.median(t['bare'] for t in turns):.4g}, torchscale "
                f"{statistics.median(t['torchscale'] for t in turns):.4g} GB/s; median per-round "
                f"ratio {median:.4f} ({(median - 1) * 100:+.2f} %, 95 % interval "
                f"{lower:.3f}-{upper:.3f}, rounds {low:.3f}-{high:.3f}, ratio of medians "
                f"{of_medians:.4f}); bound +-{BOUND * 100:.0f} %: {'met' if ok else 'NOT met'}",
                flush=True,
            )
            if args.rounds < 1:
                continue
            whole: list[tuple[float, float]] = []
            for _ in range(args.rounds):
                bare_gbps = bare(args, size, workdir, env)
                whole.append((harness(args, size, workdir, env), bare_gbps))
            median, of_medians, low, high = paired_ratio(whole)
            print(
                f"{text} ({size} B), whole commands, {len(whole)} rounds (not judged): median "
                f"algbw bare {statistics.median(b for _, b in whole):.4g}, torchscale comm "
                f"{statistics.median(o for o, _ in whole):.4g} GB/s; median per-round ratio "
                f"{median:.4f} (rounds {low:.3f}-{high:.3f}, ratio of medians {of_medians:.4f})",
                flush=True,
            )
    print(
        f"\nall_reduce, {args.world} rank(s) on {args.device}, {args.iters} iterations per "
        f"window, OMP_NUM_THREADS={env['OMP_NUM_THREADS']} "
        f"({time.perf_counter() - started:.0f} s); bound {'met' if all(verdicts) else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
