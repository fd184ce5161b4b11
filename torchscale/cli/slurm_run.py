"""`torchscale benchmark` with `launcher.kind: slurm`, and `--status` / `--cancel` of such a
sweep: the printing side of torchscale/slurm/sweep.py."""

from __future__ import annotations

import os
from pathlib import Path

from rich.markup import escape

from torchscale.cli.common import Verbosity, print_error_lines, stderr, stdout
from torchscale.errors import UsageError
from torchscale.plan import Plan
from torchscale.results.store import ResultStore
from torchscale.schema.cell_result import CellResult
from torchscale.signals import Terminated
from torchscale.slurm.client import JobState, job_states, require_sbatch
from torchscale.slurm.jobs import JobRecord, read_jobs
from torchscale.slurm.progress import read_progress
from torchscale.slurm.sweep import (
    FollowHooks,
    SlurmSweep,
    cancel_sweep,
    check_nodes,
    collect,
    follow,
    prepare_sweep,
    submit_sweep,
)
from torchscale.sweep import nothing_measured

LOCAL_ONLY = (
    "{what} runs with launcher.kind 'local' only for now; under Slurm it is not run "
    "(run it on one node with kind: local)"
)


def slurm_dry_run(plan: Plan, store: ResultStore) -> None:
    require_sbatch()
    check_nodes(plan, os.environ)
    sweep = prepare_sweep(plan, store, os.environ, resume=False, write_skips=False)
    _print_sweep(sweep, submitted=False)
    stdout.print("dry run: nothing submitted")


def run_slurm_sweep(plan: Plan, store: ResultStore, resume: bool) -> int:
    """Submit, follow, summarise; 1 when a cell failed or none was measured (all skipped).
    Ctrl-C stops following, not the jobs."""
    from torchscale.report.terminal import TABLE_NOTE, cell_lines, model_tables
    from torchscale.worker.environment import capture_environment

    require_sbatch()
    check_nodes(plan, os.environ)
    store.write_config(plan.config.as_yaml())
    store.write_environment(capture_environment())
    for what, on in (
        (
            "the comm: section (launcher.slurm.preflight.comm runs it across each allocation's "
            "nodes)",
            plan.config.comm.enabled and not plan.config.launcher.slurm.preflight.comm,
        ),
        ("memory.max_batch_search", plan.config.memory.max_batch_search),
        ("profiling", plan.config.profiling.enabled),
    ):
        if on:
            stderr.print(f"[yellow]warning:[/] {escape(LOCAL_ONLY.format(what=what))}")
    sweep = prepare_sweep(plan, store, os.environ, resume=resume, write_skips=True)
    jobs = submit_sweep(sweep, store, os.environ)
    _print_sweep(sweep, submitted=True, jobs=jobs)
    quiet = Verbosity.quiet()

    def on_job(job: JobRecord, state: JobState) -> None:
        if not quiet:
            why = f" ({state.reason})" if state.reason else ""
            stderr.print(
                f"> [SLURM] job {job.job_id} ({job.nodes} node(s), {len(job.cells)} cell(s)): "
                f"{escape(state.state)}{escape(why)}"
            )

    def on_running(job: JobRecord, cell_id: str) -> None:
        if not quiet:
            stderr.print(f"> [SLURM] job {job.job_id}: running {escape(cell_id)}")

    def on_preflight(job: JobRecord, step: str, verdict: str) -> None:
        if not quiet or not verdict.startswith("ok"):
            stderr.print(f"> [SLURM] job {job.job_id}: preflight {escape(step)}: {escape(verdict)}")

    def on_done(result: CellResult) -> None:
        if quiet and not result.status.is_failure:
            return
        for line in cell_lines(result):
            stdout.print(line.markup())

    following = sweep.following + jobs
    try:
        follow(
            store,
            plan,
            following,
            os.environ,
            FollowHooks(on_job, on_running, on_done, on_preflight),
            poll_s=plan.config.launcher.slurm.poll_s,
        )
    except (KeyboardInterrupt, Terminated):
        stderr.print(
            f"stopped following; the jobs go on in Slurm: torchscale benchmark --status "
            f"{escape(str(store.root))} (or --cancel, or --resume to follow them again)"
        )
        raise
    results, table = collect(store, plan)
    if table is not None:
        for rendered in model_tables(table):
            stdout.print(rendered)
        stdout.print(escape(TABLE_NOTE))
    failed = [r for r in results if r.status.is_failure]
    stdout.print(
        f"results: {escape(str(store.root))} ({len(results)} cell(s), {len(failed)} failed)"
    )
    empty = nothing_measured(results, len(plan.cells))
    if empty is not None:  # as a local sweep: only skipped cells is no green run
        print_error_lines([empty])
    return 1 if failed or empty else 0


