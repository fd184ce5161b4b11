"""`torchscale profile`: profile one cell on every rank and analyse its traces;
`torchscale profile [options] -- COMMAND...`: run your own launch line with the probe and judge
its steps; `torchscale profile analyze DIR`: analyse traces written by any PyTorch job."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from torchscale.contracts.thresholds import TRACED_STEPS
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
    from torchscale.orchestration.own_job.command import OwnJobRequest
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

COMMAND_KEY = "torchscale.profile.command"  # ctx.meta: the words after `--`, the user's command
OWN_JOB = "Your own job (-- COMMAND)"  # the help panel of the options a command takes
BUILT_IN = "Built-in workload (no COMMAND)"
# the options of the built-in workload: with a command they are the launch line's business
BUILT_IN_ONLY = (
    "gpus", "ranks_per_gpu", "model", "batch_size", "precision", "strategy", "device", "duration",
    "target", "inject_delay", "json_output",
)  # fmt: skip
OWN_JOB_ONLY = ("warmup_steps", "let_it_finish", "timeout", "samples_per_step")
DEFAULT_OWN_STEPS = 20
DEFAULT_OWN_WARMUP = 5
DEFAULT_OWN_TIMEOUT = "30m"
# steps traced after a command's measured ones (trace_window.py; 0: none): enough paired steps
# for the straggler test (7) with a few to spare, a small cost next to the measured steps
DEFAULT_OWN_TRACE_STEPS = 10
# a user's jobs are cells of their own experiment: `report` reads them as measured cells
OWN_JOB_EXPERIMENT = "own_job"


class CommandAfterDashes(TyperGroup):
    """`profile [options] -- COMMAND...`: the words after `--` are the user's command, kept
    whole, never read as a subcommand's name (click would look for a command called
    '.venv/bin/torchrun'). `profile analyze ... -- x` stays analyze's."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if "--" in args:
            at = args.index("--")
            before = args[:at]
            if not any(word in self.commands for word in before):
                ctx.meta[COMMAND_KEY] = args[at + 1 :]
                return super().parse_args(ctx, before)
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [*super().collect_usage_pieces(ctx), "| [OPTIONS] -- YOUR LAUNCH LINE..."]


app = typer.Typer(
    cls=CommandAfterDashes,
    help="Profile one cell on every rank and find sync stalls and stragglers, or your own "
    "launch line (`torchscale profile -- torchrun ... train.py`; existing traces: "
    "`torchscale profile analyze DIR`).",
    no_args_is_help=False,
    invoke_without_command=True,
)


