"""How many CPUs a Slurm step's ranks get, asked for and checked (docs/multinode.md, "CPUs": why
the job always asks a share, what it asks and what its steps then use). AUTO_CPUS_PER_GPU fits
nearly every GPU server (10 or more CPUs per GPU); CPU cells get one per rank, as a small CPU
node must still take the job. No heavy imports: node.py, which runs once per node per cell,
reads it too.
"""

from __future__ import annotations

from collections.abc import Mapping

from torchscale.contracts.finding import Finding
from torchscale.contracts.host import usable_cores

AUTO_CPUS_PER_GPU = 8


def cpus_per_node(
    cpus_per_task: int | None, exclusive: bool, gpus_per_node: int | None, ranks_per_node: int
) -> int | None:
    """What the job asks per node (its one task), None when the nodes come whole."""
    if cpus_per_task is not None:
        return cpus_per_task
    if exclusive:
        return None
    if gpus_per_node is not None:
        return max(ranks_per_node, gpus_per_node * AUTO_CPUS_PER_GPU)
    return ranks_per_node


def step_cpus(env: Mapping[str, str]) -> int:
    """CPUs this step may use on this node: its cpuset, and no more than Slurm allocated it
    (SLURM_CPUS_ON_NODE): without task/cgroup or task/affinity the cpuset is the whole node,
    and threads beyond the allocation would take other jobs' CPUs. The cpuset is the step's under
    task/cgroup or task/affinity."""
    cpus = usable_cores()
    slurm = env.get("SLURM_CPUS_ON_NODE", "")
    return min(cpus, int(slurm)) if slurm.isdigit() and int(slurm) > 0 else cpus


def too_few_cpus(cpus: int, ranks: int, where: str) -> Finding | None:
    """The warning when a step has fewer CPUs than ranks on a node, else None."""
    if cpus >= ranks:
        return None
    figures = {"cpus": cpus, "ranks": ranks, "where": where}
    return Finding(code="warning.slurm_few_cpus", figures=figures)
