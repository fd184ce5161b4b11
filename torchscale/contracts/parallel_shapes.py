"""Which parallel layouts a strategy gives at a world size: the matrix's strategy axis, expanded,
and the arithmetic that skips a layout before anything is launched. `ddp` and `fsdp` have one
layout; `tp`, `pp` and `hybrid` take their degrees from `training.parallel` (docs/strategies.md,
"What each strategy is"; a set `parallel.tp` keeps only the `tp` cells of that world size).
Pure arithmetic: whether a layout can train a model is judged on the model, on the rank side.
"""

from __future__ import annotations

from torchscale.contracts.catalog import Strategy
from torchscale.contracts.cell import ParallelShape
from torchscale.contracts.cell_settings import ParallelConfig
from torchscale.contracts.finding import Finding

MODEL_PARALLEL: tuple[Strategy, ...] = ("tp", "pp", "hybrid")
HYBRID_DEFAULT_DEGREE = 2
# the fewest samples a pipeline's micro-batch may hold: one sample per micro-batch (pp8 1f1b at
# batch 8) measures a pipeline no one trains, its every kernel one sequence or image wide and its
# BatchNorm statistics one sample's (docs/strategies.md, "Micro-batches")
MIN_MICROBATCH_SAMPLES = 2


def _dp(world: int, group: int) -> int:
    return max(1, world // group)


def _pipelines(parallel: ParallelConfig, degrees: list[int], world: int) -> list[ParallelShape]:
    return [
        ParallelShape(dp=_dp(world, pp), tp=1, pp=pp, microbatches=micro, schedule=schedule)
        for pp in degrees
        for schedule in parallel.schedule
        for micro in parallel.microbatches
    ]


def _tp_groups(parallel: ParallelConfig, degrees: list[int], world: int) -> list[ParallelShape]:
    sp = parallel.sequence_parallel
    return [ParallelShape(dp=_dp(world, tp), tp=tp, pp=1, sequence_parallel=sp) for tp in degrees]


def parallel_shapes(
    strategy: Strategy, parallel: ParallelConfig, world: int
) -> list[ParallelShape | None]:
    """The layouts of `strategy` at `world` ranks, in run order; [None] for ddp and fsdp."""
    if strategy == "tp":
        return list(_tp_groups(parallel, parallel.tp or [world], world))
    if strategy == "pp":
        return list(_pipelines(parallel, parallel.pp or [world], world))
    if strategy == "hybrid":
        shapes: list[ParallelShape | None] = []
        for layout in parallel.hybrid:
            if layout == "fsdp_tp":
                groups = _tp_groups(parallel, parallel.tp or [HYBRID_DEFAULT_DEGREE], world)
                shapes.extend(g.model_copy(update={"hybrid": "fsdp_tp"}) for g in groups)
            else:
                pipes = _pipelines(parallel, parallel.pp or [HYBRID_DEFAULT_DEGREE], world)
                shapes.extend(p.model_copy(update={"hybrid": "ddp_pp"}) for p in pipes)
        return shapes
    return [None]


def compile_problem(shape: ParallelShape, compile_: bool) -> Finding | None:
    """torch.compile is applied to the whole wrapped model; a pipeline's schedule calls its
    stage modules itself, so a compiled pipeline is not built (yet): a skip reason."""
    return Finding(code="plan.compiled_pipeline") if compile_ and shape.pp > 1 else None


def world_problem(strategy: Strategy, shape: ParallelShape, world: int) -> Finding | None:
    """The mesh does not fit the world size: a skip reason in the words of the config."""
    if strategy == "tp" and shape.tp != world:
        return Finding(code="plan.tp_not_world", figures={"tp": shape.tp, "world": world})
    if strategy == "pp" and shape.pp != world:
        return Finding(code="plan.pp_not_world", figures={"pp": shape.pp, "world": world})
    if world % (shape.tp * shape.pp):
        inner = {"tp": shape.tp} if shape.hybrid == "fsdp_tp" else {"pp": shape.pp}
        return Finding(code="plan.mesh_indivisible", figures={"world": world, **inner})
    return None


def node_problem(
    shape: ParallelShape, ranks_per_node: int, nodes: int, across_nodes: bool
) -> Finding | None:
    """A tensor-parallel group that would span nodes: a skip reason, unless the config asks
    for it (`parallel.tp_across_nodes`). TP does an all-reduce per block and direction on the
    critical path; over the inter-node link (tens of GB/s against hundreds inside a node) it
    measures the network, not the layout. The mesh puts tp innermost and torchrun gives each
    node contiguous global ranks, so the groups stay inside nodes exactly when tp divides the
    ranks of a node."""
    if nodes <= 1 or shape.tp <= 1 or across_nodes or ranks_per_node % shape.tp == 0:
        return None
    figures = {"tp": shape.tp, "nodes": nodes, "per_node": ranks_per_node}
    return Finding(code="plan.tp_spans_nodes", figures=figures)
