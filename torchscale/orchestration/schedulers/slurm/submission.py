"""A sweep on Slurm from the submitting side: write one allocation per node count, submit,
follow, and settle what the jobs left undone.

The same results layout as a local sweep: the drivers write cells/, logs/ and steps/ on the
shared filesystem; this side writes skipped cells, a failed result for every cell a job ended
without running (with the job's state and the tail of its output), and summary.csv.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from torchscale.contracts.cell import Status
from torchscale.contracts.errors import SlurmError, UsageError
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellError, CellResult
from torchscale.contracts.wording import say
from torchscale.offline.results.store import ResultStore
from torchscale.offline.results.summary_csv import write_summary
from torchscale.orchestration.launch.process import file_tail
from torchscale.orchestration.plan.planned import Plan, PlannedCell
from torchscale.orchestration.schedulers.slurm.allocation import (
    ALLOCATION_FILE,
    SCRIPT_NAME,
    Allocation,
    build_allocation,
    job_output_path,
    sbatch_script,
)
from torchscale.orchestration.schedulers.slurm.client import (
    JobState,
    PartitionAnswer,
    cancel,
    job_states,
    partition_limits,
    submit,
)
from torchscale.orchestration.schedulers.slurm.filesystem import local_filesystem_warning
from torchscale.orchestration.schedulers.slurm.gpus import counts_no_gpus
from torchscale.orchestration.schedulers.slurm.jobs import JobRecord, add_job, now, read_jobs
from torchscale.orchestration.schedulers.slurm.progress import read_progress
from torchscale.orchestration.sweep import unmeasured_result


@dataclass
class SlurmSweep:
    """What a submission will run: allocations written to disk, not yet submitted."""

    allocations: list[Allocation] = field(default_factory=list)
    scripts: list[Path] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)  # --resume: ok results kept
    skipped: dict[str, str] = field(default_factory=dict)  # cell id -> why it is skipped
    following: list[JobRecord] = field(default_factory=list)  # --resume: still queued/running
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FollowHooks:
    """Progress callbacks; the Slurm sweep prints nothing itself."""

    on_job: Callable[[JobRecord, JobState], None] = lambda job, state: None
    on_running: Callable[[JobRecord, str], None] = lambda job, cell_id: None
    on_done: Callable[[CellResult], None] = lambda result: None
    on_preflight: Callable[[JobRecord, str, str], None] = lambda job, step, verdict: None


def partition_answer(plan: Plan) -> PartitionAnswer | None:
    """What Slurm said of the partition while the plan was built (torchscale/orchestration/
    schedulers/slurm/gpus.py); None where it was not asked (CPU cells)."""
    answer = plan.scheduler_answer
    return answer if isinstance(answer, PartitionAnswer) else None


def check_nodes(plan: Plan, env: Mapping[str, str]) -> None:
    """Node counts above the partition's size are refused, with its limits (when Slurm
    tells them). Slurm is asked only if the plan was built without asking it."""
    slurm = plan.launcher.slurm
    answer = partition_answer(plan)
    try:
        limits = answer.limits_or_raise() if answer else partition_limits(slurm.partition, env)
    except SlurmError as exc:
        if slurm.partition and "not found" in str(exc).lower():
            raise UsageError(
                f"launcher.slurm.partition: Slurm has no partition {slurm.partition!r}"
            ) from None
        raise
    if limits is None:
        return
    wanted = nodes_per_job(plan)
    caps = [c for c in (limits.total_nodes, limits.max_nodes) if c is not None]
    if caps and wanted > min(caps):
        raise UsageError(
            f"launcher.nodes: {wanted} node(s) asked, partition {limits.name!r} has "
            f"{limits.total_nodes if limits.total_nodes is not None else '?'} node(s), at most "
            f"{limits.max_nodes if limits.max_nodes is not None else 'unlimited'} per job"
        )


def nodes_per_job(plan: Plan) -> int:
    """The most nodes one allocation of the plan asks for."""
    return max((p.cell.nodes for p in plan.runnable), default=1)


def nodes_not_checked(plan: Plan) -> list[str]:
    """What `check_nodes` asks Slurm, a line each, for a dry run that could not ask it."""
    partition = plan.launcher.slurm.partition
    named = f"partition {partition!r}" if partition else "the cluster's default partition"
    return [
        f"not checked: that Slurm has {named} (launcher.slurm.partition)",
        f"not checked: {nodes_per_job(plan)} node(s) per job against the node count and "
        f"MaxNodes of {named} (launcher.nodes)",
    ]


def _active_jobs(store: ResultStore, env: Mapping[str, str]) -> list[JobRecord]:
    jobs = read_jobs(store).jobs  # none: job_states asks Slurm nothing
    states = job_states([j.job_id for j in jobs], env)
    return [j for j in jobs if states[j.job_id].active]


def prepare_sweep(
    plan: Plan,
    store: ResultStore,
    env: Mapping[str, str],
    *,
    resume: bool,
    write_skips: bool,
    ask_slurm: bool = True,
) -> SlurmSweep:
    """Allocations for the cells that must run, written under slurm/ (sbatch scripts
    included). With --resume: cells already ok are kept, cells of jobs still queued or running
    are followed, not submitted again (`ask_slurm=False`, a dry run off the cluster: which
    recorded jobs still run is not asked, and a warning says so)."""
    sweep = SlurmSweep()
    warning = local_filesystem_warning(store.root)
    if warning:
        sweep.warnings.append(warning)
    sweep.following = _active_jobs(store, env) if resume and ask_slurm else []
    if resume and not ask_slurm and read_jobs(store).jobs:
        sweep.warnings.append(
            "not checked: which jobs recorded in slurm/jobs.json still run (--resume): the "
            "cells they may still be running are planned again"
        )
    busy = {cell for job in sweep.following for cell in job.cells}
    by_nodes: dict[int, list[PlannedCell]] = {}
    for planned in plan.cells:
        cell_id = planned.cell.id
        if planned.skip is not None:
            sweep.skipped[cell_id] = say(planned.skip)
            if write_skips:
                error = CellError(why=planned.skip)
                store.write_cell(unmeasured_result(planned, Status.SKIPPED, error))
            continue
        if resume and store.finished_ok(cell_id, planned.cell.definition_sha256):
            sweep.reused.append(cell_id)
            continue
        if cell_id in busy:
            continue
        by_nodes.setdefault(planned.cell.nodes, []).append(planned)
    number = len(read_jobs(store).jobs) + 1
    for offset, (nodes, cells) in enumerate(sorted(by_nodes.items())):
        name = f"s{str(number + offset).zfill(2)}-n{nodes}"
        allocation = build_allocation(
            name,
            nodes,
            cells,
            store,
            plan.launcher.slurm,
            plan.price_per_gpu_hour,
            plan.comm,
            fixed_threads=plan.launcher.omp_num_threads is not None,
            gpus_counted=not counts_no_gpus(partition_answer(plan)),
        )
        directory = allocation.directory
        store.write_text(directory / ALLOCATION_FILE, allocation.model_dump_json(indent=2))
        script = sbatch_script(allocation, plan.launcher.slurm, plan.experiment)
        sweep.scripts.append(store.write_text(directory / SCRIPT_NAME, script))
        sweep.allocations.append(allocation)
    return sweep


def submit_sweep(sweep: SlurmSweep, store: ResultStore, env: Mapping[str, str]) -> list[JobRecord]:
    """sbatch every allocation; each job is recorded in slurm/jobs.json as soon as Slurm
    answers, so a failure half way leaves the submitted ones followable."""
    records = []
    for allocation, script in zip(sweep.allocations, sweep.scripts, strict=True):
        record = JobRecord(
            job_id=submit(str(script), env),
            allocation=allocation.name,
            nodes=allocation.nodes,
            cells=allocation.cell_ids,
            script=str(script),
            submitted_at=now(),
        )
        add_job(store, record)
        records.append(record)
    return records


def settle_job(
    store: ResultStore, job: JobRecord, state: JobState, planned: Mapping[str, PlannedCell]
) -> list[CellResult]:
    """After a job ended: a failed result for each of its cells that got none from it."""
    progress = read_progress(store.slurm_allocation_dir(job.allocation))
    written = []
    tail = file_tail(job_output_path(store.slurm_allocation_dir(job.allocation), job.job_id))
    ended = {"job_id": job.job_id, "state": state.state, "state_reason": state.reason}
    ended |= {"exit_code": state.exit_code}
    for cell_id in job.cells:
        if cell_id in progress.done or cell_id not in planned:
            continue
        if cell_id == progress.current:
            why = Finding(code="slurm.ended_during", figures=ended)
        else:  # with the driver's own word on why (e.g. the time-limit warning)
            stopped = progress.stopped.model_dump() if progress.stopped else None
            why = Finding(code="slurm.ended_before", figures={**ended, "stopped": stopped})
        error = CellError(why=why, log_tail=tail)
        result = unmeasured_result(planned[cell_id], Status.FAILED, error)
        store.write_cell(result)
        written.append(result)
    return written


def follow(
    store: ResultStore,
    plan: Plan,
    jobs: list[JobRecord],
    env: Mapping[str, str],
    hooks: FollowHooks,
    *,
    poll_s: float,
) -> list[tuple[str, str | None]]:
    """Until every job has ended: report state changes, running cells and finished cells,
    then settle each ended job. What stopped a job short of its cells: (by what, the cell it
    cut short or None), one per such job."""
    stops: list[tuple[str, str | None]] = []
    planned = {p.cell.id: p for p in plan.cells}
    active = {job.job_id: job for job in jobs}
    seen_state: dict[str, tuple[str, str]] = {}
    seen_running: dict[str, str | None] = {}
    reported: set[str] = set()
    preflights: set[tuple[str, str]] = set()
    while active:
        states = job_states(list(active), env)
        for job_id, job in list(active.items()):
            state = states[job_id]
            if seen_state.get(job_id) != (state.state, state.reason):
                seen_state[job_id] = (state.state, state.reason)
                hooks.on_job(job, state)
            progress = read_progress(store.slurm_allocation_dir(job.allocation))
            for step, verdict in progress.preflight.items():
                if (job_id, step) not in preflights:
                    preflights.add((job_id, step))
                    hooks.on_preflight(job, step, verdict)
            for cell_id in progress.done:
                if cell_id not in reported:
                    reported.add(cell_id)
                    result = store.read_cell(cell_id)
                    if result is not None:
                        hooks.on_done(result)
            if progress.current and seen_running.get(job_id) != progress.current:
                hooks.on_running(job, progress.current)
            seen_running[job_id] = progress.current
            if not state.active:
                settled = settle_job(store, job, state, planned)
                for result in settled:
                    reported.add(result.cell_id)
                    hooks.on_done(result)
                if settled or progress.stopped_during:  # a stop after its last cell cut nothing
                    by = progress.stopped_by or state.state
                    cut = progress.stopped_during or progress.current
                    stops.append((f"Slurm job {job_id} ({by})", cut if cut in planned else None))
                del active[job_id]
        if active:
            time.sleep(poll_s)
    return stops


def collect(store: ResultStore, plan: Plan) -> tuple[list[CellResult], pd.DataFrame | None]:
    """Every stored result of the plan's cells, in plan order, and summary.csv from them."""
    results = [r for r in (store.read_cell(p.cell.id) for p in plan.cells) if r is not None]
    return results, write_summary(store, results) if results else None


def cancel_sweep(store: ResultStore, env: Mapping[str, str]) -> list[JobRecord]:
    """scancel every job of the sweep still queued or running; the ones cancelled. A state
    file left 'running' by a follower that detached now says the sweep was stopped."""
    from torchscale.offline.results.documents import read_sweep_state

    active = _active_jobs(store, env)
    cancel([j.job_id for j in active], env)
    state = read_sweep_state(store.sweep_state_path).doc
    if active and state is not None and state.phase == "running":
        stopped_by = "torchscale benchmark --cancel (scancel)"
        store.write_sweep_state(
            state.model_copy(update={"phase": "stopped", "stopped_by": stopped_by})
        )
    return active
