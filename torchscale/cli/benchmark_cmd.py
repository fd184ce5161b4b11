"""`torchscale benchmark`: expand the config into cells and run each under torchrun."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from torchscale.cli.common import Verbosity, handle_errors, stderr, stdout
from torchscale.cli.options import SetOverrides, VerbosityFlag
from torchscale.errors import UsageError

if TYPE_CHECKING:
    from torchscale.plan import Plan, PlannedCell
    from torchscale.results.schema import CellResult
    from torchscale.results.store import ResultStore


@handle_errors
def benchmark(
    config_file: Annotated[
        Path, typer.Option("--config", "-c", help="Benchmark config (YAML).", show_default=False)
    ],
    output_dir: Annotated[
        Path, typer.Option("--output-dir", "-o", help="Results go to OUTPUT_DIR/<experiment>.")
    ] = Path("./results"),
    overrides: SetOverrides = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan (argv, env, skips); run nothing.")
    ] = False,
    resume: Annotated[
        bool, typer.Option("--resume", help="Skip cells already ok for the same definition.")
    ] = False,
    fail_fast: Annotated[
        bool, typer.Option("--fail-fast", help="Stop at the first failed cell.")
    ] = False,
    verbose: VerbosityFlag = None,
) -> None:
    """Run throughput/latency tests across model x batch x GPU count x precision."""
    from torchscale import host
    from torchscale.config import load_config
    from torchscale.plan import Machine, build_plan
    from torchscale.report.terminal import plan_lines
    from torchscale.results.store import ResultStore, check_output_dir

    Verbosity.override(verbose)
    config = load_config(config_file, overrides or [])
    if config.launcher.kind != "local":
        raise UsageError("launcher.kind 'slurm' is not implemented yet; use 'local' (one node)")
    machine = Machine(gpu_count=host.cuda_gpu_count(), cpu_cores=host.usable_cores())
    plan = build_plan(config, machine)
    store = ResultStore.for_experiment(output_dir, config.experiment_name)
    if dry_run:
        for line in plan_lines(plan, store, os.environ):
            stdout.print(line.markup())
        return
    check_output_dir(store.root)
    raise typer.Exit(_run(plan, store, resume, fail_fast))


def _run(plan: Plan, store: ResultStore, resume: bool, fail_fast: bool) -> int:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from torchscale.cell import Status
    from torchscale.report.terminal import (
        TABLE_NOTE,
        cell_lines,
        model_tables,
        reused_line,
        running_line,
    )
    from torchscale.sweep import SweepHooks, run_sweep
    from torchscale.worker.environment import capture_environment

    store.write_environment(capture_environment())
    quiet = Verbosity.quiet()
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=stderr,
        disable=quiet,
        transient=True,
    )
    task = progress.add_task("cells", total=len(plan.cells))

    def on_start(planned: PlannedCell, index: int, total: int, will_launch: bool) -> None:
        if will_launch and not quiet:
            progress.console.print(running_line(planned).markup())

    def on_done(result: CellResult, reused: bool) -> None:
        progress.advance(task)
        if quiet and result.status in (Status.OK, Status.SKIPPED):
            return
        for line in [reused_line(result)] if reused else cell_lines(result):
            progress.console.print(line.markup())

    with progress:
        outcome = run_sweep(
            plan,
            store,
            os.environ,
            resume=resume,
            fail_fast=fail_fast,
            hooks=SweepHooks(on_start, on_done),
        )
    if outcome.table is not None:
        for table in model_tables(outcome.table):
            stdout.print(table)
        stdout.print(escape(TABLE_NOTE))
    failures = outcome.failures
    stdout.print(
        f"results: {escape(str(store.root))} ({len(outcome.results)} cell(s), "
        f"{len(failures)} failed)"
    )
    if outcome.stopped_early:
        stdout.print("[yellow]--fail-fast: stopped at the first failure[/]")
    elif plan.config.profiling.enabled:
        _profile_after(plan, store, outcome.results)
    return 1 if failures else 0


def _profile_after(plan: Plan, store: ResultStore, results: list[CellResult]) -> None:
    """The config's `profiling:` section: profile the cells its trigger selects, then print
    each analysis. A profile that fails is reported; it never changes the sweep's exit code
    (the measurements it follows are complete)."""
    from torchscale.profiling.session import profile_after_sweep
    from torchscale.profiling.trigger import Selected
    from torchscale.report.profile_terminal import analysis_lines

    settings = plan.config.profiling

    def on_start(selected: Selected, note: str | None) -> None:
        if note:
            stderr.print(f"[cyan]note:[/] {escape(note)}")
        stdout.print(f"> [PROFILE] {escape(selected.cell_id)}: {escape(selected.reason)}")

    done = profile_after_sweep(plan, store, os.environ, results, on_start)
    if not done:
        stdout.print(
            f"> [PROFILE] no cell crossed the profiling thresholds (trigger "
            f"{settings.trigger}: stall {settings.stall_threshold:.0%}, step-time CV "
            f"{settings.variance_threshold:.2f})"
        )
    for selected, profiled in done:
        if profiled.analysis is None:
            reason = profiled.analysis_error or "no analysis"
            stdout.print(f"[yellow]> [PROFILE] {escape(selected.cell_id)}: {escape(reason)}[/]")
            continue
        for line in analysis_lines(profiled.analysis):
            stdout.print(line.markup())
        stdout.print(f"> [PROFILE] analysis: {escape(str(profiled.directory / 'analysis.json'))}")
