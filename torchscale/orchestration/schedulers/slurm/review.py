"""What a Slurm job will run, as command lines to review before submitting (`--dry-run`;
docs/multinode.md, "What a dry run prints").

The driver builds each step's `srun ...` as the job runs; the review builds them with the same
functions (`step.hosts_command`, `preflight.validate_command`, `preflight.comm_step`,
`step.srun_command`) on the same allocation the driver reads, so what is shown is what runs,
with what only the running job knows as placeholders.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.launch.torchrun import LaunchCommand
from torchscale.orchestration.schedulers.slurm.allocation import Allocation
from torchscale.orchestration.schedulers.slurm.preflight import (
    comm_run_id,
    comm_step,
    validate_command,
)
from torchscale.orchestration.schedulers.slurm.step import (
    StepPlace,
    hosts_command,
    place_in,
    srun_command,
)

JOB_ID = "<job-id>"
HEAD_ADDRESS = "<head-addr>"
PORT = "<port>"
STARTED = "<start-time>"
PLACEHOLDERS = (
    f"{JOB_ID}, {HEAD_ADDRESS}, {PORT}: known once the job runs (Slurm's job id, the first "
    "node's address, a port free there)"
)
COMM_PLACEHOLDER = f"{STARTED}: when the comm step starts (UTC, as its run id writes it)"
HOSTS = "hosts (each node's environment)"
VALIDATE = "preflight validate"
COMM = "preflight comm"


@dataclass(frozen=True)
class Step:
    """One srun step of a job: what the review calls it, its argv, and what torchscale sets on
    top of the job's environment (None: nothing, the step inherits it)."""

    label: str
    argv: list[str]
    command: LaunchCommand | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict)  # launcher.env, a cell's own


def step_commands(
    allocation: Allocation, store: ResultStore, env: Mapping[str, str]
) -> list[tuple[str, LaunchCommand]]:
    """(cell id, its srun step) for each cell of the allocation, in the order the job runs
    them, as the driver builds them (the experiment's compile cache included)."""
    place = shown_place(allocation)
    steps = []
    for index, entry in enumerate(allocation.cells):
        planned = entry.planned().sharing_compile_cache(store.compile_cache_dir)
        cell_id = planned.cell.id
        spec, logs = store.spec_path(cell_id), store.log_dir(cell_id)
        steps.append((cell_id, srun_command(planned, spec, logs, env, place, PORT, index)))
    return steps


def shown_place(allocation: Allocation) -> StepPlace:
    """Where the job's steps meet, as placeholders."""
    return place_in(allocation, JOB_ID, HEAD_ADDRESS)


def job_steps(allocation: Allocation, store: ResultStore, env: Mapping[str, str]) -> list[Step]:
    """Every srun step of the job, in the order the driver runs them."""
    steps = [Step(HOSTS, hosts_command(allocation))]
    validate = validate_command(allocation)
    if validate is not None:
        steps.append(Step(VALIDATE, validate))
    request = allocation.preflight_comm
    if request is not None:
        run_id = comm_run_id(request, allocation.nodes, JOB_ID, STARTED)
        root, place = Path(allocation.experiment_root), shown_place(allocation)
        comm = comm_step(request, allocation.nodes, root, env, place, PORT, run_id)
        steps.append(Step(COMM, comm.command.argv, comm.command))
    cells = zip(allocation.cells, step_commands(allocation, store, env), strict=True)
    steps += [Step(cell_id, cmd.argv, cmd, entry.extra_env) for entry, (cell_id, cmd) in cells]
    return steps


def shown_env(command: LaunchCommand, allocation: Allocation, extra_env: Mapping[str, str]) -> str:
    """What torchscale sets on top of the job's environment, with the values the driver takes
    from the job's nodes as placeholders."""
    env = dict(command.env_overrides)
    ranks = command.nproc
    if allocation.threads_from_cpus and "OMP_NUM_THREADS" not in extra_env:
        env["OMP_NUM_THREADS"] = f"<step CPUs / {ranks}>"
    if "CUDA_VISIBLE_DEVICES" in env and "CUDA_VISIBLE_DEVICES" not in extra_env:
        env["CUDA_VISIBLE_DEVICES"] = f"<the first {ranks} GPUs the job sees>"
    return " ".join(f"{key}={shlex.quote(value)}" for key, value in sorted(env.items()))


def step_lines(allocation: Allocation, store: ResultStore, env: Mapping[str, str]) -> list[str]:
    """Each step of the job (the nodes' environment, the preflight, each cell), then its argv
    (shell-quoted) and, where torchscale sets any, its environment."""
    lines = []
    for step in job_steps(allocation, store, env):
        lines += [f"  {step.label}", f"    argv: {shlex.join(step.argv)}"]
        if step.command is not None:
            lines.append(f"    env:  {shown_env(step.command, allocation, step.extra_env)}")
    return lines


def placeholders(allocations: list[Allocation]) -> list[str]:
    """What the placeholders of the shown steps stand for, a line each."""
    comm = any(allocation.preflight_comm is not None for allocation in allocations)
    return [PLACEHOLDERS, *([COMM_PLACEHOLDER] if comm else [])]