@app.callback(invoke_without_command=True)
@handle_errors
def profile(
    ctx: typer.Context,
    gpus: Annotated[
        int,
        typer.Option(
            "--gpus",
            "-g",
            min=1,
            help="Ranks to profile (GPUs; CPU processes). With a COMMAND, your launch line "
            "says this (torchrun --nproc-per-node).",
            rich_help_panel=BUILT_IN,
        ),
    ] = DEFAULT_GPUS,
    ranks_per_gpu: Annotated[
        int,
        typer.Option(
            "--ranks-per-gpu",
            min=1,
            help="With more --gpus than GPUs: up to this many ranks share each GPU, over gloo "
            "(launcher.ranks_per_gpu; a stand-in, never compared with a GPU per rank).",
            rich_help_panel=BUILT_IN,
        ),
    ] = 1,
    model: Annotated[
        str | None,
        typer.Option(
            help=f"Model (default: {GPU_MODEL} on GPUs, {CPU_MODEL} on CPU). With a COMMAND, "
            "your script is the model.",
            rich_help_panel=BUILT_IN,
        ),
    ] = None,
    # no -b: that is comm's --min-bytes (nccl-tests' -b); one meaning per short flag
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, rich_help_panel=BUILT_IN)] = 32,
    precision: Annotated[
        str, typer.Option(help="fp32 | amp | bf16", rich_help_panel=BUILT_IN)
    ] = "fp32",
    strategy: Annotated[
        str,
        typer.Option(
            help="ddp | fsdp | tp | pp | hybrid (tp/pp over every rank)", rich_help_panel=BUILT_IN
        ),
    ] = "ddp",
    device: Annotated[
        str, typer.Option(help="auto | cuda | cpu", rich_help_panel=BUILT_IN)
    ] = "auto",
    duration: Annotated[
        str | None,
        typer.Option(
            "--duration",
            "-d",
            help="Measured window before profiling: 30s, 2m or 45 (seconds).",
            rich_help_panel=BUILT_IN,
        ),
    ] = None,
    steps: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Measured steps instead of --duration; with a COMMAND, the optimizer steps "
            f"measured after the warm-up, then every rank stops (default {DEFAULT_OWN_STEPS}).",
            rich_help_panel=OWN_JOB,
        ),
    ] = None,
    warmup_steps: Annotated[
        int | None,
        typer.Option(
            "--warmup-steps",
            min=0,
            help="COMMAND only: optimizer steps run first and not measured (default "
            f"{DEFAULT_OWN_WARMUP}).",
            rich_help_panel=OWN_JOB,
        ),
    ] = None,
    let_it_finish: Annotated[
        bool,
        typer.Option(
            "--let-it-finish",
            help="COMMAND only: never stop the job; measure every step after the warm-up.",
            rich_help_panel=OWN_JOB,
        ),
    ] = False,
    samples_per_step: Annotated[
        int | None,
        typer.Option(
            "--samples-per-step",
            min=1,
            help="COMMAND only: the samples one rank trains on per optimizer step, where the "
            "probe cannot count them from the loader's batches (the result says which was used).",
            rich_help_panel=OWN_JOB,
        ),
    ] = None,
    timeout: Annotated[
        str | None,
        typer.Option(
            "--timeout",
            help="COMMAND only: stop the job after this long: 90s, 30m or 45 (seconds; "
            f"default {DEFAULT_OWN_TIMEOUT}).",
            rich_help_panel=OWN_JOB,
        ),
    ] = None,
    profile_steps: Annotated[
        int | None,
        typer.Option(
            "--profile-steps",
            min=0,
            max=1000,
            help=f"Traced steps per rank (default {TRACED_STEPS}; a stall every k-th step needs "
            "about 3k to be told from chance). Also with a COMMAND: the optimizer steps traced "
            "after the measured ones, after one untraced profiler warm-up step (default "
            f"{DEFAULT_OWN_TRACE_STEPS}; 0: no trace).",
        ),
    ] = None,
    target: Annotated[
        Target, typer.Option("--target", "-t", help=TARGET_HELP, rich_help_panel=BUILT_IN)
    ] = "sync_stalls",
    tool: Annotated[
        ToolChoice,
        typer.Option(
            help="torch (torch.profiler), nsys (Nsight Systems) or auto (torch.profiler; "
            "nsys only by name). Also with a COMMAND: nsys wraps your launch line in nsys "
            "profile and captures the traced steps (CUDA only).",
        ),
    ] = "auto",
    inject_delay: Annotated[
        list[str] | None,
        typer.Option(
            "--inject-delay",
            metavar="RANK:PHASE:MS",
            help="Sleep MS ms in PHASE (data|forward|backward|optimizer) on RANK every step: a "
            "known straggler to check the analysis against (repeatable).",
            rich_help_panel=BUILT_IN,
        ),
    ] = None,
    output_dir: Annotated[
        Path,
        typer.Option(
            "--output-dir",
            "-o",
            help="Results go to OUTPUT_DIR/<name>/profile/; with a COMMAND, to "
            f"OUTPUT_DIR/<name>/cells/ (--name default {OWN_JOB_EXPERIMENT}), its log and "
            "ranks' files to logs/.",
        ),
    ] = Path("./results"),
    name: ExperimentName = STANDALONE_EXPERIMENT,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json", help="Print the analysis as JSON on stdout.", rich_help_panel=BUILT_IN
        ),
    ] = False,
    verbose: VerbosityFlag = None,
) -> None:
    """Profile one cell on every rank, then name the stalls, the straggler and the fix; or,
    after `--`, your own launch line, run unchanged with a probe in every rank."""
    if ctx.invoked_subcommand is not None:
        return
    Verbosity.override(verbose)
    command = ctx.meta.get(COMMAND_KEY)
    _refuse_mixed(ctx, command)
    if command is not None:
        raise typer.Exit(
            _profile_own_job(
                command,
                warmup_steps,
                steps,
                let_it_finish,
                timeout,
                output_dir,
                name if _given(ctx, ("name",)) else OWN_JOB_EXPERIMENT,
                samples_per_step,
                DEFAULT_OWN_TRACE_STEPS if profile_steps is None else profile_steps,
                "nsys" if tool == "nsys" else "torch",
            )
        )
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
        profile_steps=TRACED_STEPS if profile_steps is None else profile_steps,
        target=target,
        tool=tool,
        inject_delay=tuple(parse_delay(text) for text in inject_delay or []),
        name=name,
        ranks_per_gpu=ranks_per_gpu,
    )
    run = run_profile(options, output_dir, on_start=_starting)
    raise typer.Exit(_print_outcome(run, json_output))


