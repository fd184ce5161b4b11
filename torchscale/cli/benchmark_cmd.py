"""`torchscale benchmark`: expand the config into cells and run each under torchrun."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from torchscale.cli.common import Verbosity, handle_errors, print_error_lines, stderr, stdout
from torchscale.cli.options import SetOverrides, VerbosityFlag
from torchscale.errors import UsageError

if TYPE_CHECKING:
    from torchscale.api import BenchmarkRun
    from torchscale.comm.launch import CommLaunch, CommRequest
    from torchscale.comm.result import CommResult
    from torchscale.data.prepare import DataReady
    from torchscale.memory.result import MaxBatchResult
    from torchscale.memory.runner import SearchGroup
    from torchscale.memory.search import ProbeOutcome
    from torchscale.plan import Plan, PlannedCell
    from torchscale.profiling.trigger import Selected
    from torchscale.results.store import ResultStore
    from torchscale.schema.cell_result import CellResult


@handle_errors
def benchmark(
    config_file: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="Benchmark config (YAML).", show_default=False),
    ] = None,
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
    status_dir: Annotated[
        Path | None,
        typer.Option(
            "--status",
            metavar="DIR",
            help="Show the Slurm jobs of the sweep whose results are in DIR; run nothing.",
        ),
    ] = None,
    cancel_dir: Annotated[
        Path | None,
        typer.Option("--cancel", metavar="DIR", help="Cancel the Slurm jobs of the sweep in DIR."),
    ] = None,
    verbose: VerbosityFlag = None,
) -> None:
    """Run throughput/latency tests across model x batch x GPU count x precision."""
    from torchscale.api import plan_benchmark
    from torchscale.config import load_config
    from torchscale.report.terminal import plan_lines
    from torchscale.results.store import ResultStore, check_output_dir

    Verbosity.override(verbose)
    if status_dir is not None or cancel_dir is not None:
        from torchscale.cli.slurm_run import cancel_jobs, show_status

        if status_dir is not None and cancel_dir is not None:
            raise UsageError("give --status or --cancel, not both")
        if status_dir is not None:
            raise typer.Exit(show_status(status_dir))
        assert cancel_dir is not None
        raise typer.Exit(cancel_jobs(cancel_dir))
    if config_file is None:
        raise UsageError("--config FILE is needed (or --status DIR / --cancel DIR)")
    config = load_config(config_file, overrides or [])
    kind = config.launcher.kind
    if kind == "slurm":
        from torchscale.slurm.client import require_sbatch

        require_sbatch()  # before anything is written
    plan = plan_benchmark(config)
    store = ResultStore.for_experiment(output_dir, config.experiment_name)
    if kind == "slurm":
        from torchscale.cli.slurm_run import run_slurm_sweep, slurm_dry_run

        store = ResultStore(store.root.resolve())  # the nodes get absolute paths
        if dry_run:
            slurm_dry_run(plan, store)
            return
        check_output_dir(store.root)
        raise typer.Exit(run_slurm_sweep(plan, store, resume))
    if kind == "k8s":
        raise typer.Exit(_k8s(plan, store, dry_run))
    if dry_run:
        for line in plan_lines(plan, store, os.environ):
            stdout.print(line.markup())
        return
    raise typer.Exit(_run(plan, output_dir, resume, fail_fast))


def _k8s(plan: Plan, store: ResultStore, dry_run: bool) -> int:
    """Write one manifest per cell (and the specs its pods read); with `apply: true` and no
    --dry-run, kubectl apply them. torchscale does not follow Kubernetes jobs."""
    from torchscale.k8s import apply_manifests, write_k8s_manifests

    settings = plan.config.launcher.k8s
    if settings.apply and not dry_run:
        import shutil

        if shutil.which("kubectl") is None:
            raise UsageError("launcher.k8s.apply needs kubectl on PATH; nothing was written")
    if settings.results_claim is None:
        stderr.print(
            "[yellow]warning:[/] launcher.k8s.results_claim is not set: the runtime must mount "
            f"shared storage at {escape(settings.results_mount)}, or the results stay in the pods"
        )
    paths = write_k8s_manifests(plan, store, settings.pod_patch)
    for path in paths:
        stdout.print(f"manifest: {escape(str(path))}")
    skipped = [p for p in plan.cells if p.skip_reason is not None]
    stdout.print(
        f"{len(paths)} manifest(s) written under {escape(str(store.root / 'k8s'))}"
        + (f"; {len(skipped)} cell(s) skipped" if skipped else "")
    )
    if dry_run or not settings.apply:
        stdout.print("nothing applied: kubectl apply -f FILE (or launcher.k8s.apply: true)")
        return 0
    for applied in apply_manifests(paths):
        stdout.print(escape(f"applied {applied.path}: {applied.output.strip()}"))
    return 0


def _run(plan: Plan, output_dir: Path, resume: bool, fail_fast: bool) -> int:
    """The local sweep through the library (`torchscale.api.run_benchmark`), printed as it goes."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from torchscale.api import BenchmarkEvents, run_benchmark
    from torchscale.cell import Status
    from torchscale.report.terminal import (
        TABLE_NOTE,
        cell_lines,
        model_tables,
        reused_line,
        running_line,
    )

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

    def on_cell_start(planned: PlannedCell, index: int, total: int, will_launch: bool) -> None:
        if will_launch and not quiet:
            progress.console.print(running_line(planned).markup())

    def on_data(ready: DataReady) -> None:
        if not quiet:
            note = f" ({ready.note})" if ready.note else ""
            progress.console.print(escape(f"> {ready.message}{note}"))

    def on_cell_done(result: CellResult, reused: bool) -> None:
        progress.advance(task)
        if quiet and result.status in (Status.OK, Status.SKIPPED):
            return
        for line in [reused_line(result)] if reused else cell_lines(result):
            progress.console.print(line.markup())

    def on_sweep_done(run: BenchmarkRun) -> None:
        progress.stop()
        if run.sweep.table is not None:
            for table in model_tables(run.sweep.table):
                stdout.print(table)
            stdout.print(escape(TABLE_NOTE))
        _sweep_summary(run)

    events = BenchmarkEvents(
        on_cell_start=on_cell_start,
        on_cell_done=on_cell_done,
        on_data=on_data,
        on_sweep_done=on_sweep_done,
        on_comm_start=_comm_started,
        on_comm_done=_comm_done,
        on_max_batch_start=_max_batch_started,
        on_probe=_probed,
        on_max_batch_done=_max_batch_done,
        on_profile_start=_profile_started,
    )
    progress.start()
    try:
        run = run_benchmark(
            plan.config, output_dir, resume=resume, fail_fast=fail_fast, events=events, plan=plan
        )
    finally:
        progress.stop()
    if run.plan.config.profiling.enabled and not run.sweep.stopped_early:
        _profiles_done(run)
    return run.exit_code


