"""One cell as an srun step in an allocation: srun on every node, torchrun on each, c10d
rendezvous at the first node's address (the launch as data, like launch/torchrun.py)."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from torchscale.orchestration.launch.torchrun import LaunchCommand
from torchscale.orchestration.plan.planned import PlannedCell
from torchscale.orchestration.schedulers.slurm.allocation import Allocation

NODE_MODULE = "torchscale.orchestration.schedulers.slurm.node"
HOSTENV_MODULE = "torchscale.orchestration.schedulers.slurm.hostenv"
HOSTS_DIR = "hosts"  # each node's environment, under the allocation's directory


@dataclass(frozen=True)
class StepPlace:
    """Where the steps of one allocation meet."""

    job_id: str
    head_address: str  # the first node's NodeAddr
    gpus_per_node: int | None
    cpus_per_task: int | None
    container: str | None
    python: str


def place_in(allocation: Allocation, job_id: str, head_address: str) -> StepPlace:
    """Where the steps of `allocation` meet, once its job runs as `job_id` (or, shown before
    it runs, placeholders for what only the job knows)."""
    return StepPlace(
        job_id=job_id,
        head_address=head_address,
        gpus_per_node=allocation.gpus_per_node,
        cpus_per_task=allocation.cpus_per_task,
        container=allocation.container,
        python=allocation.python,
    )


def free_port() -> int:
    """A port free on this host now (the driver runs on the allocation's first node, which
    hosts the c10d store)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("", 0))
        port: int = probe.getsockname()[1]
        return port


def srun_prefix(nodes: int, job_name: str) -> list[str]:
    """srun over every node of the allocation, one task each, the step killed whole when one
    task fails."""
    one_task_per_node = [f"--nodes={nodes}", f"--ntasks={nodes}", "--ntasks-per-node=1"]
    return ["srun", "--kill-on-bad-exit=1", *one_task_per_node, f"--job-name={job_name}"]


def cpus_flags(cpus_per_task: int | None) -> list[str]:
    """The step's CPU request: the config's count, repeated (since Slurm 22.05 srun does not
    inherit sbatch's --cpus-per-task), or none, so that the step uses every CPU its job has
    on each node (torchscale/orchestration/schedulers/slurm/cpus.py)."""
    return [] if cpus_per_task is None else [f"--cpus-per-task={cpus_per_task}"]


def hosts_command(allocation: Allocation) -> list[str]:
    """The step that records every node's environment before the cells, with the CPUs a
    cell's step gets."""
    srun = srun_prefix(allocation.nodes, "torchscale-hosts") + cpus_flags(allocation.cpus_per_task)
    return [*srun, allocation.python, "-m", HOSTENV_MODULE, str(allocation.directory / HOSTS_DIR)]


def rendezvous_flags(
    nodes: int, place: StepPlace, port: int | str, index: int | str
) -> tuple[str, ...]:
    """torchrun's multi-node rendezvous for step `index`: c10d at the first node's address,
    a port and rendezvous id of its own (torchscale.orchestration.schedulers.slurm.node adds which
    node hosts the store: the same argv runs on every node)."""
    return (
        f"--nnodes={nodes}",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint={place.head_address}:{port}",
        f"--rdzv-id={place.job_id}-{index}",
    )


def srun_wrap(inner: LaunchCommand, nodes: int, job_name: str, place: StepPlace) -> LaunchCommand:
    """`srun ... python -m torchscale.orchestration.schedulers.slurm.node -- <inner torchrun>`: one
    task per node, the step killed whole when one node's torchrun fails."""
    srun = srun_prefix(nodes, job_name)
    if place.gpus_per_node is not None:
        srun.append(f"--gpus-per-node={place.gpus_per_node}")
    srun.extend(cpus_flags(place.cpus_per_task))
    if place.container:
        srun.append(f"--container-image={place.container}")
    return replace(inner, argv=[*srun, place.python, "-m", NODE_MODULE, "--", *inner.argv])


def srun_command(
    planned: PlannedCell,
    spec_path: Path,
    log_dir: Path,
    base_env: Mapping[str, str],
    place: StepPlace,
    port: int | str,
    index: int,
) -> LaunchCommand:
    """One cell as an srun step of torchrun on every node of the allocation (`port`: a
    placeholder where the command is shown before the job runs, torchscale/orchestration/
    schedulers/slurm/review.py)."""
    nodes = planned.launch.nnodes
    flags = rendezvous_flags(nodes, place, port, index)
    inner = planned.command(spec_path, log_dir, base_env, python=place.python, rendezvous=flags)
    return srun_wrap(inner, nodes, planned.cell.id, place)
