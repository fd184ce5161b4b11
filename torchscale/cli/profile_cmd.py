"""`torchscale profile`: profile one cell on every rank and analyse its traces;
`torchscale profile analyze DIR`: analyse traces written by any PyTorch job."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.markup import escape

from torchscale.cli.common import Verbosity, handle_errors, stderr, stdout
from torchscale.cli.options import VerbosityFlag
from torchscale.errors import UsageError

if TYPE_CHECKING:
    from torchscale.profiling.session import ProfiledCell
    from torchscale.schema.profile_analysis import ProfileAnalysis

Target = Literal["sync_stalls", "comm", "compute", "memory", "all"]
TARGET_HELP = (
    "What the analysis reports and ranks (the Step and Straggler lines always show): "
    "sync_stalls = waiting for peers, the straggler and its cross-checks, per-rank waits, "
    "straggler and load-imbalance findings (others left out, named); comm = exposed transfer, "
    "per-op collective figures, overlap, communication findings first; compute = per-rank "
    "parts, top kernels, host-bound and data-wait findings; memory = device copies and the "
    "run's memory peaks (allocator events are not traced: said why); all = everything."
)
ToolChoice = Literal["torch", "nsys", "auto"]

# defaults of the published reference: `torchscale profile --gpus 4 --duration 30 ...`
DEFAULT_GPUS = 4
DEFAULT_DURATION = "30"
GPU_MODEL, CPU_MODEL = "resnet50", "tiny-cnn"  # CPU ranks cannot train resnet50 in seconds

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
        str | None,
        typer.Option(help=f"Model (default: {GPU_MODEL} on GPUs, {CPU_MODEL} on CPU)."),
    ] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", min=1)] = 32,
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
        int | None,
        typer.Option(min=1, help="Measured steps instead of --duration."),
    ] = None,
    profile_steps: Annotated[
        int,
        typer.Option(
            "--profile-steps",
            min=1,
            max=1000,
            help="Traced steps per rank (a straggler is named only when it is last at enough "
            "collectives to rule out chance: small models need about 10 steps).",
        ),
    ] = 10,
    target: Annotated[Target, typer.Option("--target", "-t", help=TARGET_HELP)] = "sync_stalls",
    tool: Annotated[
        ToolChoice, typer.Option(help="torch (torch.profiler), nsys (Nsight Systems) or auto.")
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
    name: Annotated[str, typer.Option(help="Experiment name (results sub-directory).")] = (
        "profile"
    ),
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the analysis as JSON on stdout.")
    ] = False,
    verbose: VerbosityFlag = None,
) -> None:
    """Profile one cell on every rank, then name the stalls, the straggler and the fix."""
    if ctx.invoked_subcommand is not None:
        return
    Verbosity.override(verbose)
    from torchscale import host
    from torchscale.config.loader import validate_data
    from torchscale.durations import parse_duration
    from torchscale.plan import Machine, build_plan
    from torchscale.profiling.session import ProfileRequest, launch_profiled, resolve_tool
    from torchscale.results.store import ResultStore, check_output_dir
    from torchscale.worker.delay import parse_delay

    if duration is not None and steps is not None:
        raise UsageError("--duration and --steps exclude each other: give one")
    seconds = parse_duration(duration or DEFAULT_DURATION)
    delays = tuple(parse_delay(text) for text in inject_delay or [])
    gpu_count = host.cuda_gpu_count()
    said: list[str] = []
    resolved_device = device
    if device == "auto":
        resolved_device = "cuda" if gpu_count > 0 else "cpu"
    world = gpus
    if resolved_device == "cpu" and device == "auto":
        said.append(f"no CUDA GPU visible: profiling {gpus} gloo process(es) on CPU instead")
    if resolved_device == "cuda" and 0 < gpu_count < gpus:
        world = gpu_count
        said.append(f"only {gpu_count} GPU(s) visible: profiling {gpu_count} instead of {gpus}")
    for delay in delays:
        if delay.rank >= world:
            raise UsageError(
                f"--inject-delay {delay.rank}:{delay.phase}:{delay.ms:g}: rank {delay.rank} "
                f"does not exist in a {world}-rank run"
            )
    chosen_model = model or (GPU_MODEL if resolved_device == "cuda" else CPU_MODEL)
    if model is None:
        said.append(f"model: {chosen_model} (default for {resolved_device}; --model to change)")
    measurement: dict[str, Any] = {"warmup_steps": 3, "repeats": 1}
    if steps is not None:
        measurement["steps"] = steps
    else:
        measurement["duration_s"] = seconds
    raw = {
        "experiment_name": name,
        "models": [chosen_model],
        "batch_sizes": [batch_size],
        "gpu_counts": [world],
        "device": device,
        "training": {"precision": [precision], "strategy": [strategy]},
        "measurement": measurement,
    }
    config = validate_data(raw, "command line")
    machine = Machine(gpu_count=gpu_count, cpu_cores=host.usable_cores())
    planned = build_plan(config, machine).cells[0]
    if planned.skip_reason is not None:
        raise UsageError(f"cannot profile this cell: {planned.skip_reason}")
    chosen_tool, tool_note = resolve_tool(tool, planned.cell.device)
    if tool_note:
        said.append(tool_note)
    store = ResultStore.for_experiment(output_dir, config.experiment_name)
    check_output_dir(store.root)
    for line in said:
        stderr.print(f"[cyan]note:[/] {escape(line)}")
    request = ProfileRequest(
        tool=chosen_tool,
        active_steps=profile_steps,
        target=target,
        inject_delay=delays,
    )
    if not Verbosity.quiet():
        stderr.print(
            f"profiling {escape(planned.cell.id)} on {world} rank(s) with {chosen_tool} ..."
        )
    profiled = launch_profiled(planned, store, os.environ, request)
    raise typer.Exit(_print_outcome(profiled, json_output))


def _print_outcome(profiled: ProfiledCell, json_output: bool) -> int:
    from torchscale.cell import Status
    from torchscale.report.profile_terminal import run_lines

    for line in run_lines(profiled.result, profiled.directory, profiled.analysis):
        (stdout if not json_output else stderr).print(line.markup())
    if profiled.result.status != Status.OK:
        return 1
    if profiled.analysis is None:
        stderr.print(f"[bold red]error:[/] {escape(profiled.analysis_error or 'no analysis')}")
        return 1
    _show(profiled.analysis, json_output)
    return 0


def _show(analysis: ProfileAnalysis, json_output: bool) -> None:
    from torchscale.report.profile_terminal import analysis_lines

    if json_output:
        stdout.out(analysis.model_dump_json(indent=2), highlight=False)
        return
    for line in analysis_lines(analysis):
        stdout.print(line.markup())


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
        typer.Option(
            "--output",
            "-o",
            help="Where to write analysis.json (default: TRACE_DIR/analysis.json when writable).",
        ),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the analysis as JSON on stdout.")
    ] = False,
    verbose: VerbosityFlag = None,
) -> None:
    """Analyse existing traces from any PyTorch job: one trace per rank."""
    Verbosity.override(verbose)
    from torchscale.profiling.analyze import analyze_directory, write_analysis

    analysis = analyze_directory(trace_dir, target=target)
    destination = output or trace_dir / "analysis.json"
    written = write_analysis(analysis, destination, required=output is not None)
    _show(analysis, json_output)
    if written is None and not json_output:
        stderr.print(
            f"[yellow]note:[/] {escape(str(destination))} is not writable: analysis not saved "
            "(use --output)"
        )
