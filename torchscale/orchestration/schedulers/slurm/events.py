"""What a Slurm sweep reports, as the launcher contract's generic events (schedulers/api.py):
the allocations written or submitted, each job's state changes, the cell each runs, each
preflight step's verdict, and following given up; in the words `torchscale benchmark` prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.schedulers.api import LauncherEvent, LauncherSubmission
from torchscale.orchestration.schedulers.slurm.client import JobState
from torchscale.orchestration.schedulers.slurm.jobs import JobRecord
from torchscale.orchestration.schedulers.slurm.review import placeholders, step_lines
from torchscale.orchestration.schedulers.slurm.submission import SlurmSweep

KIND = "slurm"
TAG = "> [SLURM]"


@dataclass(frozen=True)
class SlurmSubmitted:
    """A submission's own record: the allocations written, the jobs submitted (none on a dry
    run)."""

    sweep: SlurmSweep
    jobs: list[JobRecord]


def submitted(
    sweep: SlurmSweep,
    jobs: list[JobRecord],
    store: ResultStore,
    dry_run: bool,
    env: Mapping[str, str] | None = None,
    notes: Sequence[str] = (),
) -> LauncherEvent:
    """The allocations of a Slurm sweep: submitted as `jobs`, or (none) written for review;
    a dry run shows the plan's `notes` first and each job's steps as they will run in `env`."""
    verb = "submitted" if jobs else "written"
    lines = sweep_lines(sweep, jobs, store if dry_run else None, env or {})
    if dry_run:
        lines = [f"note: {note}" for note in notes] + lines
    closing = ("dry run: nothing submitted",) if dry_run else ()
    followed, record = bool(jobs or sweep.following), SlurmSubmitted(sweep, jobs)
    submission = LauncherSubmission(
        KIND, store.slurm_dir, tuple(sweep.scripts), tuple(lines), closing, followed, record
    )
    message = f"{len(sweep.scripts)} sbatch script(s) {verb} under {store.slurm_dir}"
    return LauncherEvent(KIND, "submitted", message, submission=submission)


def sweep_lines(
    sweep: SlurmSweep,
    jobs: list[JobRecord],
    review: ResultStore | None = None,
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """The cells kept and followed, the skipped ones and why, the allocations and their
    scripts, a line each; with `review` (the store of a dry run), each job's srun steps (the
    nodes' environment, the preflight, each cell) as they will run."""
    verb = "submitted" if jobs else "written"
    lines = []
    if sweep.reused:
        lines.append(f"--resume: {len(sweep.reused)} cell(s) already ok, kept")
    for job in sweep.following:
        lines.append(
            f"--resume: job {job.job_id} ({len(job.cells)} cell(s)) still queued or running: "
            "followed, not submitted again"
        )
    if sweep.skipped:
        lines.append(f"{len(sweep.skipped)} cell(s) skipped:")
        lines.extend(f"  {cell_id}: {reason}" for cell_id, reason in sweep.skipped.items())
    ids = {j.allocation: j.job_id for j in jobs}
    for allocation, script in zip(sweep.allocations, sweep.scripts, strict=True):
        label = f"job {ids[allocation.name]}: " if allocation.name in ids else ""
        lines.append(
            f"{label}{allocation.nodes} node(s), {len(allocation.cells)} cell(s), sbatch script "
            f"{verb}: {script}"
        )
        if review is not None:
            lines.extend(step_lines(allocation, review, env or {}))
        elif not jobs:
            lines.extend(f"  {cell_id}" for cell_id in allocation.cell_ids)
    if review is not None and sweep.allocations:
        lines.extend(placeholders(sweep.allocations))
    if not sweep.allocations and not sweep.following:
        lines.append("nothing to submit: every cell is ok or skipped")
    return lines


def job_state(job: JobRecord, state: JobState) -> LauncherEvent:
    why = f" ({state.reason})" if state.reason else ""
    return LauncherEvent(
        KIND,
        "progress",
        f"{TAG} job {job.job_id} ({job.nodes} node(s), {len(job.cells)} cell(s)): "
        f"{state.state}{why}",
        payload={"job_id": job.job_id, "state": state.state, "reason": state.reason},
    )


def running(job: JobRecord, cell_id: str) -> LauncherEvent:
    message = f"{TAG} job {job.job_id}: running"
    return LauncherEvent(KIND, "progress", message, cell_id, payload={"job_id": job.job_id})


def preflight(job: JobRecord, step: str, verdict: str) -> LauncherEvent:
    """A preflight step's verdict; one that is not ok is shown even with --quiet."""
    return LauncherEvent(
        KIND,
        "progress" if verdict.startswith("ok") else "problem",
        f"{TAG} job {job.job_id}: preflight {step}: {verdict}",
        payload={"job_id": job.job_id, "step": step, "verdict": verdict},
    )


def detached(results: Path) -> LauncherEvent:
    """Ctrl-C or a signal stopped following; the jobs go on in Slurm."""
    return LauncherEvent(
        KIND,
        "detached",
        f"stopped following; the jobs go on in Slurm: torchscale benchmark --status {results} "
        "(or --cancel, or --resume to follow them again)",
        payload={"results": str(results)},
    )
