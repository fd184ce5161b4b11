"""`torchscale comm`: collective bandwidth in nccl-tests' conventions (or `--import` of an
nccl-tests output file), printed as nccl-tests prints it and stored as a comm result."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.markup import escape

from torchscale.cli.common import Verbosity, handle_errors, stderr, stdout
from torchscale.cli.options import VerbosityFlag
from torchscale.errors import UsageError

if TYPE_CHECKING:
    from torchscale.comm.result import CommResult

DeviceChoice = Literal["auto", "cuda", "cpu"]
Across = Literal["avg", "min", "max"]
CPU_RANKS = 2
GPU_MAX_BYTES, CPU_MAX_BYTES = "1G", "64M"  # gloo over shared memory is ~100x slower than NVLink
DEFAULT_TIMEOUT_S = 900.0


def _resolve(device: DeviceChoice, gpus: int | None) -> tuple[str, int, list[str]]:
    """(device, ranks, notes): 'auto' picks CUDA when torch sees a GPU."""
    from torchscale import host

    visible = host.cuda_gpu_count()
    notes: list[str] = []
    chosen = device if device != "auto" else ("cuda" if visible > 0 else "cpu")
    if device == "auto" and chosen == "cpu":
        notes.append("no CUDA GPU visible: gloo processes on CPU (--device cpu to silence)")
    if chosen == "cuda":
        if visible == 0:
            raise UsageError("--device cuda: no CUDA GPU is visible to torch on this machine")
        ranks = gpus if gpus is not None else visible
        if ranks > visible:
            raise UsageError(f"--gpus {ranks}: only {visible} CUDA GPU(s) visible on this node")
        return chosen, ranks, notes
    return chosen, gpus if gpus is not None else CPU_RANKS, notes


@handle_errors
def comm(
    gpus: Annotated[
        int | None,
        typer.Option(
            "--gpus",
            "-g",
            min=1,
            help=f"Ranks: GPUs (default: all visible), or CPU processes (default {CPU_RANKS}).",
        ),
    ] = None,
    ops: Annotated[
        str,
        typer.Option(
            help="Comma-separated: all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
            "all_to_all, send_recv, or 'all'."
        ),
    ] = "all_reduce",
    min_bytes: Annotated[
        str, typer.Option("--min-bytes", "-b", help="Smallest size S (K/M/G = powers of 1024).")
    ] = "8",
    max_bytes: Annotated[
        str | None,
        typer.Option(
            "--max-bytes",
            "-e",
            help=f"Largest size S (default {GPU_MAX_BYTES} on GPUs, {CPU_MAX_BYTES} on CPU).",
        ),
    ] = None,
    step_factor: Annotated[
        int, typer.Option("--step-factor", "-f", min=2, help="Multiply the size by this.")
    ] = 2,
    dtype: Annotated[str, typer.Option(help="float32 | float16 | bfloat16")] = "float32",
    iters: Annotated[int, typer.Option("--iters", "-n", min=1, max=100_000)] = 20,
    warmup: Annotated[int, typer.Option("--warmup", "-w", min=0, max=100_000)] = 5,
    check: Annotated[
        bool,
        typer.Option(
            "--check/--no-check",
            help="Check every result element on known inputs (#wrong); on by default, as in "
            "nccl-tests.",
        ),
    ] = True,
    pairs: Annotated[
        bool, typer.Option("--pairs", help="Also measure every pair of ranks (a matrix).")
    ] = False,
    pairs_bytes: Annotated[
        str, typer.Option("--pairs-bytes", help="Size each pair exchanges each way.")
    ] = "16M",
    average: Annotated[
        Across,
        typer.Option("--average", "-a", help="Time across ranks: avg (nccl-tests' default)."),
    ] = "avg",
    min_busbw: Annotated[
        float | None,
        typer.Option(
            "--min-busbw",
            min=0.0,
            help="Exit 1 when an op's average bus bandwidth (GB/s) is below this.",
        ),
    ] = None,
    device: Annotated[DeviceChoice, typer.Option(help="auto | cuda | cpu")] = "auto",
    timeout: Annotated[
        float, typer.Option(min=1.0, help="Kill the launch after this many seconds (a hang).")
    ] = DEFAULT_TIMEOUT_S,
    import_file: Annotated[
        Path | None,
        typer.Option(
            "--import",
            help="Read an NVIDIA nccl-tests output file (text or -J JSON) instead of running.",
        ),
    ] = None,
    op: Annotated[
        str | None,
        typer.Option(help="With --import: the op, when the file does not name it."),
    ] = None,
    output_dir: Annotated[
        Path, typer.Option("--output-dir", "-o", help="Results go to OUTPUT_DIR/<name>/comm/.")
    ] = Path("./results"),
    name: Annotated[str, typer.Option(help="Experiment name (results sub-directory).")] = "comm",
    json_file: Annotated[
        Path | None, typer.Option("--json", help="Also write the result JSON to this file.")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would run, run nothing.")
    ] = False,
    verbose: VerbosityFlag = None,
) -> None:
    """Collective bandwidth (algbw, busbw) exactly as nccl-tests defines it, with a check."""
    Verbosity.override(verbose)
    experiment_dir = output_dir / name
    result: CommResult | None
    if import_file is not None:
        result = _import(import_file, op, experiment_dir, min_busbw)
    else:
        if op is not None:
            raise UsageError("--op goes with --import (use --ops to choose what to run)")
        result = _run(
            gpus,
            ops,
            min_bytes,
            max_bytes,
            step_factor,
            dtype,
            iters,
            warmup,
            check,
            pairs,
            pairs_bytes,
            average,
            min_busbw,
            device,
            timeout,
            experiment_dir,
            dry_run,
        )
        if result is None:
            raise typer.Exit(0)
    for line in _lines(result):
        stdout.out(line, highlight=False)
    if json_file is not None:
        from torchscale.comm.launch import store_result

        store_result(result, json_file)
    raise typer.Exit(_exit_code(result))


def _lines(result: CommResult) -> list[str]:
    from torchscale.report.comm_text import comm_lines

    return comm_lines(result)


def _exit_code(result: CommResult) -> int:
    from torchscale.comm.from_config import comm_failed

    return 1 if comm_failed(result) else 0


def _import(
    path: Path, op: str | None, experiment_dir: Path, min_busbw: float | None
) -> CommResult:
    from torchscale.comm.launch import store_result
    from torchscale.comm.nccl_tests import read_nccl_tests
    from torchscale.comm.summary import apply_gate

    result = read_nccl_tests(path, op=op)
    if min_busbw is not None:
        apply_gate(result, min_busbw)
    stored = store_result(result, experiment_dir / "comm" / f"{result.id}.json")
    if not Verbosity.quiet():
        stderr.print(f"stored: {escape(str(stored))}")
    return result


def _run(
    gpus: int | None,
    ops: str,
    min_bytes: str,
    max_bytes: str | None,
    step_factor: int,
    dtype: str,
    iters: int,
    warmup: int,
    check: bool,
    pairs: bool,
    pairs_bytes: str,
    average: Across,
    min_busbw: float | None,
    device: DeviceChoice,
    timeout: float,
    experiment_dir: Path,
    dry_run: bool,
) -> CommResult | None:
    from torchscale import host
    from torchscale.comm.launch import (
        CommRequest,
        check_dtype,
        comm_launch,
        dry_run_lines,
        new_run_id,
        parse_ops,
        run_comm,
    )
    from torchscale.results.store import check_output_dir as ensure_writable
    from torchscale.units import parse_bytes

    chosen, ranks, notes = _resolve(device, gpus)
    upper = max_bytes or (GPU_MAX_BYTES if chosen == "cuda" else CPU_MAX_BYTES)
    request = CommRequest(
        ops=parse_ops(ops),
        min_bytes=parse_bytes(min_bytes, "--min-bytes"),
        max_bytes=parse_bytes(upper, "--max-bytes"),
        step_factor=step_factor,
        dtype=check_dtype(dtype),
        warmup_iters=warmup,
        iters=iters,
        check=check,
        ranks=ranks,
        device=chosen,  # type: ignore[arg-type]
        backend="nccl" if chosen == "cuda" else "gloo",
        omp_num_threads=max(1, host.usable_cores() // ranks),
        timeout_s=timeout,
        pairs_bytes=parse_bytes(pairs_bytes, "--pairs-bytes") if pairs else None,
        across_ranks=average,
        min_busbw_gbps=min_busbw,
    )
    launch = comm_launch(request, experiment_dir, os.environ, new_run_id(request))
    for note in notes:
        stderr.print(f"[cyan]note:[/] {escape(note)}")
    if dry_run:
        for line in dry_run_lines(launch):
            stdout.out(line, highlight=False)
        return None
    ensure_writable(experiment_dir)
    if not Verbosity.quiet():
        stderr.print(
            f"running {', '.join(request.ops)} on {ranks} rank(s) ({request.backend}), "
            f"{len(launch.spec.sizes)} size(s) ..."
        )
    result = run_comm(launch, request)
    if not Verbosity.quiet():
        stderr.print(f"stored: {escape(str(launch.result_path))}")
    return result