def _given(ctx: typer.Context, names: tuple[str, ...]) -> list[str]:
    """The options among `names` the user gave (not left at their defaults), as spelled."""
    given = []
    for param in ctx.command.params:
        source = ctx.get_parameter_source(param.name or "")
        if param.name in names and source is not None and source.name != "DEFAULT":
            given.append(max(param.opts, key=len))
    return given


def _refuse_mixed(ctx: typer.Context, command: list[str] | None) -> None:
    """One line when options of one form are given to the other."""
    from torchscale.contracts.errors import UsageError

    if command is None:
        own = _given(ctx, OWN_JOB_ONLY)
        if own:
            raise UsageError(
                f"{', '.join(own)}: only with your own command after -- (torchscale profile "
                f"{own[0]} ... -- torchrun --nproc-per-node 2 train.py)"
            )
        return
    if not command:
        raise UsageError("nothing after --: give your launch line (-- torchrun ... train.py)")
    if _given(ctx, ("let_it_finish",)) and _given(ctx, ("steps",)):
        raise UsageError("--steps and --let-it-finish: give one (stop after N steps, or never)")
    built_in = _given(ctx, BUILT_IN_ONLY)
    if built_in:
        raise UsageError(
            f"{', '.join(built_in)}: not taken with a command after -- (your launch line sets "
            "the ranks, the model and how it trains; put them there)"
        )


def _profile_own_job(
    command: list[str],
    warmup_steps: int | None,
    steps: int | None,
    let_it_finish: bool,
    timeout: str | None,
    output_dir: Path,
    name: str,
    samples_per_step: int | None = None,
    trace_steps: int = 0,
    tool: str = "torch",
) -> int:
    """Run the user's command with the probe; print the answer, or the one line why none."""
    import os

    from torchscale.contracts import wording
    from torchscale.contracts.cell import Status
    from torchscale.contracts.durations import parse_duration
    from torchscale.interfaces.console.lines import Line
    from torchscale.interfaces.console.profile import own_job_lines
    from torchscale.orchestration.own_job.command import OwnJobRequest
    from torchscale.orchestration.own_job.run import run_own_job

    request = OwnJobRequest(
        argv=tuple(command),
        warmup_steps=DEFAULT_OWN_WARMUP if warmup_steps is None else warmup_steps,
        steps=0 if let_it_finish else steps or DEFAULT_OWN_STEPS,
        let_it_finish=let_it_finish,
        timeout_s=parse_duration(timeout or DEFAULT_OWN_TIMEOUT),
        samples_per_step=samples_per_step,
        trace_steps=trace_steps,
        tool=tool,
    )
    from torchscale.orchestration.profiling import own_job_window as window

    nsys = trace_steps > 0 and tool == "nsys"
    if nsys:  # refused in one line before anything runs
        from torchscale.orchestration.schedulers.local.launcher import machine_here

        window.refuse_nsys(machine_here().gpu_count, os.environ)
    env = dict(os.environ)
    run = run_own_job(
        request,
        output_dir,
        name,
        env,
        on_start=_own_job_starting,
        wrap=(lambda command, folder: window.under_nsys(command, folder, env)) if nsys else None,
        traced=window.with_traces,
    )
    if run.result.status is Status.OK:
        lines = own_job_lines(run.result, verbose=Verbosity.level > 0)
        lines.append(Line("info", f"> [RUN] result: {run.result_path}"))
        lines.append(
            Line("info", f"> [RUN] your job's output and the ranks' files: {run.directory}")
        )
        if run.result.profile is not None and run.result.profile.files:
            where = run.result.profile.trace_dir
            lines.append(Line("info", f"> [RUN] traces and their analysis: {where}"))
        print_lines(stdout, lines)
    if run.problem is not None:
        stderr.print(f"[bold red]error:[/] {escape(wording.say(run.problem))}")
    elif run.stopped_by is not None:
        stopped = next(n for n in run.warnings if n.code == "own_job.stopped")
        stderr.print(f"[yellow]note:[/] {escape(wording.say(stopped))}")
    return run.exit_code


def _own_job_starting(request: OwnJobRequest) -> None:
    if not Verbosity.quiet():
        import shlex

        until = "to its end" if request.let_it_finish else f"then {request.steps} measured"
        traced = f", {request.trace_steps} traced" if request.trace_steps else ""
        stderr.print(
            f"profiling your job: {escape(shlex.join(request.argv))} ({request.warmup_steps} "
            f"warm-up optimizer steps, {until}{traced}) ..."
        )


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
