"""Which ranks do what under tensor, pipeline and hybrid parallelism, and whether it can run.

A layout is pure arithmetic over the world size, so the sweep planner can check it before any
process starts; `infeasible` adds what the model allows (heads, widths, blocks, batch split).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch

from torchscale.contracts.finding import Finding
from torchscale.contracts.parallel_shapes import MIN_MICROBATCH_SAMPLES
from torchscale.rank.models.bundle import PpSplit, TpPlan
from torchscale.rank.models.parallel_plan import plan_of

Strategy = Literal["tp", "pp", "hybrid"]
Schedule = Literal["gpipe", "1f1b", "interleaved_1f1b"]
Hybrid = Literal["fsdp_tp", "ddp_pp"]

VIRTUAL_STAGES = 2  # stage modules per rank under interleaved 1F1B


@dataclass(frozen=True)
class ParallelLayout:
    """How `world` ranks split into data-parallel replicas of tensor- or pipeline-parallel groups.

    Ranks are laid out row-major over (dp, tp) or (dp, pp): rank = replica * group + position, so
    the ranks of one TP group or one pipeline are neighbours (one node when they fit).
    """

    strategy: Strategy
    world: int
    tp: int  # tensor-parallel degree (1 when unused)
    pp: int  # pipeline ranks (1 when unused)
    dp: int  # data-parallel replicas = world // (tp * pp)
    microbatches: int  # pp only (1 otherwise)
    schedule: Schedule | None  # pp only
    sequence_parallel: bool  # tp only
    hybrid: Hybrid | None  # hybrid only

    @classmethod
    def build(
        cls,
        strategy: Strategy,
        world: int,
        *,
        tp: int = 1,
        pp: int = 1,
        microbatches: int = 1,
        schedule: Schedule | None = None,
        sequence_parallel: bool = False,
        hybrid: Hybrid | None = None,
    ) -> ParallelLayout:
        """A layout with `dp` derived from the world size (check it with `layout_problem`)."""
        dp = max(1, world // max(1, tp * pp))
        return cls(strategy, world, tp, pp, dp, microbatches, schedule, sequence_parallel, hybrid)

    @property
    def uses_tp(self) -> bool:
        return self.strategy == "tp" or self.hybrid == "fsdp_tp"

    @property
    def uses_pp(self) -> bool:
        return self.strategy == "pp" or self.hybrid == "ddp_pp"

    @property
    def stages_per_rank(self) -> int:
        """Stage modules each pipeline rank holds: 2 under interleaved 1F1B, else 1."""
        return VIRTUAL_STAGES if self.schedule == "interleaved_1f1b" else 1

    @property
    def stage_modules(self) -> int:
        """Stage modules in one pipeline (pp times the stages per rank)."""
        return self.pp * self.stages_per_rank if self.uses_pp else 1

    @property
    def group(self) -> int:
        """Ranks in one replica: the TP group or the pipeline."""
        return self.tp * self.pp

    def mesh_shape(self) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """The DeviceMesh shape and dimension names this layout runs on."""
        if self.strategy == "tp":
            return (self.tp,), ("tp",)
        if self.strategy == "pp":
            return (self.pp,), ("pp",)
        if self.hybrid == "fsdp_tp":
            return (self.dp, self.tp), ("dp", "tp")
        return (self.dp, self.pp), ("dp", "pp")

    def replica_of(self, rank: int) -> int:
        """The data-parallel replica (data shard) global `rank` belongs to."""
        return rank // self.group

    def describe(self) -> dict[str, Any]:
        """JSON-able summary for a result."""
        shape, names = self.mesh_shape()
        return {
            "strategy": self.strategy,
            "hybrid": self.hybrid,
            "world": self.world,
            "tp": self.tp,
            "pp": self.pp,
            "dp": self.dp,
            "mesh_shape": list(shape),
            "mesh_dim_names": list(names),
            "microbatches": self.microbatches if self.uses_pp else None,
            "schedule": self.schedule if self.uses_pp else None,
            "stage_modules": self.stage_modules if self.uses_pp else None,
            "sequence_parallel": self.sequence_parallel if self.uses_tp else None,
        }


def stage_indices(layout: ParallelLayout, pp_rank: int) -> list[int]:
    """The stage modules pipeline rank `pp_rank` holds (round-robin over the pipeline)."""
    return [pp_rank + k * layout.pp for k in range(layout.stages_per_rank)]


def theoretical_bubble(layout: ParallelLayout) -> float:
    """The idle fraction of an ideal step, (p-1)/(v*m+p-1) with v stages per rank (1 without
    interleaving): Narayanan et al. (SC'21, arXiv 2104.04473) sec. 2.2 give the bubble as
    (1/v)(p-1)/m of the compute, here a share of the whole step. Assumes equal stage costs and
    free communication."""
    p, m, v = layout.pp, layout.microbatches, layout.stages_per_rank
    return (p - 1) / (v * m + p - 1)


def _no(code: str, **figures: Any) -> Finding:
    """Why not, as a finding worded in contracts/wording/plan.py."""
    return Finding(code=f"layout.{code}", figures=figures)


def layout_problem(layout: ParallelLayout) -> Finding | None:
    """None when the layout is self-consistent; else why not (model aside)."""
    if min(layout.world, layout.tp, layout.pp, layout.dp, layout.microbatches) < 1:
        return _no("below_one")
    if layout.world != layout.dp * layout.tp * layout.pp:
        return _no("not_product", world=layout.world, dp=layout.dp, tp=layout.tp, pp=layout.pp)
    if layout.strategy == "tp":
        if layout.tp < 2 or layout.pp != 1 or layout.dp != 1:
            return _no("tp_whole_world")
    elif layout.strategy == "pp":
        if layout.pp < 2 or layout.tp != 1 or layout.dp != 1:
            return _no("pp_whole_world")
    elif layout.hybrid == "fsdp_tp":
        if layout.tp < 2 or layout.pp != 1:
            return _no("fsdp_tp_degrees")
    elif layout.hybrid == "ddp_pp":
        if layout.pp < 2 or layout.tp != 1:
            return _no("ddp_pp_degrees")
    else:
        return _no("unknown", strategy=layout.strategy, hybrid=layout.hybrid)
    if layout.sequence_parallel and not layout.uses_tp:
        return _no("sp_without_tp")
    if layout.uses_pp:
        if layout.schedule not in ("gpipe", "1f1b", "interleaved_1f1b"):
            return _no("unknown_schedule", schedule=layout.schedule)
        return _schedule_problem(layout)
    if layout.microbatches != 1 or layout.schedule is not None:
        return _no("microbatches_without_pp")
    return None


def _schedule_problem(layout: ParallelLayout) -> Finding | None:
    """The micro-batch counts torch 2.13's schedules accept (checked in their constructors)."""
    m, p = layout.microbatches, layout.pp
    if layout.schedule == "1f1b" and m < p:
        return _no("1f1b_microbatches", microbatches=m, pp=p)
    if layout.schedule == "interleaved_1f1b":
        rounds = max(1, m // p)
        if m % rounds:
            return _no("interleaved_microbatches", microbatches=m, rounds=rounds)
    return None


def infeasible(
    model: torch.nn.Module,
    layout: ParallelLayout,
    batch_size: int,
    *,
    seq_len: int | None = None,
    precision: str | None = None,
    grad_accum_steps: int = 1,
    channels_last: bool = False,
    plugin_tp_plan: TpPlan | None = None,
    plugin_pp_split: PpSplit | None = None,
) -> Finding | None:
    """None when `layout` can train `model`; else why not.

    `batch_size` is what one data-parallel replica reads per step (every rank of a TP group or
    pipeline reads the same batch). `seq_len` (tokens per sample, when known) lets sequence
    parallelism check that the sequence splits evenly. A model is judged by the ParallelPlan it
    declares (torchscale/rank/models/parallel_plan.py), a plug-in that declares none by the
    `tp_plan` / `pp_split` of its ModelBundle. Works on a model built on the meta device.
    """
    problem = layout_problem(layout)
    if problem is not None:
        return problem
    if batch_size < 1:
        return _no("batch_not_positive", batch=batch_size)
    if precision == "fp16":
        return _no("fp16_scaler")
    if layout.uses_pp and channels_last:
        return _no("channels_last_pipeline")
    if layout.uses_pp and grad_accum_steps > 1:
        return _no("pipeline_grad_accum")
    if layout.uses_tp:
        problem = _tp_problem(model, layout, seq_len, plugin_tp_plan)
        if problem is not None:
            return problem
    return _pp_problem(model, layout, batch_size, plugin_pp_split) if layout.uses_pp else None


def _tp_problem(
    model: torch.nn.Module, layout: ParallelLayout, seq_len: int | None, plugin: TpPlan | None
) -> Finding | None:
    plan = plan_of(model)
    if plan is None:
        if plugin is not None:
            return None  # the plug-in's own plan; it vouches for its divisibility
        return _no("no_tp_plan", model_class=type(model).__name__)
    problem = plan.tp_problem(layout.tp)
    if problem is None and layout.sequence_parallel:
        problem = plan.sp_problem(layout.tp, seq_len)
    # a plug-in's plan written to the older contract answers in words: its own, quoted
    return _no("model_said", said=problem) if isinstance(problem, str) else problem


def _pp_problem(
    model: torch.nn.Module, layout: ParallelLayout, batch_size: int, plugin: PpSplit | None
) -> Finding | None:
    if batch_size % layout.microbatches:
        return _no("microbatches_split", microbatches=layout.microbatches, batch=batch_size)
    problem = _split_problem(model, layout, plugin)
    samples = batch_size // layout.microbatches
    if problem is None and samples < MIN_MICROBATCH_SAMPLES:
        return _no(
            "microbatch_samples",
            microbatches=layout.microbatches,
            batch=batch_size,
            samples=samples,
            least=MIN_MICROBATCH_SAMPLES,
        )
    return problem


def _split_problem(
    model: torch.nn.Module, layout: ParallelLayout, plugin: PpSplit | None
) -> Finding | None:
    plan = plan_of(model)
    if plan is None:
        if plugin is not None:
            return None
        return _no("no_pp_split", model_class=type(model).__name__)
    blocks = plan.pipeline_depth()
    if blocks < layout.stage_modules:
        return _no(
            "too_few_blocks",
            model_class=type(model).__name__,
            blocks=blocks,
            stage_modules=layout.stage_modules,
            pp=layout.pp,
            stages_per_rank=layout.stages_per_rank,
        )
    return None
