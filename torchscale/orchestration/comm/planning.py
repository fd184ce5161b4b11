"""`torchscale comm`'s sweep: from the command's options to a resolved `CommRequest`, its launch
and the notes a user should read before it runs (which device and how many ranks were chosen
for them, and why).

Device, backend and threads per rank are chosen as for benchmark cells
(torchscale/orchestration/plan/nodes.py); sizes are read as people type them (`64K`, `1G`, as
nccl-tests reads them). A bad value is one `UsageError` line, raised before anything is written.

Light to import (the CLI reads its defaults for `--help`): what resolving needs is imported when
it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from torchscale.contracts.errors import UsageError
from torchscale.offline.results.directory_layout import STANDALONE_EXPERIMENT

if TYPE_CHECKING:
    from torchscale.contracts.schema.comm_result import AcrossRanks
    from torchscale.orchestration.comm.sweep_launch import CommLaunch, CommRequest
    from torchscale.orchestration.config.schema import Device as RequestedDevice
    from torchscale.orchestration.plan.nodes import Machine

CPU_RANKS = 2
GPU_MAX_BYTES, CPU_MAX_BYTES = "1G", "64M"  # gloo over shared memory is ~100x slower than NVLink
DEFAULT_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class CommOptions:
    """What `torchscale comm` asks for; every field has the command's default. Sizes are bytes
    or text with a unit (`64K`: powers of 1024, as in nccl-tests)."""

    gpus: int | None = None  # ranks: None is every visible GPU, or CPU_RANKS CPU processes
    ops: str = "all_reduce"  # comma-separated op names, or 'all'
    min_bytes: str | int = "8"
    max_bytes: str | int | None = None  # None: GPU_MAX_BYTES on GPUs, CPU_MAX_BYTES on CPU
    step_factor: int = 2
    dtype: str = "float32"
    iters: int = 20
    warmup: int = 5
    check: bool = True
    pairs_bytes: str | int | None = None  # set: also every pair of ranks, exchanging this size
    average: AcrossRanks = "avg"
    min_busbw_gbps: float | None = None  # an op whose average bus bandwidth is below fails
    device: RequestedDevice = "auto"
    timeout_s: float = DEFAULT_TIMEOUT_S
    name: str = STANDALONE_EXPERIMENT  # the experiment: results go to OUTPUT_DIR/<name>/comm/
    # instead of running: an NVIDIA nccl-tests output file (text or -J JSON) and its op, when
    # the file does not name it
    import_file: Path | None = None
    op: str | None = None


@dataclass(frozen=True)
class CommPlan:
    """The resolved sweep, its launch as data (what `--dry-run` shows) and what was chosen for
    the user (`notes`)."""

    request: CommRequest
    launch: CommLaunch
    notes: list[str] = field(default_factory=list)


def plan_comm(
    options: CommOptions, machine: Machine, experiment_dir: Path, base_env: Mapping[str, str]
) -> CommPlan:
    """Resolve the options on `machine` (UsageError for what cannot run; nothing is written);
    the ranks will inherit `base_env`."""
    from torchscale.contracts.units import parse_bytes
    from torchscale.orchestration.comm.sweep_launch import (
        CommRequest,
        check_dtype,
        comm_launch,
        new_run_id,
        parse_ops,
    )
    from torchscale.orchestration.plan.nodes import backend_for, device_for, threads_per_rank

    _check_counts(options)
    device = device_for(options.device, machine)
    notes: list[str] = []
    if options.device == "auto" and device == "cpu":
        notes.append("no CUDA GPU visible: gloo processes on CPU (--device cpu to silence)")
    ranks = _ranks(options.gpus, device, machine)
    upper = options.max_bytes or (GPU_MAX_BYTES if device == "cuda" else CPU_MAX_BYTES)
    pairs = options.pairs_bytes
    request = CommRequest(
        ops=parse_ops(options.ops),
        min_bytes=parse_bytes(str(options.min_bytes), "--min-bytes"),
        max_bytes=parse_bytes(str(upper), "--max-bytes"),
        step_factor=options.step_factor,
        dtype=check_dtype(options.dtype),
        warmup_iters=options.warmup,
        iters=options.iters,
        check=options.check,
        ranks=ranks,
        device=device,
        backend=backend_for("auto", device),
        omp_num_threads=threads_per_rank(machine.cpu_cores, ranks),
        timeout_s=options.timeout_s,
        pairs_bytes=parse_bytes(str(pairs), "--pairs-bytes") if pairs is not None else None,
        across_ranks=options.average,
        min_busbw_gbps=options.min_busbw_gbps,
    )
    launch = comm_launch(request, experiment_dir, base_env, new_run_id(request))
    return CommPlan(request, launch, notes)


def _ranks(gpus: int | None, device: str, machine: Machine) -> int:
    """Every visible GPU (one rank each) or CPU_RANKS processes, unless `gpus` says."""
    if device != "cuda":
        return gpus if gpus is not None else CPU_RANKS
    visible = machine.gpu_count
    if visible == 0:
        raise UsageError("--device cuda: no CUDA GPU is visible to torch on this machine")
    ranks = gpus if gpus is not None else visible
    if ranks > visible:
        raise UsageError(f"--gpus {ranks}: only {visible} CUDA GPU(s) visible on this node")
    return ranks


def _check_counts(options: CommOptions) -> None:
    """The bounds the command's flags enforce, for callers of the library."""
    bounds = [
        ("--gpus", options.gpus if options.gpus is not None else 1, 1),
        ("--step-factor", options.step_factor, 2),
        ("--iters", options.iters, 1),
        ("--warmup", options.warmup, 0),
    ]
    for flag, value, least in bounds:
        if value < least:
            raise UsageError(f"{flag} {value}: must be at least {least}")
    if options.timeout_s <= 0:
        raise UsageError(f"--timeout {options.timeout_s:g}: must be positive")
