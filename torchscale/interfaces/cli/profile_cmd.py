"""`torchscale profile`: profile one cell on every rank and analyse its traces;
`torchscale profile analyze DIR`: analyse traces written by any PyTorch job."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from torchscale.contracts.cell_settings import TRACED_STEPS
from torchscale.interfaces.cli.common import handle_errors
from torchscale.interfaces.cli.shared_options import ExperimentName, VerbosityFlag
from torchscale.interfaces.console.streams import Verbosity, print_lines, stderr, stdout
from torchscale.offline.results.directory_layout import STANDALONE_EXPERIMENT
from torchscale.orchestration.profiling.standalone import (
    CPU_MODEL,
    DEFAULT_GPUS,
    GPU_MODEL,
    Target,
    ToolChoice,
)

if TYPE_CHECKING:
    from torchscale.contracts.schema.cell_result import CellResult
    from torchscale.contracts.schema.profile_analysis import ProfileAnalysis
    from torchscale.interfaces.api import ProfileRun
    from torchscale.orchestration.profiling.standalone import ProfilePlan

TARGET_HELP = (
    "What the analysis reports and ranks (the Step and Straggler lines always show): "
    "sync_stalls = waiting for peers, the straggler and its cross-checks, per-rank waits, "
    "straggler and load-imbalance findings (others left out, named); comm = exposed transfer, "
    "per-op collective figures, overlap, communication findings first; compute = per-rank "
    "parts, top kernels, host-bound and data-wait findings; memory = device copies and the "
    "run's memory peaks (allocator events are not traced: said why); all = everything."
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print the analysis as JSON on stdout.")]

app = typer.Typer(
    help="Profile one cell on every rank and find sync stalls and stragglers "
    "(or analyse existing traces: `torchscale profile analyze DIR`).",
    no_args_is_help=False,
    invoke_without_command=True,
)


@app.callback(invoke_without_command=True)
@handle_errors
def profile(
    ctx: typer.Context,
    gpus: Annotated[
        int, typer.Option("--gpus", "-g", min=1, help="Ranks to profile (GPUs; CPU processes)")
    ] = DEFAULT_GPUS,
    model: Annotated[
        str | None, typer.Option(help=f"Model (default: {GPU_MODEL} on GPUs, {CPU_MODEL} on CPU).")
    ] = None,
    # no -b: that is comm's --min-bytes (nccl-tests' -b); one meaning per short flag
    batch_size: Annotated[int, typer.Option("--batch-size", min=1)] = 32,
    precision: Annotated[str, typer.Option(help="fp32 | amp | bf16")] = "fp32",
    strategy: Annotated[
        str, typer.Option(help="ddp | fsdp | tp | pp | hybrid (tp/pp over every rank)")
    ] = "ddp",
    device: Annotated[str, typer.Option(help="auto | cuda | cpu")] = "auto",
    duration: Annotated[
        str | None,
        typer.Option(
            "--duration", "-d", help="Measured window before profiling: 30s, 2m or 45 (seconds)."
        ),
    ] = None,
    steps: Annotated[
        int | None, typer.Option(min=1, help="Measured steps instead of --duration.")
    ] = None,
    profile_steps: Annotated[
        int,
        typer.Option(
            "--profile-steps",
            min=1,
            max=1000,
            help="Traced steps per rank (a stall every k-th step needs about 3k to be told "
            "from chance).",
        ),
    ] = TRACED_STEPS,
    target: Annotated[Target, typer.Option("--target", "-t", help=TARGET_HELP)] = "sync_stalls",
    tool: Annotated[
        ToolChoice,
        typer.Option(
            help="torch (torch.profiler), nsys (Nsight Systems) or auto (torch.profiler; "
            "nsys only by name)."
        ),
    ] = "auto",
    inject_delay: Annotated[
        list[str] | None,
        typer.Option(
            "--inject-delay",
            metavar="RANK:PHASE:MS",
            help="Sleep MS ms in PHASE (data|forward|backward|optimizer) on RANK every step: a "
            "known straggler to check the analysis against (repeatable).",
        ),
    ] = None,
    output_dir: Annotated[
        Path, typer.Option("--output-dir", "-o", help="Results go to OUTPUT_DIR/<name>/profile/.")
    ] = Path("./results"),
    name: ExperimentName = STANDALONE_EXPERIMENT,
    json_output: JsonFlag = False,
    verbose: VerbosityFlag = None,
) -> None:
    """Profile one cell on every rank, then name the stalls, the straggler and the fix."""
    if ctx.invoked_subcommand is not None:
        return
    Verbosity.override(verbose)
    from torchscale.contracts.durations import parse_duration
    from torchscale.contracts.worker_spec import parse_delay
    from torchscale.interfaces.api import ProfileOptions, run_profile

    options = ProfileOptions(
        gpus=gpus,
        model=model,
        batch_size=batch_size,
        precision=precision,
        strategy=strategy,
        device=device,
        duration_s=parse_duration(duration) if duration is not None else None,
        steps=steps,
        profile_steps=profile_steps,
        target=target,
        tool=tool,
        inject_delay=tuple(parse_delay(text) for text in inject_delay or []),
        name=name,
    )
    run = run_profile(options, output_dir, on_start=_starting)
    raise typer.Exit(_print_outcome(run, json_output))


def _starting(plan: ProfilePlan) -> None:
    for line in plan.notes:
        stderr.print(f"[cyan]note:[/] {escape(line)}")
    if not Verbosity.quiet():
        from torchscale.interfaces.console.cells import cell_name

        stderr.print(
            f"profiling {escape(cell_name(plan.planned.cell))} on {plan.world} rank(s) with "
            f"{plan.request.tool} ..."
        )


def _print_outcome(run: ProfileRun, json_output: bool) -> int:
    from torchscale.interfaces.console.profile import run_lines

    profiled = run.profiled
    verbose = Verbosity.level > 0
    lines = run_lines(profiled.result, profiled.directory, profiled.analysis, verbose=verbose)
    print_lines(stdout if not json_output else stderr, lines)
    if run.exit_code == 0 and profiled.analysis is not None:
        _show(profiled.analysis, profiled.result, json_output)
    else:  # a failed run too: its cause from torchrun's log, and where the log is
        stderr.print(f"[bold red]error:[/] {escape(profiled.analysis_error or 'no analysis')}")
    return run.exit_code


def _show(analysis: ProfileAnalysis, result: CellResult | None, json_output: bool) -> None:
    from torchscale.interfaces.console.profile import analysis_lines

    if json_output:
        stdout.out(analysis.model_dump_json(indent=2), highlight=False)
        return
    print_lines(stdout, analysis_lines(analysis, result=result, verbose=Verbosity.level > 0))


@app.command("analyze")
@handle_errors
def analyze(
    trace_dir: Annotated[
        Path,
        typer.Argument(
            help="Directory of per-rank Kineto traces (.json/.json.gz) or nsys SQLite exports."
        ),
    ],
    target: Annotated[Target, typer.Option("--target", "-t", help=TARGET_HELP)] = "sync_stalls",
    output: Annotated[
        Path | None,
        typer.Option(  # a file: no -o, which is --output-dir (a directory) elsewhere
            "--output",
            metavar="FILE",
            help="Where to write analysis.json (default: TRACE_DIR/analysis.json when writable).",
        ),
    ] = None,
    json_output: JsonFlag = False,
    verbose: VerbosityFlag = None,
) -> None:
    """Analyse existing traces from any PyTorch job: one trace per rank."""
    Verbosity.override(verbose)
    _require_folder(trace_dir)
    from torchscale.interfaces.api import analyze_traces

    traced = analyze_traces(trace_dir, target=target, output=output)
    _show(traced.analysis, None, json_output)  # traces alone: no host-bound record
    if traced.saved is None and not json_output:
        stderr.print(
            f"[yellow]note:[/] {escape(str(traced.destination))} is not writable: analysis not "
            "saved (use --output)"
        )


def _require_folder(trace_dir: Path) -> None:
    """The analysis' own first refusal (a path that is no folder), said before its modules
    take seconds to import."""
    from torchscale.contracts.errors import TraceInputError

    if not trace_dir.exists():
        raise TraceInputError(f"{trace_dir}: no such directory")
    if not trace_dir.is_dir():
        raise TraceInputError(
            f"{trace_dir}: not a directory (give the folder that holds the traces)"
        )
