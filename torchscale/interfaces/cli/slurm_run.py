"""`torchscale benchmark --status` / `--cancel` of a sweep run with `launcher.kind: slurm`: the
printing side of torchscale/orchestration/schedulers/slurm/ (the run itself is its launcher.py,
whose progress the benchmark command shows through the launchers' generic events)."""

from __future__ import annotations

import os
from pathlib import Path

from rich.markup import escape

from torchscale.contracts.errors import UsageError
from torchscale.interfaces.console.streams import stdout
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.schedulers.slurm.client import job_states, require_sbatch
from torchscale.orchestration.schedulers.slurm.jobs import read_jobs
from torchscale.orchestration.schedulers.slurm.progress import read_progress
from torchscale.orchestration.schedulers.slurm.submission import cancel_sweep


def experiment_store(directory: Path) -> ResultStore:
    """The results directory a `--status`/`--cancel` DIR names; a missing directory and one
    without Slurm jobs are told apart (a typo in DIR is the usual cause of the first)."""
    if not directory.exists():
        raise UsageError(f"{directory}: no such directory (give the results directory of a sweep)")
    if not directory.is_dir():
        raise UsageError(f"{directory}: not a directory (give the results directory of a sweep)")
    if not ResultLayout(directory).slurm_jobs_path.exists():
        raise UsageError(
            f"{directory}: no Slurm jobs recorded here (expected slurm/jobs.json in a results "
            "directory of a sweep run with launcher.kind: slurm)"
        )
    return ResultStore(directory.resolve())


def show_status(directory: Path) -> int:
    """Each job's state and its cells: done, running, waiting. The directory is checked
    before Slurm's commands: a typo on a laptop says so, not that sbatch is missing."""
    store = experiment_store(directory)
    require_sbatch()
    jobs = read_jobs(store).jobs
    states = job_states([j.job_id for j in jobs], os.environ)
    for job in jobs:
        state = states[job.job_id]
        progress = read_progress(store.slurm_allocation_dir(job.allocation))
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
    store = experiment_store(directory)
    require_sbatch()
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
