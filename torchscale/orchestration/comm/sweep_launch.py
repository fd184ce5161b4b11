"""Run one `torchscale comm` sweep as a torchrun launch and keep every row it finished.

The launch is data first (`comm_launch`: spec and torchrun command, what `--dry-run` shows),
then run through the one launch path, as a benchmark cell is
(torchscale/orchestration/launch/attempt.py: process group, timeout, hang diagnosis, root cause).
Rank 0 rewrites the result after every row (torchscale/rank/programs/comm.py); when the
launch hangs or crashes, the rows it finished are kept, the row it was running is marked failed with
the reason, and the run's status says how it ended.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from torchscale.contracts.atomic import write_text_atomic
from torchscale.contracts.catalog import COLLECTIVES
from torchscale.contracts.cell import Backend, Device
from torchscale.contracts.comm_spec import DTYPES, CommSpec
from torchscale.contracts.errors import ResultsError, UsageError, describe_os_error
from torchscale.contracts.finding import Finding
from torchscale.contracts.rank_programs import ENTRY, entry_args
from torchscale.contracts.schema.comm_result import AcrossRanks, CommResult
from torchscale.contracts.suggest import did_you_mean
from torchscale.contracts.versioned import read_model
from torchscale.offline.comm.nccl_footer import add_footer, apply_gate
from torchscale.offline.comm.rows import unmeasured_row
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.orchestration.comm.machine_load import busy_warning, read_edge
from torchscale.orchestration.comm.sizes import size_ladder
from torchscale.orchestration.launch.attempt import run_attempt
from torchscale.orchestration.launch.torchrun import ONE_NODE, LaunchCommand, torchrun_command


@dataclass(frozen=True)
class CommRequest:
    """Everything a comm sweep needs, resolved (no 'auto' left)."""

    ops: tuple[str, ...]
    min_bytes: int
    max_bytes: int
    step_factor: int
    dtype: str
    warmup_iters: int
    iters: int
    check: bool
    ranks: int
    device: Device
    backend: Backend
    omp_num_threads: int
    timeout_s: float
    pairs_bytes: int | None = None
    across_ranks: AcrossRanks = "avg"
    min_busbw_gbps: float | None = None


def parse_ops(text: str) -> tuple[str, ...]:
    """`all_reduce,all_gather` -> ops in the order given; 'all' -> every op."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return tuple(COLLECTIVES)
    unknown = [n for n in names if n not in COLLECTIVES]
    if unknown or not names:
        named = ", ".join(f"{n!r}{_close_op(n)}" for n in unknown) or "list (empty)"
        raise UsageError(f"unknown op {named}: choose from {', '.join(COLLECTIVES)} (or 'all')")
    return tuple(dict.fromkeys(names))


def _close_op(name: str) -> str:
    """' (did you mean 'all_reduce'?)' for 'allreduce' or 'all-reduce'; '' when nothing is
    close (the list of ops follows anyway)."""
    hint = did_you_mean(name.replace("-", "_"), COLLECTIVES)
    return hint if hint.startswith(" (did you mean") else ""


def check_dtype(dtype: str) -> str:
    """The floating dtypes both backends reduce (NCCL; gloo on CPU, float16/bfloat16 too)."""
    if dtype not in DTYPES:
        raise UsageError(f"--dtype {dtype!r} is not supported: choose from {', '.join(DTYPES)}")
    return dtype


def new_run_id(request: CommRequest, now: datetime | None = None) -> str:
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    return f"comm-{request.device}-w{request.ranks}-{request.dtype}-{stamp}"


@dataclass(frozen=True)
class CommLaunch:
    spec: CommSpec
    command: LaunchCommand
    spec_path: Path
    result_path: Path  # where the finished run is stored (comm/<run_id>.json)


def comm_launch(
    request: CommRequest,
    experiment_dir: Path,
    base_env: Mapping[str, str],
    run_id: str,
    *,
    nodes: int = 1,
    python: str = sys.executable,
    rendezvous: Sequence[str] = ONE_NODE,
) -> CommLaunch:
    """The launch as data: what each rank runs and the torchrun command (shown by --dry-run).
    A multi-node launcher (the Slurm preflight) passes its node count, interpreter and
    rendezvous flags; `request.ranks` is then the ranks of all nodes together."""
    log_dir = ResultLayout(experiment_dir).comm_log_dir(run_id)
    spec = CommSpec(
        run_id=run_id,
        ops=list(request.ops),
        sizes=size_ladder(request.min_bytes, request.max_bytes, request.step_factor),
        dtype=request.dtype,
        warmup_iters=request.warmup_iters,
        iters=request.iters,
        check=request.check,
        pairs_bytes=request.pairs_bytes,
        across_ranks=request.across_ranks,
        device=request.device,
        backend=request.backend,
        result_path=str(log_dir / "result.json"),
        progress_path=str(log_dir / "progress"),
    )
    spec_path = log_dir / "spec.json"
    command = torchrun_command(
        ENTRY,
        entry_args("comm", ["--spec", str(spec_path)]),
        nproc=request.ranks // nodes,
        device=request.device,
        log_dir=log_dir,
        base_env=base_env,
        omp_num_threads=request.omp_num_threads,
        python=python,
        rendezvous=rendezvous,
    )
    result_path = ResultLayout(experiment_dir).comm_result_path(run_id)
    return CommLaunch(spec, command, spec_path, result_path)


