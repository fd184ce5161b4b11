"""`torchscale validate`: vet this node for distributed training."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, cast

import typer
from rich.markup import escape

from torchscale.interfaces.cli.common import as_stop, handle_errors, stop_exit
from torchscale.interfaces.cli.shared_options import VerbosityFlag
from torchscale.interfaces.console.lines import Line
from torchscale.interfaces.console.streams import Verbosity, print_lines, stderr, stdout

if TYPE_CHECKING:
    from torchscale.orchestration.validate.check_result import ValidateReport
    from torchscale.orchestration.validate.run_checks import Kept

DeviceChoice = Literal["cuda", "cpu"]
LevelChoice = Literal["basic", "perf", "burn", "workload"]
FailOn = Literal["fail", "warn"]


@handle_errors
def validate(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a machine-readable JSON report.")
    ] = False,
    quick: Annotated[
        bool, typer.Option("--quick", help="Skip the live checks (torchrun smoke test, compile).")
    ] = False,
    device: Annotated[
        DeviceChoice,
        typer.Option("--device", help="Path to validate: cuda (GPU nodes) or cpu (gloo)."),
    ] = "cuda",
    output_dir: Annotated[
        Path, typer.Option("--output-dir", "-o", help="Where results will go (free-disk check).")
    ] = Path("./results"),
    timeout: Annotated[
        float, typer.Option("--timeout", min=1.0, help="Seconds before the smoke test is killed.")
    ] = 120.0,
    level: Annotated[
        LevelChoice,
        typer.Option(
            "--level",
            help="basic: the checks (seconds); perf: + measured capability against this "
            "SKU's reference (minutes); burn: + sustained load for --duration; workload: "
            "every path of a training job (strategies, compile, max batch, OOM, profile, "
            "comm, report) in one folder to attach to a bug report (minutes).",
        ),
    ] = "basic",
    duration: Annotated[
        str, typer.Option("--duration", help="How long --level burn loads the GPUs (10m, 90s).")
    ] = "10m",
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget",
            min=0.1,
            help="Seconds of matmul shape search per dtype (default 30 on GPU, 3 on CPU).",
        ),
    ] = None,
    fail_on: Annotated[
        FailOn,
        typer.Option("--fail-on", help="Exit 1 on any FAIL (default) or on any WARN as well."),
    ] = "fail",
    name: Annotated[
        str,
        typer.Option(
            "--name",
            help="Experiment whose acceptance/ keeps the perf and burn report "
            "(OUTPUT_DIR/<name>/acceptance/<host>.<level>.json).",
        ),
    ] = "standalone",
    verbose: VerbosityFlag = None,
) -> None:
    """Check if this node meets the requirements for distributed training (exit 1 if not)."""
    from torchscale.contracts.durations import parse_duration
    from torchscale.contracts.errors import UsageError

    Verbosity.override(verbose)
    if level == "workload":
        ignored = [
            flag
            for flag, given in (
                ("--quick", quick),
                ("--timeout", timeout != 120.0),
                ("--budget", budget is not None),
                ("--duration", duration != "10m"),
            )
            if given
        ]
        if ignored:
            raise UsageError(f"{', '.join(ignored)}: not used by --level workload (drop it)")
        _workload(device, output_dir, name, fail_on, as_json)
    burn_s = parse_duration(duration)
    if level != "basic":
        from torchscale.offline.results.store import check_output_dir

        check_output_dir(output_dir / name)  # before minutes of measuring, not after
    # the checks' modules take a second to import: after what can be answered without them
    from torchscale.interfaces.console.validate import perf_kept, render_measurements, render_report
    from torchscale.orchestration.validate.check_context import ValidateContext
    from torchscale.orchestration.validate.run_checks import run_validation

    ctx = ValidateContext(
        device=device,
        output_dir=output_dir,
        quick=quick,
        smoke_timeout_s=timeout,
        level=cast('Literal["basic", "perf", "burn"]', level),  # workload left above
        burn_duration_s=burn_s,
        matmul_budget_s=budget,
        experiment_dir=output_dir / name,
        fail_on=fail_on,
    )
    experiment = output_dir / name
    stopped: list[str] = []  # what a stop leaves, once on_stop has said it

    def on_stop(partial: ValidateReport | None, kept: Kept) -> None:
        from torchscale.contracts.errors import ResultsError

        saved = None
        with contextlib.suppress(ResultsError):  # the stop goes on; the line says no report
            saved = _save(partial, experiment) if partial is not None else None
        stopped.append(perf_kept(kept.phases, kept.folder, saved))

    with _progress("checking...", level != "basic", stopped) as (progress, log):
        checking = None if progress is None else _prefixed("checking ", progress)
        report = run_validation(ctx, progress=checking, log=log, on_stop=on_stop)
    saved = _save(report, experiment) if level != "basic" else None
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        render_report(report)
        if report.measurements and Verbosity.level > 0:
            render_measurements(report)
        if saved is not None:
            stdout.print(f"saved: {escape(str(saved))}")
    raise typer.Exit(0 if report.ok else 1)


def _workload(
    device: DeviceChoice, output_dir: Path, name: str, fail_on: FailOn, as_json: bool
) -> None:
    """`--level workload`: the steps' verdicts as the other levels', then where the folder is."""
    from torchscale.interfaces.api.workload import SUMMARY, run_workload
    from torchscale.interfaces.console.validate import render_report, workload_kept

    stopped: list[str] = []

    def on_stop(folder: Path, finished: list[str]) -> None:
        stopped.append(workload_kept(finished, folder, SUMMARY))

    with _progress("workload: starting...", True, stopped) as (progress, log):
        run = run_workload(
            device,
            output_dir,
            name=name,
            fail_on=fail_on,
            on_step=_prefixed("workload: ", progress, log),
            on_stop=on_stop,
        )
    if as_json:
        typer.echo(run.report.model_dump_json(indent=2))
    else:
        render_report(run.report)
        stdout.print(f"folder: {escape(str(run.folder))} ({SUMMARY} first)")
    raise typer.Exit(run.exit_code)


@contextlib.contextmanager
def _progress(
    first: str, lines: bool, stopped: list[str]
) -> Iterator[tuple[Callable[[str], None] | None, Callable[[str], None] | None]]:
    """(what runs now, a phase's line): on a terminal a spinner showing what runs now; off
    one (a log file, a pipe) a plain line on stderr per phase when `lines`, as the
    benchmark's live table does; nothing with --quiet. A stop (Ctrl-C, a signal) ends the
    spinner, then exits saying what was kept (`stopped`, once the stop's handler said it)."""
    try:
        if Verbosity.quiet():
            yield None, None
        elif stderr.is_terminal:
            with stderr.status(first) as status:
                yield (lambda text: status.update(escape(text))), None
        elif lines:
            yield None, lambda text: print_lines(stderr, [Line("skip", f"> {text}")])
        else:
            yield None, None
    except BaseException as exc:
        stop = as_stop(exc)
        if stop is None:
            raise
        from torchscale.interfaces.console.validate import NOTHING_KEPT

        raise stop_exit(stop, stopped[0] if stopped else NOTHING_KEPT) from None


def _prefixed(prefix: str, *hearers: Callable[[str], None] | None) -> Callable[[str], None]:
    """One callback telling each hearer `prefix + text`."""

    def tell(text: str) -> None:
        for hear in hearers:
            if hear is not None:
                hear(prefix + text)

    return tell


def _save(report: ValidateReport, experiment_dir: Path) -> Path:
    """The report where `torchscale report` finds it, atomically (ResultsError on failure)."""
    from torchscale.contracts.atomic import write_text_atomic
    from torchscale.contracts.errors import ResultsError, describe_os_error
    from torchscale.offline.results.directory_layout import ResultLayout

    path = ResultLayout(experiment_dir).acceptance_path(report.hostname, report.level)
    try:
        return write_text_atomic(path, report.model_dump_json(indent=2))
    except OSError as exc:
        why = describe_os_error(exc)
        raise ResultsError(f"cannot save the validate report to {path}: {why}") from None
