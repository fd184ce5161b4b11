"""Whether a parallel layout can train a model, judged on the model built on the meta device
(torchscale/rank/parallel/rank_layout.py): no memory, no process, before anything is launched;
and the worker's ParallelLayout of a cell's shape. The layouts a strategy gives, and the
arithmetic that skips one, are contracts/parallel_shapes.py.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from torchscale.contracts.catalog import Precision, Strategy
from torchscale.contracts.cell import ParallelShape
from torchscale.contracts.cell_settings import ModelSpec
from torchscale.contracts.finding import Finding
from torchscale.contracts.parallel_shapes import MODEL_PARALLEL

if TYPE_CHECKING:
    from torchscale.rank.models.bundle import ModelBundle
    from torchscale.rank.parallel.rank_layout import ParallelLayout


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
) -> Finding | None:
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
