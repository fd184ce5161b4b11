"""What a Slurm job will run, as command lines to review before submitting (`--dry-run`).

The job script execs a Python driver, which builds each cell's `srun ... torchrun ...` step as
the job runs. The commands are shown here by the same function (`step.srun_command`) on the same
allocation the driver reads, with what only the running job knows as placeholders: Slurm's job
id, the first node's address and a port free there (the rendezvous), and the values the driver
takes from the job's nodes (the GPUs and CPUs a step sees).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.launch.torchrun import LaunchCommand
from torchscale.orchestration.schedulers.slurm.allocation import Allocation
from torchscale.orchestration.schedulers.slurm.step import place_in, srun_command

JOB_ID = "<job-id>"
HEAD_ADDRESS = "<head-addr>"
PORT = "<port>"
PLACEHOLDERS = (
    f"{JOB_ID}, {HEAD_ADDRESS}, {PORT}: known once the job runs (Slurm's job id, the first "
    "node's address, a port free there)"
)


def step_commands(
    allocation: Allocation, store: ResultStore, env: Mapping[str, str]
) -> list[tuple[str, LaunchCommand]]:
    """(cell id, its srun step) for each cell of the allocation, in the order the job runs
    them, as the driver builds them (the experiment's compile cache included)."""
    place = place_in(allocation, JOB_ID, HEAD_ADDRESS)
    steps = []
    for index, entry in enumerate(allocation.cells):
        planned = entry.planned().sharing_compile_cache(store.compile_cache_dir)
        cell_id = planned.cell.id
        spec, logs = store.spec_path(cell_id), store.log_dir(cell_id)
        steps.append((cell_id, srun_command(planned, spec, logs, env, place, PORT, index)))
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
    """Each cell of the allocation, then its step's argv (shell-quoted) and environment."""
    lines = []
    for entry, (cell_id, command) in zip(
        allocation.cells, step_commands(allocation, store, env), strict=True
    ):
        lines.append(f"  {cell_id}")
        lines.append(f"    argv: {shlex.join(command.argv)}")
        lines.append(f"    env:  {shown_env(command, allocation, entry.extra_env)}")
    return lines
