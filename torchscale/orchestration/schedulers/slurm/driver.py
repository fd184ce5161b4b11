"""Runs inside a Slurm allocation (the sbatch script execs it): its cells one after another,
each an srun step of torchrun on all the allocation's nodes, each result written as a local
sweep writes it. A stop signal fails the running cell with why; finished cells are already safe
(docs/multinode.md, "Jobs that end early").

    python -m torchscale.orchestration.schedulers.slurm.driver \
        --allocation <experiment>/slurm/<name>/allocation.json
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path

from torchscale.contracts.cell import Status
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellError
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.contracts.signals import Terminated, signal_name, terminate_on_signals
from torchscale.contracts.wording import say
from torchscale.contracts.wording.spell import error_pct, ms_or_s, ms_short
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.forecast_scoring import ForecastCheck, ForecastScorer
from torchscale.orchestration.launch.process import run_logged
from torchscale.orchestration.plan.nodes import threads_per_rank
from torchscale.orchestration.plan.planned import PlannedCell
from torchscale.orchestration.schedulers.slurm.allocation import Allocation, AllocationCell
from torchscale.orchestration.schedulers.slurm.client import hostnames, node_address
from torchscale.orchestration.schedulers.slurm.cpus import step_cpus, too_few_cpus
from torchscale.orchestration.schedulers.slurm.preflight import run_preflight
from torchscale.orchestration.schedulers.slurm.progress import Progress, write_progress
from torchscale.orchestration.schedulers.slurm.step import (
    HOSTS_DIR,
    free_port,
    hosts_command,
    place_in,
    srun_command,
)
from torchscale.orchestration.sweep import run_cell, unmeasured_result

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1)
HOSTENV_TIMEOUT_S = 300.0


def stop_reason(signum: int, grace_s: int | None = None) -> Finding:
    """Why the running cell ended (contracts/wording/cell_errors.py)."""
    if signum == signal.SIGUSR1:
        return Finding(code="slurm.time_limit_warning", figures={"grace_s": grace_s})
    return Finding(code="slurm.stopped", figures={"signal": signal_name(signum)})


def record_hosts(allocation: Allocation, env: Mapping[str, str]) -> None:
    """Every node's environment, once, before the cells (a failure here is only a note in
    the driver's output: the cells record rank 0's environment anyway)."""
    directory = allocation.directory / HOSTS_DIR
    outcome = run_logged(hosts_command(allocation), env, directory / "srun.log", HOSTENV_TIMEOUT_S)
    if outcome.returncode != 0:
        print(f"torchscale: recording the nodes' environment failed: {outcome.log_tail(5)}")


def cells_cpus(allocation: Allocation, env: Mapping[str, str]) -> int:
    """CPUs each step has on the first node: the driver's own, as the batch step holds every
    CPU the job has there and a step without --cpus-per-task takes them all; the config's
    count when srun asks it."""
    cpus = step_cpus(env)
    return min(cpus, allocation.cpus_per_task or cpus)


def cell_as_run(allocation: Allocation, entry: AllocationCell, cpus: int) -> PlannedCell:
    """The cell with OMP_NUM_THREADS from the CPUs its step has, when the config fixed no
    count (the plan could only count the submitting host's cores), and a warning when its
    ranks outnumber those CPUs. One count for every node: the job asks the same on each."""
    ranks = entry.nproc_per_node
    threads = threads_per_rank(cpus, ranks) if allocation.threads_from_cpus else None
    warning = too_few_cpus(cpus, ranks, "the first node")
    return entry.planned(threads, (CellWarning(kind="other", finding=warning),) if warning else ())


def comm_as_run(allocation: Allocation, cpus: int) -> Allocation:
    """The comm preflight's threads, sized as a cell's are."""
    request = allocation.preflight_comm
    if request is None or not allocation.threads_from_cpus:
        return allocation
    threads = threads_per_rank(cpus, request.ranks // allocation.nodes)
    sized = replace(request, omp_num_threads=threads)
    return allocation.model_copy(update={"preflight_comm": sized})


def forecast_lines(check: ForecastCheck) -> list[str]:
    """The job log's lines for what measuring a cell did to the experiment's forecasts, the
    figures of the local sweep's line (predicted with its interval, measured, error, held)."""
    lines = []
    for scored in check.scored:
        step, score = scored.forecast.step_s, scored.score
        interval = (
            f" [{ms_short(step.low)}, {ms_short(step.high)}]"
            if step.low is not None and step.high is not None
            else " (no interval)"
        )
        lines.append(
            f"torchscale: forecast {scored.forecast.id} of {check.cell_id}: "
            f"{ms_or_s(score.forecast_step_s)}{interval} predicted, measured "
            f"{ms_or_s(score.measured_step_s)}: {'inside' if score.inside else 'outside'}, "
            f"error {error_pct(score.error, signed=True)}"
        )
    return lines + [f"torchscale: {problem}" for problem in check.problems]


def run_allocation(allocation: Allocation, env: Mapping[str, str], grace_s: int | None) -> int:
    """Run every cell of the allocation; 0, or 128 + the signal that stopped it."""
    store = ResultStore(Path(allocation.experiment_root))
    scorer = ForecastScorer(store.root)
    job_id = env.get("SLURM_JOB_ID", "0")
    nodes = hostnames(env.get("SLURM_JOB_NODELIST", ""), env) if "SLURM_JOB_NODELIST" in env else []
    head = node_address(nodes[0], env) if nodes else "127.0.0.1"
    progress = Progress(job_id=job_id, nodes=nodes, head_address=head)
    write_progress(allocation.directory, progress)
    place = place_in(allocation, job_id, head)
    current: PlannedCell | None = None
    cpus = cells_cpus(allocation, env)
    print(f"torchscale: each step has {cpus} CPU(s) on the first node", flush=True)
    try:
        with terminate_on_signals(STOP_SIGNALS):
            record_hosts(allocation, env)
            run_preflight(comm_as_run(allocation, cpus), env, place, progress)
            for step, verdict in progress.preflight.items():
                print(f"torchscale: preflight {step}: {verdict}", flush=True)
            for index, entry in enumerate(allocation.cells):
                current = cell_as_run(allocation, entry, cpus)
                progress.current = current.cell.id
                write_progress(allocation.directory, progress)
                port = free_port()
                command_for = partial(srun_command, place=place, port=port, index=index)
                notes = {
                    "slurm_job_id": job_id,
                    "slurm_nodes": nodes,
                    "rendezvous": f"{head}:{port}",
                }
                result = run_cell(
                    current, store, env, allocation.price_per_gpu_hour, command_for, notes
                )
                progress.done.append(current.cell.id)
                progress.current = None
                current = None  # measured and written: a stop from here on cannot cost it
                write_progress(allocation.directory, progress)
                check = scorer.check(result)  # forecasts of this cell made before it
                for line in forecast_lines(check) if check is not None else []:
                    print(line, flush=True)
    except Terminated as stop:
        reason = stop_reason(stop.signum, grace_s)
        progress.stopped_by = stop.name
        if current is not None:
            progress.stopped_during = current.cell.id
            error = CellError(why=reason, exit_signal=stop.name)
            store.write_cell(
                unmeasured_result(current, Status.FAILED, error, current.cell_warnings)
            )
            progress.done.append(current.cell.id)  # done: it has this allocation's result
        progress.current = None
        progress.stopped = reason
        write_progress(allocation.directory, progress)
        print(f"torchscale: {say(reason)}", flush=True)
        return stop.exit_code
    progress.finished = True
    write_progress(allocation.directory, progress)
    return 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="torchscale: run one Slurm allocation's cells")
    parser.add_argument("--allocation", required=True, type=Path)
    parser.add_argument("--grace-s", type=int, default=None)
    args = parser.parse_args(argv)
    allocation = Allocation.model_validate_json(args.allocation.read_text(encoding="utf-8"))
    sys.exit(run_allocation(allocation, os.environ, args.grace_s))


if __name__ == "__main__":
    main()
