"""Why the plan skips a cell (a code, recorded as 'skipped', never launched) or what its result
will warn of: the nodes' GPUs and cores, the data source, the model-parallel layout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchscale.contracts.cell import Backend, CellIdentity, Device, ParallelShape
from torchscale.contracts.cell_settings import ModelSpec, TrainingConfig
from torchscale.contracts.finding import Finding
from torchscale.contracts.model_tasks import unsupported
from torchscale.contracts.parallel_shapes import compile_problem, node_problem, world_problem
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.contracts.shared_gpu import GLOO_CUDA_P2P, NCCL_SHARED_GPU, SHARED_GPU, gpus_for
from torchscale.orchestration.plan.nodes import Machine, Shape
from torchscale.rank.strategy_layouts import model_problem

if TYPE_CHECKING:  # the config's pydantic schema: only its values are read here
    from torchscale.orchestration.config.schema import BenchConfig

# why the plan skips a cell: its nodes' GPUs (worded in contracts/wording/plan.py)
NEEDS_GPUS = "plan.needs_gpus"
NO_GPU = "plan.no_gpu"
NCCL_WITHOUT_CUDA = "plan.nccl_without_cuda"


def gloo_cuda_problem(device: Device, backend: Backend, parallel: ParallelShape) -> Finding | None:
    """A pipeline on gloo over CUDA tensors: gloo's send and recv hand its transport the
    tensor's own pointer with no copy through host memory (its collectives copy), so a stage
    would send device memory as if it were the host's (docs/first-gpu-run.md)."""
    if device == "cuda" and backend == "gloo" and parallel.pp > 1:
        return Finding(code=GLOO_CUDA_P2P, figures={"pp": parallel.pp})
    return None


def feasibility(
    config: BenchConfig,
    machine: Machine,
    cell: CellIdentity,
    shape: Shape,
    model: ModelSpec,
    training: TrainingConfig,
) -> tuple[Finding | None, tuple[CellWarning, ...]]:
    """(why the cell is skipped, warnings) of the cell, the first problem found: the nodes, then
    the data source, then the model-parallel layout; a skipped cell is recorded, never launched."""
    skip, warnings = skip_or_warn(cell, shape, machine)
    if skip is None:  # a model the data source cannot feed (e.g. CIFAR-100 for a language model)
        skip = unsupported(config.data.source, model.name)
    parallel = cell.parallel
    if skip is None and parallel is not None:  # stages hand activations on by send/recv
        skip = gloo_cuda_problem(cell.device, cell.backend, parallel)
    if skip is None and parallel is not None:  # the mesh or model cannot run this layout
        skip = (
            world_problem(cell.strategy, parallel, cell.world_size)
            or node_problem(
                parallel,
                shape.nproc_per_node,
                shape.nodes,
                config.training.parallel.tp_across_nodes,
            )
            or compile_problem(parallel, bool(training.compile))
            or model_problem(
                cell.strategy,
                parallel,
                cell.world_size,
                model,
                cell.batch_size,
                cell.precision,
                config.training.grad_accum_steps,
                config.data.seq_len,
                config.data.image_size,
            )
        )
    return skip, warnings


def skip_or_warn(
    cell: CellIdentity, shape: Shape, machine: Machine
) -> tuple[Finding | None, tuple[CellWarning, ...]]:
    """(why the cell is skipped, warnings) of a cell on nodes like `machine`."""
    if shape.problem is not None:
        return shape.problem, ()
    if cell.device == "cuda":
        # counted here unless a source says where (a partition, a config)
        gpus = {"have": machine.gpu_count, "source": machine.gpus_source}
        if machine.gpu_count == 0:
            return Finding(code=NO_GPU, figures=gpus), ()
        needed = gpus_for(shape.nproc_per_node, cell.ranks_per_gpu)
        if needed > machine.gpu_count:
            figures = {**gpus, "gpus": needed, "nodes": shape.nodes}
            return Finding(code=NEEDS_GPUS, figures=figures), ()
        if not cell.shares_gpu:
            return None, ()
        if cell.backend == "nccl":
            return Finding(code=NCCL_SHARED_GPU, figures={"ranks": cell.ranks_per_gpu}), ()
        figures = {"ranks": cell.ranks_per_gpu, "gpus": needed, "backend": cell.backend}
        return None, (CellWarning.of("other", SHARED_GPU, figures),)
    if cell.backend == "nccl":
        return Finding(code=NCCL_WITHOUT_CUDA), ()
    warnings: list[CellWarning] = []
    if cell.precision == "amp":
        warnings.append(CellWarning.of("other", "warning.cpu_amp", {}))
    if shape.nproc_per_node > machine.cpu_cores:
        figures = {"ranks": shape.nproc_per_node, "cores": machine.cpu_cores}
        warnings.append(CellWarning.of("contention", "warning.cpu_oversubscribed", figures))
    return None, tuple(warnings)
