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
    from torchscale.config.schema import BenchConfig
    from torchscale.plan import Machine, Plan, PlannedCell
    from torchscale.results.schema import CellResult
    from torchscale.results.store import ResultStore


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
    from torchscale.config import load_config
    from torchscale.plan import build_plan
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
    plan = build_plan(config, _machine(config))
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
    check_output_dir(store.root)
    raise typer.Exit(_run(plan, store, resume, fail_fast))


def _machine(config: BenchConfig) -> Machine:
    """The nodes cells run on: this one (local), or as the launcher's config describes them
    (Slurm, k8s: the submitting host's GPUs say nothing about the nodes')."""
    from torchscale import host
    from torchscale.plan import Machine

    launcher = config.launcher
    if launcher.kind == "slurm":
        cores = launcher.slurm.cpus_per_task or host.usable_cores()
        return Machine(gpu_count=launcher.slurm.gpus_per_node or 0, cpu_cores=cores)
    if launcher.kind == "k8s":
        return Machine(gpu_count=launcher.k8s.gpus_per_node or 0, cpu_cores=host.usable_cores())
    return Machine(gpu_count=host.cuda_gpu_count(), cpu_cores=host.usable_cores())


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
    from torchscale.data.prepare import DataReady
    from torchscale.report.terminal import (
        TABLE_NOTE,
        cell_lines,
        model_tables,
        reused_line,
        running_line,
    )
    from torchscale.sweep import SweepHooks, nothing_measured, run_sweep
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

    def on_data(ready: DataReady) -> None:
        if not quiet:
            note = f" ({ready.note})" if ready.note else ""
            progress.console.print(escape(f"> {ready.message}{note}"))

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
            hooks=SweepHooks(on_start, on_done, on_data),
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
    empty = nothing_measured(outcome.results, len(plan.cells))
    if empty is not None:  # skipped cells are no failures, but a sweep of only them is
        print_error_lines([empty])
    if outcome.stopped_early:
        stdout.print("[yellow]--fail-fast: stopped at the first failure[/]")
        return 1
    comm_ok = _comm_after(plan, store)
    searched_ok = _max_batch_after(plan, store)
    if plan.config.profiling.enabled:
        _profile_after(plan, store, outcome.results)
    return 1 if failures or empty or not comm_ok or not searched_ok else 0


def _max_batch_after(plan: Plan, store: ResultStore) -> bool:
    """The config's `memory.max_batch_search`: the largest batch per device of each cell
    group, one fresh torchrun per probe, stored in <experiment>/max_batch/. False when a
    search ended on a failure other than running out of memory."""
    if not plan.config.memory.max_batch_search:
        return True
    from torchscale.data.prepare import prepare_data
    from torchscale.memory.runner import SearchGroup, run_max_batch_search
    from torchscale.memory.search import ProbeOutcome

    quiet = Verbosity.quiet()
    prepare_data(plan.config.data)  # the probes read it too (cached: a manifest check)

    def on_probe(group: SearchGroup, batch: int, outcome: ProbeOutcome) -> None:
        if not quiet:
            why = f": {outcome.reason}" if outcome.kind == "failed" and outcome.reason else ""
            stderr.print(
                f"> [MEMORY] {escape(group.id)}: batch {batch} {outcome.kind}{escape(why)}"
            )

    if not quiet:
        stderr.print("> [MEMORY] max batch search: doubling, then bisection, one process per probe")
    ok = True
    for result in run_max_batch_search(plan, store, os.environ, on_probe):
        if result.status != "ok" or result.max_batch is None:
            ok = False
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
    return ok


def _comm_after(plan: Plan, store: ResultStore) -> bool:
    """The config's `comm:` section: one collective sweep per world size, printed as
    `torchscale comm` prints it and stored in <experiment>/comm/. False when one failed (a hang,
    a wrong element, the bandwidth gate); the cells' results are never touched."""
    from torchscale.comm.from_config import comm_failed, comm_requests
    from torchscale.comm.launch import comm_launch, new_run_id, run_comm
    from torchscale.report.comm_text import comm_lines

    ok = True
    for request in comm_requests(plan):
        launch = comm_launch(request, store.root, os.environ, new_run_id(request))
        if not Verbosity.quiet():
            stderr.print(
                f"> [COMM] {', '.join(request.ops)} on {request.ranks} rank(s) "
                f"({request.backend}), {len(launch.spec.sizes)} size(s) ..."
            )
        result = run_comm(launch, request)
        for line in comm_lines(result):
            stdout.out(line, highlight=False)
        stdout.print(f"> [COMM] stored: {escape(str(launch.result_path))}")
        ok = ok and not comm_failed(result)
    return ok


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
