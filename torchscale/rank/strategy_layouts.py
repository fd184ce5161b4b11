"""Which parallel layouts a strategy gives at a world size: the matrix's strategy axis, expanded.

`ddp` and `fsdp` have one layout (none to describe). The model-parallel strategies take their
degrees from `training.parallel`, each list joining the matrix only for the strategies it
shapes (docs/strategies.md):

- `tp`: one tensor-parallel group over the whole world (tp = world; a set `parallel.tp` only
  keeps the cells of that world size);
- `pp`: one pipeline over the whole world, one stage per rank, for every schedule and
  micro-batch count;
- `hybrid`: `fsdp_tp` (FSDP across TP groups of `tp` ranks) and/or `ddp_pp` (DDP across
  pipelines of `pp` stages); the data-parallel degree is what the world size leaves.

The expansion is pure arithmetic. Whether a layout can train a model (heads and widths
divisible by tp, enough blocks for the stages, micro-batches dividing the batch) is judged by
torchscale/rank/parallel/rank_layout.py on the model built on the meta device (`model_problem`): no
memory, no process, before anything is launched.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from torchscale.contracts.catalog import Precision, Strategy
from torchscale.contracts.cell import ParallelShape
from torchscale.contracts.cell_settings import ModelSpec, ParallelConfig

if TYPE_CHECKING:
    from torchscale.rank.models.bundle import ModelBundle
    from torchscale.rank.parallel.rank_layout import ParallelLayout

MODEL_PARALLEL: tuple[Strategy, ...] = ("tp", "pp", "hybrid")
HYBRID_DEFAULT_DEGREE = 2


def _dp(world: int, group: int) -> int:
    return max(1, world // group)


def _pipelines(parallel: ParallelConfig, degrees: list[int], world: int) -> list[ParallelShape]:
    return [
        ParallelShape(
            dp=_dp(world, pp),
            tp=1,
            pp=pp,
            microbatches=micro,
            schedule=schedule,
        )
        for pp in degrees
        for schedule in parallel.schedule
        for micro in parallel.microbatches
    ]


def parallel_shapes(
    strategy: Strategy, parallel: ParallelConfig, world: int
) -> list[ParallelShape | None]:
    """The layouts of `strategy` at `world` ranks, in run order; [None] for ddp and fsdp."""
    if strategy == "tp":
        return [
            ParallelShape(
                dp=_dp(world, tp), tp=tp, pp=1, sequence_parallel=parallel.sequence_parallel
            )
            for tp in (parallel.tp or [world])
        ]
    if strategy == "pp":
        return list(_pipelines(parallel, parallel.pp or [world], world))
    if strategy == "hybrid":
        shapes: list[ParallelShape | None] = []
        for layout in parallel.hybrid:
            if layout == "fsdp_tp":
                shapes.extend(
                    ParallelShape(
                        dp=_dp(world, tp),
                        tp=tp,
                        pp=1,
                        sequence_parallel=parallel.sequence_parallel,
                        hybrid="fsdp_tp",
                    )
                    for tp in (parallel.tp or [HYBRID_DEFAULT_DEGREE])
                )
            else:
                pipes = _pipelines(parallel, parallel.pp or [HYBRID_DEFAULT_DEGREE], world)
                shapes.extend(p.model_copy(update={"hybrid": "ddp_pp"}) for p in pipes)
        return shapes
    return [None]


def compile_problem(shape: ParallelShape, compile_: bool) -> str | None:
    """torch.compile is applied to the whole wrapped model; a pipeline's schedule calls its
    stage modules itself, so a compiled pipeline is not built (yet): a skip reason."""
    if compile_ and shape.pp > 1:
        return (
            "training.compile with pipelining is not supported: the schedule calls each stage "
            "module itself (run the pp cells without compile)"
        )
    return None


def world_problem(strategy: Strategy, shape: ParallelShape, world: int) -> str | None:
    """The mesh does not fit the world size: a skip reason in the words of the config."""
    group = shape.tp * shape.pp
    if strategy == "tp" and shape.tp != world:
        return (
            f"strategy tp runs one tensor-parallel group over the whole world: parallel.tp "
            f"{shape.tp} != world size {world} (hybrid fsdp_tp adds data parallelism across "
            "TP groups)"
        )
    if strategy == "pp" and shape.pp != world:
        return (
            f"strategy pp runs one pipeline over the whole world: parallel.pp {shape.pp} != "
            f"world size {world} (hybrid ddp_pp adds data parallelism across pipelines)"
        )
    if world % group:
        inner = f"tp {shape.tp}" if shape.hybrid == "fsdp_tp" else f"pp {shape.pp}"
        return f"world size {world} is not divisible by the mesh ({inner})"
    return None


def node_problem(
    shape: ParallelShape, ranks_per_node: int, nodes: int, across_nodes: bool
) -> str | None:
    """A tensor-parallel group that would span nodes: a skip reason, unless the config asks
    for it (`parallel.tp_across_nodes`). TP does an all-reduce per block and direction on the
    critical path; over the inter-node link (tens of GB/s against hundreds inside a node) it
    measures the network, not the layout. The mesh puts tp innermost and torchrun gives each
    node contiguous global ranks, so the groups stay inside nodes exactly when tp divides the
    ranks of a node."""
    if nodes <= 1 or shape.tp <= 1 or across_nodes or ranks_per_node % shape.tp == 0:
        return None
    keep = (
        f"hybrid fsdp_tp with parallel.tp {ranks_per_node} keeps TP inside each node"
        if ranks_per_node > 1
        else "give each node several ranks and use hybrid fsdp_tp"
    )
    return (
        f"tensor-parallel groups of {shape.tp} ranks would span nodes ({nodes} nodes x "
        f"{ranks_per_node} ranks): {keep}, or set training.parallel.tp_across_nodes: true"
    )


def layout_of(strategy: Strategy, shape: ParallelShape, world: int) -> ParallelLayout:
    """The worker's ParallelLayout of a cell's shape (torchscale/rank/parallel/rank_layout.py)."""
    from torchscale.rank.parallel.rank_layout import ParallelLayout

    assert strategy in MODEL_PARALLEL
    return ParallelLayout(
        strategy=strategy,  # type: ignore[arg-type]
        world=world,
        tp=shape.tp,
        pp=shape.pp,
        dp=shape.dp,
        microbatches=shape.microbatches,
        schedule=shape.schedule,
        sequence_parallel=shape.sequence_parallel,
        hybrid=shape.hybrid,
    )


@functools.lru_cache(maxsize=64)
def _meta_bundle(
    name: str, options: tuple[tuple[str, Any], ...], seq_len: int | None, image_size: int | None
) -> ModelBundle | str:
    """The model built on the meta device (no memory), or why it could not be."""
    import torch

    from torchscale.rank.models import build_model

    try:
        with torch.device("meta"):
            return build_model(name, dict(options), seq_len=seq_len, image_size=image_size)
    except Exception as exc:  # a plug-in may not build on meta: the worker then decides
        return f"{type(exc).__name__}: {exc}"


def model_problem(
    strategy: Strategy,
    shape: ParallelShape,
    world: int,
    model: ModelSpec,
    batch_size: int,
    precision: Precision,
    grad_accum_steps: int,
    seq_len: int | None,
    image_size: int | None,
) -> str | None:
    """Why this layout cannot train this model (a skip reason), or None. A model that does
    not build on the meta device is left to the worker, which fails with one line."""
    from torchscale.rank.parallel.rank_layout import infeasible, layout_problem

    layout = layout_of(strategy, shape, world)
    problem = layout_problem(layout)
    if problem is not None:
        return problem
    bundle = _meta_bundle(model.name, tuple(sorted(model.options.items())), seq_len, image_size)
    if isinstance(bundle, str):
        return None
    return infeasible(
        bundle.model,
        layout,
        batch_size,
        seq_len=bundle.tokens_per_sample,
        precision="fp16" if precision == "amp" else precision,
        grad_accum_steps=grad_accum_steps,
        plugin_tp_plan=bundle.tp_plan,
        plugin_pp_split=bundle.pp_split,
    )


def supported_strategies(model: ModelSpec) -> list[str]:
    """The strategies `torchscale list` shows for a model: ddp and fsdp always; tp when its
    layers have a tensor-parallel plan for 2 ranks, pp when it splits into 2 stages, hybrid
    when either does (the degrees a sweep asks for are checked per cell)."""
    from torchscale.rank.models.parallel_plan import plan_of

    supported = ["ddp", "fsdp"]
    bundle = _meta_bundle(model.name, tuple(sorted(model.options.items())), None, None)
    plan = None if isinstance(bundle, str) else plan_of(bundle.model)
    if plan is None:
        return supported
    tp = plan.tp_problem(2) is None
    pp = plan.pipeline_depth() >= 2
    supported += [name for name, ok in (("tp", tp), ("pp", pp), ("hybrid", tp or pp)) if ok]
    return supported
