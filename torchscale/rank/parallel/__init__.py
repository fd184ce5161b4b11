"""Tensor, pipeline and hybrid (FSDP x TP, DDP x PP) parallelism from torch's own building blocks.

`ParallelLayout` says how the ranks divide, `infeasible` whether a model can run that way, and
`parallelize` turns a built model into what one rank trains (torchscale/rank/parallel/setup.py).
"""

from torchscale.rank.parallel.pipeline_step import PipelineRunner
from torchscale.rank.parallel.rank_layout import ParallelLayout, infeasible, layout_problem
from torchscale.rank.parallel.setup import Parallelized, parallelize

__all__ = [
    "ParallelLayout",
    "Parallelized",
    "PipelineRunner",
    "infeasible",
    "layout_problem",
    "parallelize",
]
