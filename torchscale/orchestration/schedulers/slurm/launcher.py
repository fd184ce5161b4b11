"""`launcher.kind: slurm`: the plan's cells packed into Slurm allocations, each an sbatch job
whose driver runs its cells as srun steps; submitted, then followed until every job ends, and
the results collected as a local sweep's are (torchscale/orchestration/schedulers/slurm/)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from torchscale.contracts.errors import ResultsError, SlurmError
from torchscale.contracts.schema.sweep_state import SweepState
from torchscale.contracts.signals import Terminated
from torchscale.orchestration.schedulers.api import BenchmarkEvents, BenchmarkRun, Env, RunOptions
from torchscale.orchestration.schedulers.slurm import events as said
from torchscale.orchestration.schedulers.slurm.client import (
    ask_partition,
    missing_client_commands,
    require_sbatch,
)
from torchscale.orchestration.schedulers.slurm.submission import (
    FollowHooks,
    check_nodes,
    collect,
    follow,
    nodes_not_checked,
    prepare_sweep,
)
from torchscale.orchestration.schedulers.slurm.submission import submit_sweep as submit_allocations
from torchscale.orchestration.sweep import nothing_measured, planned_cells, stopped_by
from torchscale.orchestration.sweep_outcome import SweepOutcome

# a running sweep's state after its follower stopped: the report says why it cannot tell more
DETACHED = "its follower stopped ({why}); the Slurm jobs go on: torchscale benchmark --status"

if TYPE_CHECKING:
    from torchscale.offline.results.store import ResultStore
    from torchscale.orchestration.config.schema import BenchConfig
    from torchscale.orchestration.plan.nodes import Machine
    from torchscale.orchestration.plan.planned import Plan

# why `batch_sizes: auto` cannot size a batch here (the refusal names the launcher: the same
# config sizes its batches when run with kind: local on a GPU node)
NODES_NOT_READ = (
    "launcher.kind slurm: the cells run on the cluster's nodes, whose GPUs are not read from "
    "the submitting host"
)
LOCAL_ONLY = (
    "{what} runs with launcher.kind 'local' only for now; under Slurm it is not run "
    "(run it on one node with kind: local)"
)


class SlurmAllocations:
    def machine(self, config: BenchConfig) -> Machine:
        """The nodes as Slurm (or, where it cannot be asked, the config) describes them: the
        submitting host is not one of them (torchscale/orchestration/schedulers/slurm/gpus.py)."""
        from torchscale.contracts import host
        from torchscale.orchestration.plan.nodes import Machine
        from torchscale.orchestration.schedulers.slurm.gpus import judged_gpus

        cores = config.launcher.slurm.cpus_per_task or host.usable_cores()
        gpus = judged_gpus(config, lambda partition: ask_partition(partition, os.environ))
        return Machine(
            gpu_count=gpus.count,
            cpu_cores=cores,
            gpu_memory_unknown=NODES_NOT_READ,
            gpus_source=gpus.source,
            note=gpus.note,
            scheduler_answer=gpus.answer,  # check_nodes reads it: Slurm is asked once
        )

    def results_store(self, config: BenchConfig, output_dir: Path, dry_run: bool) -> ResultStore:
        from torchscale.offline.results.store import ResultStore

        if not dry_run:  # a dry run writes the scripts for review off the cluster too
            require_sbatch()  # before anything is written
        # the nodes get absolute paths
        return ResultStore(
            ResultStore.for_experiment(output_dir, config.experiment_name).root.resolve()
        )

    def dry_run(
        self, plan: Plan, store: ResultStore, env: Env, options: RunOptions, events: BenchmarkEvents
    ) -> BenchmarkRun:
        """The sbatch scripts written for review; nothing submitted. Where Slurm cannot be
        asked (no client here, or a client whose controller does not answer: a laptop, a
        container, a login node during an outage) the scripts are still written, and the
        warnings say why and, a line each, what was not checked."""
        from torchscale.offline.results.store import check_output_dir

        check_output_dir(store.root)
        unasked = _why_slurm_was_not_asked(plan, env)
        if unasked is not None:
            _warn([unasked, *nodes_not_checked(plan)], events)
        _warn(_sections_not_run(plan), events)  # as the run will say
        sweep = prepare_sweep(
            plan, store, env, resume=options.resume, write_skips=False, ask_slurm=unasked is None
        )
        _warn(sweep.warnings, events)
        submitted = said.submitted(sweep, [], store, dry_run=True, env=env, notes=plan.notes)
        events.on_launcher_event(submitted)
        return BenchmarkRun(
            plan, store, dry_run=True, reused=list(sweep.reused), submission=submitted.submission
        )

    def run(
        self, plan: Plan, store: ResultStore, env: Env, options: RunOptions, events: BenchmarkEvents
    ) -> BenchmarkRun:
        """Submit, follow, collect. Ctrl-C (or a signal) stops following, not the jobs: a
        'detached' event, then the interrupt goes on up."""
        from torchscale.offline.results.store import check_output_dir
        from torchscale.rank.worker.run_environment import capture_environment

        check_output_dir(store.root)
        check_nodes(plan, env)
        store.write_config(plan.config_yaml)
        store.write_environment(capture_environment())
        _warn(_sections_not_run(plan), events)
        sweep = prepare_sweep(plan, store, env, resume=options.resume, write_skips=True)
        _warn(sweep.warnings, events)
        jobs = submit_allocations(sweep, store, env)
        submitted = said.submitted(sweep, jobs, store, dry_run=False)
        events.on_launcher_event(submitted)
        tell = events.on_launcher_event
        hooks = FollowHooks(
            lambda job, state: tell(said.job_state(job, state)),
            lambda job, cell_id: tell(said.running(job, cell_id)),
            lambda result: events.on_cell_done(result, False),
            lambda job, step, verdict: tell(said.preflight(job, step, verdict)),
        )
        planned = planned_cells(plan)
        kept = len(sweep.reused) + len(sweep.skipped)  # their result files are written
        running = SweepState(phase="running", planned=planned, finished=kept)
        store.write_sweep_state(running)
        try:
            stops = follow(
                store, plan, sweep.following + jobs, env, hooks, poll_s=plan.launcher.slurm.poll_s
            )
        except BaseException as exc:
            # still running: the jobs go on without their follower (never mask the first error)
            with contextlib.suppress(ResultsError):
                detached = DETACHED.format(why=stopped_by(exc))
                store.write_sweep_state(running.model_copy(update={"stopped_by": detached}))
            if isinstance(exc, KeyboardInterrupt | Terminated):
                tell(said.detached(store.root))
            raise
        results, table = collect(store, plan)
        ended = SweepState(phase="complete", planned=planned, finished=len(results))
        if stops:  # the job that cut a cell short names the stop; the others are counted
            stops.sort(key=lambda stop: stop[1] is None)
            (by, during), more = stops[0], len(stops) - 1
            by += f" and {more} other job(s)" if more else ""
            ended = ended.model_copy(
                update={"phase": "stopped", "stopped_by": by, "during": during}
            )
        store.write_sweep_state(ended)
        outcome = SweepOutcome(results, table)
        measured = nothing_measured(results, len(plan.cells))
        run = BenchmarkRun(plan, store, outcome, measured, submission=submitted.submission)
        events.on_sweep_done(run)
        return run


def _why_slurm_was_not_asked(plan: Plan, env: Env) -> str | None:
    """None when Slurm answered the dry run's checks (the partition's node limits, as a real
    run checks them first); else why it could not be asked. A partition Slurm says it lacks is
    an answer, and stays an error. Where the plan asked Slurm already (CUDA cells), its answer
    or error is read, not asked again."""
    missing = missing_client_commands()
    if missing:
        return (
            f"Slurm's client commands are not on PATH here (missing: {', '.join(missing)}): "
            "the sbatch scripts are written for review; a real run needs a login node of the "
            "cluster"
        )
    try:
        check_nodes(plan, env)
    except SlurmError as exc:
        return (
            f"Slurm's controller could not be asked from here ({exc}): the sbatch scripts are "
            "written for review; a real run asks it first and stops on this error"
        )
    return None


def _sections_not_run(plan: Plan) -> list[str]:
    """The config's suites a Slurm sweep does not run (yet)."""
    sections = [
        (
            "the comm: section (launcher.slurm.preflight.comm runs it across each allocation's "
            "nodes)",
            plan.comm.enabled and not plan.launcher.slurm.preflight.comm,
        ),
        ("memory.max_batch_search", plan.memory.max_batch_search),
        ("profiling", plan.profiling.enabled),
    ]
    return [LOCAL_ONLY.format(what=what) for what, on in sections if on]


def _warn(warnings: list[str], events: BenchmarkEvents) -> None:
    for warning in warnings:
        events.on_warning(warning)