def _in_progress(spec: CommSpec) -> tuple[str, int] | None:
    """(op, size) the launch was running when it stopped, from rank 0's progress file."""
    with contextlib.suppress(OSError, ValueError):
        op, size = Path(spec.progress_path).read_text(encoding="utf-8").split()
        return op, int(size)
    return None


def _empty_result(spec: CommSpec, request: CommRequest) -> CommResult:
    return CommResult(
        id=spec.run_id,
        world_size=request.ranks,
        device=request.device,
        backend=request.backend,
        dtype=request.dtype,
        warmup_iters=request.warmup_iters,
        iters=request.iters,
        check=request.check,
        across_ranks=request.across_ranks,
    )


def run_comm_launch(launch: CommLaunch, request: CommRequest) -> CommResult:
    """Run the launch, keep what it finished, and store the result atomically."""
    written = Path(launch.spec.result_path)  # rank 0's, rewritten after every row
    try:
        write_text_atomic(launch.spec_path, launch.spec.model_dump_json(indent=2))
        written.unlink(missing_ok=True)
        Path(launch.spec.progress_path).unlink(missing_ok=True)
    except OSError as exc:
        where = launch.spec_path.parent
        raise ResultsError(f"cannot prepare {where}: {describe_os_error(exc)}") from None
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    before = read_edge()
    attempt = run_attempt(
        launch.command, request.timeout_s, lambda: read_model(CommResult, written)
    )
    after = read_edge()
    result = attempt.written if attempt.written is not None else _empty_result(launch.spec, request)
    # read only where the launch's CPU reaches this process as its reaped children: one node,
    # a torchrun it started itself (not under srun, whose ranks are slurmstepd's), ended
    # cleanly (a killed group's ranks are nobody's children to reap)
    direct = Path(launch.command.argv[0]).name != "srun" if launch.command.argv else False
    if result.nodes == 1 and direct and attempt.outcome.ended_cleanly:
        busy = busy_warning(before, after, launch.command.nproc)
        result.warnings += [busy] if busy is not None else []
    stopped = _in_progress(launch.spec)
    # rows written before a failure are kept; the run says how the launch failed
    failure = None if attempt.outcome.ended_cleanly else attempt.launch_failure
    if failure is not None:
        result.status = failure.status.value  # type: ignore[assignment]
        result.error = failure.reason
        if stopped is not None and stopped[0] != "pairs":
            result.rows.append(unmeasured_row(*stopped, 0, request.dtype, "failed", failure.reason))
        elif stopped is not None:
            result.unavailable["pairs"] = Finding(code="comm.pairs.stopped")
    add_footer(result)
    if request.min_busbw_gbps is not None:
        apply_gate(result, request.min_busbw_gbps)
    result.launch = {
        "argv": launch.command.argv,
        "env": launch.command.env_overrides,
        "omp_num_threads": launch.command.omp_num_threads,
        "log_dir": str(launch.command.log_dir),
    }
    result.started_at = started
    result.wall_s = round(attempt.outcome.wall_s, 3)
    store_result(result, launch.result_path)
    return result


def store_result(result: CommResult, path: Path) -> Path:
    """Write a comm result atomically; an OSError becomes one ResultsError line."""
    try:
        return write_text_atomic(path, result.model_dump_json(indent=2))
    except OSError as exc:
        raise ResultsError(f"cannot write {path}: {describe_os_error(exc)}") from None


def dry_run_lines(launch: CommLaunch) -> list[str]:
    """What --dry-run prints: sizes, ops and the exact command."""
    spec = launch.spec
    env = " ".join(f"{k}={v}" for k, v in launch.command.env_overrides.items())
    return [
        f"ops: {', '.join(spec.ops)}",
        f"sizes ({len(spec.sizes)}): {spec.sizes[0]} B .. {spec.sizes[-1]} B",
        f"dtype {spec.dtype}, {spec.warmup_iters} warm-up + {spec.iters} timed iterations, "
        f"check {'on' if spec.check else 'off'}",
        f"env: {env}",
        "argv: " + json.dumps(launch.command.argv),
        f"result: {launch.result_path}",
    ]
