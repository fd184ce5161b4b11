"""The one torchrun command builder (argv and environment as data), for every launch we make
(docs/methodology.md, "One cell, one process tree": no restarts, a clean environment, threads).

torchrun runs under the current interpreter (`python -m torch.distributed.run`): a `torchrun` on
PATH may belong to another environment's torch. `--standalone` rendezvous takes a free local
port, so back-to-back and concurrent launches never collide.
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

from pydantic import BaseModel

from torchscale.contracts.cell import Device
from torchscale.contracts.cpu_binding import BIND_TO_CORES, CPU_BINDING_ENV
from torchscale.contracts.rank_diagnostics import DIAGNOSTICS_ENV, ERROR_FILE_ENV
from torchscale.contracts.rank_programs import ENTRY, entry_args
from torchscale.contracts.shared_gpu import RANKS_PER_GPU_ENV, gpus_for
from torchscale.orchestration.launch.compile_cache import compile_cache_env
from torchscale.orchestration.launch.cpu_malloc import malloc_reuse_env
from torchscale.orchestration.launch.torchrun_env import child_environment

# NCCL flight recorder: ring buffer of recent collectives per rank, dumped on timeout / request
FLIGHT_RECORDER_ENTRIES = "2000"
# its size's name: torch 2.11 warns "TORCH_NCCL_TRACE_BUFFER_SIZE is deprecated; use
# TORCH_FR_BUFFER_SIZE" (and reads the old name only as a fallback, warning whenever it is set),
# while older torch reads the old name alone; below FR_NAME_SINCE both are set
FR_BUFFER_SIZE = "TORCH_FR_BUFFER_SIZE"
OLD_FR_BUFFER_SIZE = "TORCH_NCCL_TRACE_BUFFER_SIZE"
FR_NAME_SINCE = (2, 11)
# the rendezvous of a launch on this node alone
ONE_NODE = ("--standalone", "--nnodes=1")


@dataclass(frozen=True)
class LaunchCommand:
    argv: list[str]
    env: dict[str, str]
    env_overrides: dict[str, str]  # what torchscale set on top of the inherited environment
    omp_num_threads: int
    nproc: int
    error_file: Path
    log_dir: Path

    @property
    def log_path(self) -> Path:
        """torchrun's own combined stdout/stderr."""
        return self.log_dir / "torchrun.log"

    @property
    def diagnostics_dir(self) -> Path:
        return self.log_dir / "diagnostics"


def installed_torch() -> tuple[int, int] | None:
    """(major, minor) of the torch the ranks import (torchrun runs under this interpreter),
    from the package metadata without importing torch; None when it cannot be read."""
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2])) if match else None


def flight_recorder_size(torch_version: tuple[int, int] | None) -> dict[str, str]:
    """The flight recorder's buffer size under the name this torch reads: the new name alone
    from FR_NAME_SINCE (the old one would be warned about), both below it or when unknown."""
    sizes = {FR_BUFFER_SIZE: FLIGHT_RECORDER_ENTRIES}
    if torch_version is None or torch_version < FR_NAME_SINCE:
        sizes[OLD_FR_BUFFER_SIZE] = FLIGHT_RECORDER_ENTRIES
    return sizes


def visible_devices(inherited: str | None, count: int) -> str:
    """The first `count` GPUs of those this process may use, as CUDA_VISIBLE_DEVICES."""
    if inherited:
        pool = [d.strip() for d in inherited.split(",") if d.strip()]
    else:
        pool = [str(i) for i in range(count)]
    return ",".join(pool[:count])


