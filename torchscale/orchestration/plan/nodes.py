"""The machine a plan is made for, and what each cell gets of it: its shape on the nodes (world
size = ranks per node x nodes), its device, backend, ranks per GPU and threads per rank, with
`auto` resolved against the machine; every command that picks a device or a backend asks here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchscale.contracts.cell import Backend, Device
from torchscale.contracts.finding import Finding

if TYPE_CHECKING:  # the config's pydantic schema: only its values are read here
    from torchscale.orchestration.config.schema import Backend as RequestedBackend
    from torchscale.orchestration.config.schema import BenchConfig
    from torchscale.orchestration.config.schema import Device as RequestedDevice


@dataclass(frozen=True)
class Machine:
    """What the plan needs to know about the node it will run on."""

    gpu_count: int  # CUDA GPUs usable by torch on this node
    cpu_cores: int  # cores usable by this process
    gpu_memory_bytes: int | None = None  # the smallest GPU's memory (batch_sizes: auto)
    gpu_memory_unknown: str = "the cells run on other nodes, whose GPUs are not read from here"
    # where gpu_count comes from when not from this node (a Slurm partition's Gres, the config
    # where no controller answered), named in every skip reason that cites the count
    gpus_source: str | None = None
    note: str | None = None  # how the nodes' GPUs were known, a line among the plan's notes
    # what the launcher's scheduler said while describing the nodes (opaque to the plan),
    # handed back to the launcher with the plan so that the scheduler is asked once
    scheduler_answer: object = None


@dataclass(frozen=True)
class Shape:
    """How many ranks a cell has and how they sit on nodes."""

    world_size: int
    nodes: int
    nproc_per_node: int
    problem: Finding | None = None  # set: the shape cannot be launched (a skip reason)


def node_gpus(config: BenchConfig) -> int | None:
    """GPUs per node as the launcher's config states them (Slurm, k8s); None: unstated."""
    if config.launcher.kind == "slurm":
        return config.launcher.slurm.gpus_per_node
    if config.launcher.kind == "k8s":
        return config.launcher.k8s.gpus_per_node
    return None


# why the plan skips a cell: a world size that does not fill whole nodes (worded in
# contracts/wording/plan.py, with the other skips of skips.py)
PARTIAL_NODES = "plan.partial_nodes"


def cell_shapes(config: BenchConfig) -> list[Shape]:
    """The world sizes of the sweep, in run order.

    With `launcher.nodes`, gpu_counts are ranks per node and every node count multiplies them
    (world size = per node x nodes). Without it, gpu_counts are total ranks (the published
    meaning): one node, or, where the launcher states GPUs per node, as many full nodes as
    that takes.
    """
    if config.launcher.nodes:
        return [
            Shape(per_node * nodes, nodes, per_node)
            for per_node in sorted(config.gpu_counts)
            for nodes in config.launcher.node_counts
        ]
    per_node_limit = node_gpus(config)
    shapes = []
    for world in sorted(config.gpu_counts):
        if per_node_limit is None or world <= per_node_limit:
            shapes.append(Shape(world, 1, world))
        elif world % per_node_limit:
            figures = {"world": world, "per_node": per_node_limit}
            problem = Finding(code=PARTIAL_NODES, figures=figures)
            shapes.append(Shape(world, -(-world // per_node_limit), per_node_limit, problem))
        else:
            shapes.append(Shape(world, world // per_node_limit, per_node_limit))
    return sorted(shapes, key=lambda shape: (shape.world_size, shape.nodes))


def device_for(requested: RequestedDevice, machine: Machine) -> Device:
    """`auto` means CUDA GPUs when the node has any, else CPU processes (every command that
    picks a device asks here: benchmark cells, profile, comm)."""
    if requested == "auto":
        return "cuda" if machine.gpu_count > 0 else "cpu"
    return requested


def backend_for(requested: RequestedBackend, device: Device, ranks_per_gpu: int = 1) -> Backend:
    """`auto` means NCCL on CUDA, gloo on CPU and where ranks share a GPU (NCCL refuses two
    ranks on one device) (benchmark cells and comm ask here)."""
    if requested == "auto":
        return "nccl" if device == "cuda" and ranks_per_gpu == 1 else "gloo"
    return requested


def shared_ranks(config: BenchConfig, machine: Machine, device: Device, shape: Shape) -> int:
    """How many of a CUDA cell's ranks share each GPU: 1 (a GPU per rank) unless the node has
    fewer GPUs than the cell has ranks on it and `launcher.ranks_per_gpu` allows sharing;
    then the ranks spread evenly over the node's GPUs. Above the setting, the cell stays at
    one a GPU and is skipped for want of GPUs."""
    have, ranks = machine.gpu_count, shape.nproc_per_node
    if device != "cuda" or have <= 0 or ranks <= have or config.launcher.ranks_per_gpu <= 1:
        return 1
    per_gpu = -(-ranks // have)
    return per_gpu if per_gpu <= config.launcher.ranks_per_gpu else 1


def resolve_omp_threads(config: BenchConfig, machine: Machine) -> int:
    """OMP_NUM_THREADS for every rank of every cell of the sweep.

    An explicit `launcher.env.OMP_NUM_THREADS` or `launcher.omp_num_threads` wins. Otherwise
    the cores divided by the largest world size: every rank gets the same threads whatever the
    cell's world size (as every rank gets one GPU), so scaling efficiency compares equal ranks
    and a lone rank is not handed threads it would lose to contention on a busy machine.
    """
    from_env = config.launcher.env.get("OMP_NUM_THREADS", "")
    if from_env.isdigit() and int(from_env) > 0:
        return int(from_env)
    if config.launcher.omp_num_threads is not None:
        return config.launcher.omp_num_threads
    ranks_per_node = max(shape.nproc_per_node for shape in cell_shapes(config))
    return threads_per_rank(machine.cpu_cores, ranks_per_node)


def threads_per_rank(cpus: int, ranks: int) -> int:
    """A node's CPUs shared out among its ranks, at least one thread each: benchmark cells and
    comm ask here with the planning host's cores, a Slurm step with the CPUs it was given."""
    return max(1, cpus // max(1, ranks))


def device_set(config: BenchConfig, machine: Machine) -> tuple[BenchConfig, str | None]:
    """The config this machine's sweep runs (`on_cuda`'s keys replace the config's on CUDA)
    and the line saying which set applied and why; None where the config has no `on_cuda`."""
    device = device_for(config.device, machine)
    effective, replaced = config.for_device(device)
    if config.on_cuda is None:
        return effective, None
    found = f"{machine.gpu_count} CUDA GPU(s) per node" if machine.gpu_count else "no CUDA GPU"
    why = f"device {config.device}" + (f": {found}" if config.device == "auto" else "")
    if replaced is None:
        return effective, f"on {device.upper()} ({why}): the config's own keys; on_cuda not read"
    return effective, f"on CUDA ({why}): {replaced}"