def _sweep_summary(run: BenchmarkRun) -> None:
    """The lines after the table: where the results are, and why the sweep counts as failed."""
    stdout.print(
        f"results: {escape(str(run.store.root))} ({len(run.sweep.results)} cell(s), "
        f"{len(run.sweep.failures)} failed)"
    )
    if run.nothing_measured is not None:  # skipped cells are no failures, but only them is
        print_error_lines([run.nothing_measured])
    if run.sweep.stopped_early:
        stdout.print("[yellow]--fail-fast: stopped at the first failure[/]")


def _comm_started(request: CommRequest, launch: CommLaunch) -> None:
    if not Verbosity.quiet():
        stderr.print(
            f"> [COMM] {', '.join(request.ops)} on {request.ranks} rank(s) "
            f"({request.backend}), {len(launch.spec.sizes)} size(s) ..."
        )


def _comm_done(result: CommResult, stored: Path) -> None:
    from torchscale.report.comm_text import comm_lines

    for line in comm_lines(result):
        stdout.out(line, highlight=False)
    stdout.print(f"> [COMM] stored: {escape(str(stored))}")


def _max_batch_started() -> None:
    if not Verbosity.quiet():
        stderr.print("> [MEMORY] max batch search: doubling, then bisection, one process per probe")


def _probed(group: SearchGroup, batch: int, outcome: ProbeOutcome) -> None:
    if not Verbosity.quiet():
        why = f": {outcome.reason}" if outcome.kind == "failed" and outcome.reason else ""
        stderr.print(f"> [MEMORY] {escape(group.id)}: batch {batch} {outcome.kind}{escape(why)}")


def _max_batch_done(results: list[MaxBatchResult]) -> None:
    for result in results:
        if result.status != "ok" or result.max_batch is None:
            stdout.print(
                f"> [MEMORY] {escape(result.group)}: no answer ({escape(result.reason or '')})"
            )
            continue
        answer = f"at least {result.max_batch}" if result.limit_reached else str(result.max_batch)
        used = (
            f", memory utilisation {result.memory_utilisation:.0%}"
            if result.memory_utilisation is not None
            else ""
        )
        stdout.print(
            f"> [MEMORY] {escape(result.label)} x{result.world_size} {result.precision} "
            f"{result.strategy}: max batch per device {answer}{used} "
            f"({len(result.probes)} probes, {result.wall_s or 0:.0f} s)"
        )


def _profile_started(selected: Selected, note: str | None) -> None:
    if note:
        stderr.print(f"[cyan]note:[/] {escape(note)}")
    stdout.print(f"> [PROFILE] {escape(selected.cell_id)}: {escape(selected.reason)}")


def _profiles_done(run: BenchmarkRun) -> None:
    """Each profile's analysis; a profile that failed is reported and never changes the exit
    code (the measurements it follows are complete)."""
    from torchscale.report.profile_terminal import analysis_lines

    settings = run.plan.config.profiling
    if not run.profiles:
        stdout.print(
            f"> [PROFILE] no cell crossed the profiling thresholds (trigger "
            f"{settings.trigger}: stall {settings.stall_threshold:.0%}, step-time CV "
            f"{settings.variance_threshold:.2f})"
        )
    for selected, profiled in run.profiles:
        if profiled.analysis is None:
            reason = profiled.analysis_error or "no analysis"
            stdout.print(f"[yellow]> [PROFILE] {escape(selected.cell_id)}: {escape(reason)}[/]")
            continue
        for line in analysis_lines(profiled.analysis):
            stdout.print(line.markup())
        stdout.print(f"> [PROFILE] analysis: {escape(str(profiled.directory / 'analysis.json'))}")