def _print_sweep(
    sweep: SlurmSweep, *, submitted: bool, jobs: list[JobRecord] | None = None
) -> None:
    for warning in sweep.warnings:
        stderr.print(f"[yellow]warning:[/] {escape(warning)}")
    if sweep.reused:
        stdout.print(f"--resume: {len(sweep.reused)} cell(s) already ok, kept")
    for job in sweep.following:
        stdout.print(
            f"--resume: job {job.job_id} ({len(job.cells)} cell(s)) still queued or running: "
            "followed, not submitted again"
        )
    if sweep.skipped:
        stdout.print(f"{len(sweep.skipped)} cell(s) skipped (see the plan: --dry-run)")
    ids = {j.allocation: j.job_id for j in jobs or []}
    for allocation, script in zip(sweep.allocations, sweep.scripts, strict=True):
        label = f"job {ids[allocation.name]}: " if allocation.name in ids else ""
        verb = "submitted" if submitted else "written"
        stdout.print(
            f"{label}{allocation.nodes} node(s), {len(allocation.cells)} cell(s), sbatch script "
            f"{verb}: {escape(str(script))}"
        )
        if not submitted:
            for cell_id in allocation.cell_ids:
                stdout.print(f"  {escape(cell_id)}")
    if not sweep.allocations and not sweep.following:
        stdout.print("nothing to submit: every cell is ok or skipped")


def experiment_store(directory: Path) -> ResultStore:
    if not (directory / "slurm" / "jobs.json").exists():
        raise UsageError(
            f"{directory}: no Slurm jobs recorded here (expected slurm/jobs.json in a results "
            "directory of a sweep run with launcher.kind: slurm)"
        )
    return ResultStore(directory.resolve())


def show_status(directory: Path) -> int:
    """Each job's state and its cells: done, running, waiting."""
    require_sbatch()
    store = experiment_store(directory)
    jobs = read_jobs(store).jobs
    states = job_states([j.job_id for j in jobs], os.environ)
    for job in jobs:
        state = states[job.job_id]
        progress = read_progress(store.root / "slurm" / job.allocation)
        why = f" ({state.reason})" if state.reason else ""
        stdout.print(
            f"job {job.job_id} {job.allocation} ({job.nodes} node(s)): "
            f"{escape(state.state)}{escape(why)}, {len(progress.done)}/{len(job.cells)} "
            f"cell(s) done"
        )
        for step, verdict in progress.preflight.items():
            stdout.print(f"  preflight {escape(step)}: {escape(verdict)}")
        for cell_id in job.cells:
            result = store.read_cell(cell_id)
            if cell_id in progress.done and result is not None:
                where = f"{result.status.value}"
            elif cell_id == progress.current:
                where = "running"
            elif state.active:
                where = "waiting"
            else:
                where = "not run (--resume runs it)"
            stdout.print(f"  {escape(cell_id)}: {escape(where)}")
    return 0


def cancel_jobs(directory: Path) -> int:
    require_sbatch()
    store = experiment_store(directory)
    cancelled = cancel_sweep(store, os.environ)
    if not cancelled:
        stdout.print("no job of this sweep is queued or running")
        return 0
    ids = ", ".join(j.job_id for j in cancelled)
    stdout.print(
        f"cancelled job(s) {ids}; finished cells are kept, the running one is recorded as "
        "stopped (torchscale benchmark --resume runs the rest)"
    )
    return 0