def torchrun_command(
    module: str,
    module_args: Sequence[str],
    *,
    nproc: int,
    device: Device,
    log_dir: Path,
    base_env: Mapping[str, str],
    omp_num_threads: int,
    extra_env: Mapping[str, str] | None = None,
    python: str = sys.executable,
    rendezvous: Sequence[str] = ONE_NODE,
    malloc_reuse: bool = False,
    compile_cache: PurePath | None = None,
    cpu_binding: bool = False,
    as_script: bool = False,
    ranks_per_gpu: int = 1,
) -> LaunchCommand:
    """A launch of `python -m module *module_args` (with `as_script`, of the script at the
    path `module`: a user's `python train.py` line) on `nproc` ranks per node: one node with
    the default `rendezvous`, or whatever a multi-node launcher passes instead
    (`--nnodes=2 --rdzv-backend=c10d ...`, torchscale/orchestration/schedulers/slurm/step.py).

    OMP_NUM_THREADS is always set explicitly (torchrun sets 1 only when nproc > 1, and one rank
    with the library default on a busy machine was seen 80x slower); `extra_env` (the config's
    launcher.env) goes on top, so what is recorded is what ran. `malloc_reuse` (CPU benchmark
    cells): glibc keeps freed memory for the next step (launch/cpu_malloc.py), thresholds the
    user set left as theirs. `compile_cache` (compiled cells): inductor's and Triton's cache
    directories there, unless the user set their own (launch/compile_cache.py). `cpu_binding`
    (CPU cells): each rank binds itself to its own share of the node's cores.
    `ranks_per_gpu` (CUDA cells above 1): the node's first GPUs, that many ranks each, and
    the ranks told so (contracts/shared_gpu.py).
    """
    error_file = log_dir / "error.json"
    argv = [python, "-m", "torch.distributed.run", *rendezvous, f"--nproc-per-node={nproc}"]
    argv += ["--max-restarts=0", "--log-dir", str(log_dir / "ranks"), "--redirects", "3"]
    argv += [module, *module_args] if as_script else ["-m", module, *module_args]
    diagnostics = log_dir / "diagnostics"
    overrides = {
        "OMP_NUM_THREADS": str(omp_num_threads),
        ERROR_FILE_ENV: str(error_file),
        "PYTHONUNBUFFERED": "1",
        DIAGNOSTICS_ENV: str(diagnostics),
    }
    if device == "cuda":
        overrides["CUDA_VISIBLE_DEVICES"] = visible_devices(
            base_env.get("CUDA_VISIBLE_DEVICES"), gpus_for(nproc, ranks_per_gpu)
        )
        if ranks_per_gpu > 1:
            overrides[RANKS_PER_GPU_ENV] = str(ranks_per_gpu)
        # NCCL flight recorder: kept with the logs when a cell hangs
        overrides.update(flight_recorder_size(installed_torch()))
        overrides["TORCH_NCCL_DUMP_ON_TIMEOUT"] = "1"
        overrides["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] = str(diagnostics / "nccl_trace_rank_")
    if compile_cache is not None:
        overrides.update(compile_cache_env(compile_cache, {**base_env, **(extra_env or {})}))
    overrides.update(extra_env or {})
    if malloc_reuse:
        overrides.update(malloc_reuse_env({**base_env, **overrides}))
    if cpu_binding:  # each rank binds itself to its own cores (rank/worker/cpu_binding.py)
        overrides[CPU_BINDING_ENV] = BIND_TO_CORES
    threads = omp_num_threads
    if overrides["OMP_NUM_THREADS"].isdigit():  # an explicit launcher.env value wins
        threads = int(overrides["OMP_NUM_THREADS"])
    env = child_environment(base_env, overrides)
    return LaunchCommand(argv, env, overrides, threads, nproc, error_file, log_dir)


def spec_launch(
    program: str,
    spec: BaseModel,
    device: Device,
    spec_path: Path,
    nproc: int,
    base_env: Mapping[str, str],
    omp_num_threads: int = 1,
) -> LaunchCommand:
    """A rank program reading its spec from `spec_path` (written here), logs in its folder."""
    spec_path.write_text(spec.model_dump_json(indent=2), encoding="utf-8")
    return torchrun_command(
        ENTRY,
        entry_args(program, ["--spec", str(spec_path)]),
        nproc=nproc,
        device=device,
        log_dir=spec_path.parent,
        base_env=base_env,
        omp_num_threads=omp_num_threads,
    )
