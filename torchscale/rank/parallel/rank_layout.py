"""Which ranks do what under tensor, pipeline and hybrid parallelism, and whether it can run.

A layout is pure arithmetic over the world size, so the sweep planner can check it before any
process starts; `infeasible` adds what the model allows (heads, widths, blocks, batch split).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch

from torchscale.contracts.wording.shapes import product
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


def layout_problem(layout: ParallelLayout) -> str | None:
    """None when the layout is self-consistent; else why not (model aside)."""
    if min(layout.world, layout.tp, layout.pp, layout.dp, layout.microbatches) < 1:
        return "world, tp, pp, dp and microbatches must all be at least 1"
    if layout.world != layout.dp * layout.tp * layout.pp:
        shape = product(("dp", "tp", "pp"), (layout.dp, layout.tp, layout.pp))
        return f"world {layout.world} is not {shape}"
    if layout.strategy == "tp":
        if layout.tp < 2 or layout.pp != 1 or layout.dp != 1:
            return (
                "strategy tp runs one TP group over the whole world (tp = world >= 2, pp = 1); "
                "use hybrid fsdp_tp for data parallelism across TP groups"
            )
    elif layout.strategy == "pp":
        if layout.pp < 2 or layout.tp != 1 or layout.dp != 1:
            return (
                "strategy pp runs one pipeline over the whole world (pp = world >= 2, tp = 1); "
                "use hybrid ddp_pp for data parallelism across pipelines"
            )
    elif layout.hybrid == "fsdp_tp":
        if layout.tp < 2 or layout.pp != 1:
            return "hybrid fsdp_tp needs tp >= 2 and pp = 1"
    elif layout.hybrid == "ddp_pp":
        if layout.pp < 2 or layout.tp != 1:
            return "hybrid ddp_pp needs pp >= 2 and tp = 1"
    else:
        return f"strategy {layout.strategy!r} with hybrid {layout.hybrid!r} is not a layout"
    if layout.sequence_parallel and not layout.uses_tp:
        return "sequence parallelism applies to tensor-parallel layouts only"
    if layout.uses_pp:
        if layout.schedule not in ("gpipe", "1f1b", "interleaved_1f1b"):
            return f"pipeline schedule {layout.schedule!r} is not gpipe, 1f1b or interleaved_1f1b"
        return _schedule_problem(layout)
    if layout.microbatches != 1 or layout.schedule is not None:
        return "microbatches and schedule apply to pipeline layouts only"
    return None


def _schedule_problem(layout: ParallelLayout) -> str | None:
    """The micro-batch counts torch 2.13's schedules accept (checked in their constructors)."""
    m, p = layout.microbatches, layout.pp
    if layout.schedule == "1f1b" and m < p:
        return f"1f1b needs at least as many micro-batches as stages ({m} < {p})"
    if layout.schedule == "interleaved_1f1b":
        rounds = max(1, m // p)
        if m % rounds:
            return (
                f"interleaved_1f1b needs micro-batches ({m}) to be a multiple of "
                f"max(1, microbatches // pp) = {rounds}"
            )
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
) -> str | None:
    """None when `layout` can train `model`; else one line saying why not.

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
        return f"batch size {batch_size} is not positive"
    if precision == "fp16":
        return (
            "fp16 needs GradScaler, whose inf/NaN check sees only this rank's gradient shards "
            "or stages, so ranks could disagree on skipping a step; use bf16 or fp32"
        )
    if layout.uses_pp and channels_last:
        return (
            "channels_last with pipeline parallelism: torch's stage-to-stage sends need "
            "contiguous activations (and contiguous boundaries crashed gloo ranks in torch 2.13)"
        )
    if layout.uses_pp and grad_accum_steps > 1:
        return (
            "gradient accumulation over pipeline steps is not supported (torch's schedules "
            "rescale the whole .grad at each step's last backward); raise microbatches instead"
        )
    if layout.uses_tp:
        problem = _tp_problem(model, layout, seq_len, plugin_tp_plan)
        if problem is not None:
            return problem
    return _pp_problem(model, layout, batch_size, plugin_pp_split) if layout.uses_pp else None


def _tp_problem(
    model: torch.nn.Module, layout: ParallelLayout, seq_len: int | None, plugin: TpPlan | None
) -> str | None:
    plan = plan_of(model)
    if plan is None:
        if plugin is not None:
            return None  # the plug-in's own plan; it vouches for its divisibility
        return f"no tensor-parallel plan for plug-in model class {type(model).__name__} " + (
            "(its ModelBundle declares no tp_plan)"
        )
    problem = plan.tp_problem(layout.tp)
    if problem is not None:
        return problem
    return plan.sp_problem(layout.tp, seq_len) if layout.sequence_parallel else None


def _pp_problem(
    model: torch.nn.Module, layout: ParallelLayout, batch_size: int, plugin: PpSplit | None
) -> str | None:
    if batch_size % layout.microbatches:
        return (
            f"{layout.microbatches} micro-batches do not divide the per-replica batch {batch_size}"
        )
    plan = plan_of(model)
    if plan is None:
        if plugin is not None:
            return None
        return f"no pipeline split for plug-in model class {type(model).__name__} " + (
            "(its ModelBundle declares no pp_split)"
        )
    blocks = plan.pipeline_depth()
    if blocks < layout.stage_modules:
        return (
            f"{type(model).__name__} has {blocks} blocks, fewer than the "
            f"{layout.stage_modules} stage modules of {layout.pp} pipeline ranks"
            + (" x 2 virtual stages" if layout.stages_per_rank > 1 else "")
        )
    return None
