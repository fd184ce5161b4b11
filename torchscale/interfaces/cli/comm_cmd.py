"""`torchscale comm` (docs/comm.md): the flags become one `CommOptions`;
`torchscale.interfaces.api.run_comm` does the rest and prints nothing: this module prints its
notes, progress and the table, and sets the exit code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.markup import escape

from torchscale.contracts.catalog import COLLECTIVES
from torchscale.interfaces.cli.common import handle_errors
from torchscale.interfaces.cli.shared_options import ExperimentName, VerbosityFlag
from torchscale.interfaces.console.streams import Verbosity, stderr, stdout, table_width
from torchscale.offline.results.directory_layout import STANDALONE_EXPERIMENT
from torchscale.orchestration.comm.planning import (
    CPU_MAX_BYTES,
    CPU_RANKS,
    DEFAULT_TIMEOUT_S,
    GPU_MAX_BYTES,
)

if TYPE_CHECKING:
    from torchscale.orchestration.comm.planning import CommPlan

DeviceChoice = Literal["auto", "cuda", "cpu"]
Across = Literal["avg", "min", "max"]


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
        str, typer.Option(help=f"Comma-separated: {', '.join(COLLECTIVES)}, or 'all'.")
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
        int,
        typer.Option("--step-factor", min=2, help="Multiply the size by this (nccl-tests' -f)."),
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
        str | None, typer.Option(help="With --import: the op, when the file does not name it.")
    ] = None,
    output_dir: Annotated[
        Path, typer.Option("--output-dir", "-o", help="Results go to OUTPUT_DIR/<name>/comm/.")
    ] = Path("./results"),
    name: ExperimentName = STANDALONE_EXPERIMENT,
    output: Annotated[
        Path | None,
        typer.Option("--output", help="Also write the result JSON to this file.", metavar="FILE"),
    ] = None,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json", help="Print the result as JSON on stdout (the table goes to stderr)."
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would run, run nothing.")
    ] = False,
    verbose: VerbosityFlag = None,
) -> None:
    """Collective bandwidth (algbw, busbw) exactly as nccl-tests defines it, with a check."""
    Verbosity.override(verbose)
    from torchscale.interfaces.api import CommOptions, run_comm

    options = CommOptions(
        gpus=gpus,
        ops=ops,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        step_factor=step_factor,
        dtype=dtype,
        iters=iters,
        warmup=warmup,
        check=check,
        pairs_bytes=pairs_bytes if pairs else None,
        average=average,
        min_busbw_gbps=min_busbw,
        device=device,
        timeout_s=timeout,
        name=name,
        import_file=import_file,
        op=op,
    )
    run = run_comm(options, output_dir, dry_run=dry_run, on_plan=_notes, on_start=_starting)
    if run.result is None:  # --dry-run: the launch as data, nothing ran
        from torchscale.orchestration.comm.sweep_launch import dry_run_lines

        assert run.plan is not None  # only an import has no plan, and it has a result
        for line in dry_run_lines(run.plan.launch):
            (stderr if json_output else stdout).out(line, highlight=False)
        raise typer.Exit(0)
    if not Verbosity.quiet():
        stderr.print(f"stored: {escape(str(run.stored))}")
    from torchscale.interfaces.console.comm import comm_lines

    console = stderr if json_output else stdout
    for line in comm_lines(run.result, table_width(console)):
        console.out(line, highlight=False)
    if output is not None:
        from torchscale.orchestration.comm.sweep_launch import store_result

        store_result(run.result, output)
    if json_output:
        stdout.out(run.result.model_dump_json(indent=2), highlight=False)
    raise typer.Exit(run.exit_code)


def _notes(plan: CommPlan) -> None:
    for note in plan.notes:
        stderr.print(f"[cyan]note:[/] {escape(note)}")


def _starting(plan: CommPlan) -> None:
    if not Verbosity.quiet():
        request = plan.request
        stderr.print(
            f"running {', '.join(request.ops)} on {request.ranks} rank(s) ({request.backend}), "
            f"{len(plan.launch.spec.sizes)} size(s) ..."
        )
