"""One benchmark cell -> the torchrun command that runs it (argv and environment as data).

torchrun is started through the current interpreter (`python -m torch.distributed.run`), so the
cell runs with the same torch as torchscale even when `torchrun` on PATH belongs to another
environment. `--standalone` rendezvous on a free local port (back-to-back and concurrent cells
never collide), `--max-restarts=0` (a restart would silently mix two runs' timings), per-rank
logs in the cell's log directory, and a torchelastic error file for the root cause.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from torchscale.launch.environment import child_environment
from torchscale.plan import Cell

WORKER_MODULE = "torchscale.worker.main"


@dataclass(frozen=True)
class LaunchCommand:
    argv: list[str]
    env: dict[str, str]
    env_overrides: dict[str, str]  # what torchscale set on top of the inherited environment
    omp_num_threads: int
    error_file: Path
    log_dir: Path


def omp_threads(configured: int | None, cpu_cores: int, nproc: int) -> int:
    """OMP_NUM_THREADS per rank: as configured, else the cores shared out among the ranks.

    Always set explicitly: torchrun sets 1 only when nproc > 1, and one rank with the library
    default on a busy machine was seen 80x slower per step.
    """
    if configured is not None:
        return configured
    return max(1, cpu_cores // max(1, nproc))


def visible_devices(inherited: str | None, count: int) -> str:
    """The first `count` GPUs of those this process may use, as CUDA_VISIBLE_DEVICES."""
    if inherited:
        pool = [d.strip() for d in inherited.split(",") if d.strip()]
    else:
        pool = [str(i) for i in range(count)]
    return ",".join(pool[:count])


def torchrun_command(
    cell: Cell,
    spec_path: Path,
    log_dir: Path,
    base_env: Mapping[str, str],
    cpu_cores: int,
    omp_num_threads: int | None = None,
    extra_env: Mapping[str, str] | None = None,
    python: str = sys.executable,
) -> LaunchCommand:
    """The command for a single-node cell (one torchrun with world_size processes)."""
    nproc = cell.world_size
    threads = omp_threads(omp_num_threads, cpu_cores, nproc)
    error_file = log_dir / "error.json"
    argv = [
        python,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nnodes=1",
        f"--nproc-per-node={nproc}",
        "--max-restarts=0",
        "--log-dir",
        str(log_dir / "ranks"),
        "--redirects",
        "3",
        "-m",
        WORKER_MODULE,
        "--spec",
        str(spec_path),
    ]
    overrides = {
        "OMP_NUM_THREADS": str(threads),
        "TORCHELASTIC_ERROR_FILE": str(error_file),
        "PYTHONUNBUFFERED": "1",
    }
    if cell.device == "cuda":
        overrides["CUDA_VISIBLE_DEVICES"] = visible_devices(
            base_env.get("CUDA_VISIBLE_DEVICES"), nproc
        )
    overrides.update(extra_env or {})
    if overrides["OMP_NUM_THREADS"].isdigit():  # an explicit env value wins: record what runs
        threads = int(overrides["OMP_NUM_THREADS"])
    env = child_environment(base_env, overrides)
    return LaunchCommand(argv, env, overrides, threads, error_file, log_dir)
