"""The many-rank plans checked in one process: torch's fake process group stands in for the
world, the model is built on the meta device, and the worker's own set-up (trainer._wrap for
ddp and fsdp, model_parallel for tp, pp and the hybrids) runs as rank r of it.

What this checks is the plan, not the run: each rank's parameter shards, its parameter count and
bytes, how they add up over the ranks, and the pipeline split. The fake backend completes every
collective at once without moving data, so communication, NCCL, activation memory and timing
are out of its reach (docs/strategies.md, "The plans the fake process group checked").
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor, Replicate
from torch.nn.parallel import DistributedDataParallel

from torchscale.contracts.catalog import Strategy
from torchscale.contracts.cell import CellIdentity, ParallelShape
from torchscale.contracts.cell_settings import (
    DataConfig,
    MeasurementConfig,
    ModelSpec,
    ParallelConfig,
    TrainingConfig,
)
from torchscale.contracts.finding import Finding
from torchscale.contracts.parallel_shapes import parallel_shapes, world_problem
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.rank.models import build_model
from torchscale.rank.models.parallel_plan import plan_of
from torchscale.rank.models.seeded_init import SeededBuild
from torchscale.rank.strategy_layouts import layout_of, model_problem
from torchscale.rank.worker import trainer
from torchscale.rank.worker.model_parallel import model_parallel

# every strategy and both hybrids, at the catalog's default degrees and pipeline settings
STRATEGIES: tuple[Strategy, ...] = ("ddp", "fsdp", "tp", "pp", "hybrid")
# and 8 micro-batches beside the default 4: 1F1B over 8 stages needs at least 8
ZOO_PARALLEL = ParallelConfig(microbatches=[4, 8], hybrid=["fsdp_tp", "ddp_pp"])
META = torch.device("meta")
CPU = torch.device("cpu")


@contextlib.contextmanager
def fake_world(world: int, rank: int) -> Iterator[None]:
    """The default process group as rank `rank` of `world`, on torch's fake backend: every
    collective returns at once, nothing is sent (torch.testing._internal, pinned by
    tests/rank/test_plan_check.py)."""
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world)
    try:
        yield
    finally:
        dist.destroy_process_group()


@contextlib.contextmanager
def _ddp_without_init_sync() -> Iterator[None]:
    """DDP's constructor checks and broadcasts the parameters, which reads a value back
    (.item()), impossible on the meta device; init_sync=False skips just that (a fake group
    moves no data anyway), everything else DDP sets up is built as the worker builds it."""
    original = DistributedDataParallel.__init__

    @functools.wraps(original)
    def init(self: DistributedDataParallel, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **(kwargs | {"init_sync": False}))

    DistributedDataParallel.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        DistributedDataParallel.__init__ = original  # type: ignore[method-assign]


def worker_spec(
    model: str,
    strategy: Strategy,
    shape: ParallelShape | None,
    world: int,
    batch_size: int,
    *,
    compile_: bool = False,
    seq_len: int | None = None,
) -> WorkerSpec:
    """The spec a rank of this cell would read (fp32, synthetic data, CPU and gloo)."""
    return WorkerSpec(
        cell=CellIdentity(
            id="plan-check",
            definition_sha256="0" * 64,
            model=model,
            label=model,
            batch_size=batch_size,
            world_size=world,
            precision="fp32",
            strategy=strategy,
            device="cpu",
            backend="gloo",
            parallel=shape,
        ),
        model=ModelSpec(name=model),
        training=TrainingConfig(compile=compile_),
        measurement=MeasurementConfig(),
        data=DataConfig(seq_len=seq_len),
        result_path="/nonexistent/result.json",
        steps_path="/nonexistent/steps.jsonl",
    )


@dataclass
class RankShare:
    """What one rank holds after the plan: parameters (local elements and bytes), their shard
    shapes by name, and the elements it holds once when every copy is divided out."""

    rank: int
    parameters: int
    parameter_bytes: int
    unique: float  # sum of local elements / copies of each: over all ranks, the model's elements
    shards: dict[str, tuple[int, ...]]
    pipeline: dict[str, Any] = field(default_factory=dict)


def _copies(param: torch.Tensor, plain_copies: int, world: int) -> int:
    """Ranks holding the same elements: for a DTensor the ranks outside its mesh (FSDP x TP
    shards a TP-replicated weight over mesh['dp'] only) times its replicated mesh dimensions;
    for a plain tensor what the layout says (every rank under ddp, the TP group under tp, one
    rank per pipeline under pipelining)."""
    if not isinstance(param, DTensor):
        return plain_copies
    mesh = param.device_mesh
    replicated = math.prod(
        n for n, p in zip(mesh.shape, param.placements, strict=True) if isinstance(p, Replicate)
    )
    return world // mesh.size() * replicated


def _share(
    rank: int, module: torch.nn.Module, plain_copies: int, pipeline: dict[str, Any]
) -> RankShare:
    named = dict(module.named_parameters())
    plain, world = plain_copies, dist.get_world_size()
    local = {n: p.to_local() if isinstance(p, DTensor) else p for n, p in named.items()}
    return RankShare(
        rank=rank,
        parameters=sum(t.numel() for t in local.values()),
        parameter_bytes=sum(t.numel() * t.element_size() for t in local.values()),
        unique=sum(local[n].numel() / _copies(p, plain, world) for n, p in named.items()),
        shards={n: tuple(t.shape) for n, t in local.items()},
        pipeline=pipeline,
    )


def rank_share(spec: WorkerSpec, rank: int) -> RankShare:
    """Rank `rank`'s share under the cell's plan, on a fake world of the cell's size.

    The model is built on the meta device; ddp, fsdp and the tp meshes are set up for the CPU
    (nothing moves the meta weights there), pipelines for the meta device itself (the worker
    moves the stages to its device, which on meta allocates nothing; its settings count what
    the rank would build for real, `pp_built_parameters`)."""
    world, strategy, shape = spec.cell.world_size, spec.cell.strategy, spec.cell.parallel
    with META:
        bundle = build_model(spec.model.name, spec.model.options, seq_len=spec.data.seq_len)
    model = bundle.model
    with fake_world(world, rank), _ddp_without_init_sync():
        if shape is None:
            wrapped, _, _ = trainer._wrap(spec, model, CPU)
            return _share(rank, wrapped, world if strategy == "ddp" else 1, {})
        layout = layout_of(strategy, shape, world)
        device = META if layout.uses_pp else CPU
        build = SeededBuild(functools.partial(trainer._model_of, spec), spec.training.seed)
        parallel = model_parallel(spec, bundle, model, device, contextlib.nullcontext, world, build)
        plain = layout.dp if layout.uses_pp else world
        pipeline = {k: v for k, v in parallel.settings.items() if k.startswith("pp_")}
        return _share(rank, parallel.module, plain, pipeline)


@dataclass
class PlanCheck:
    """One plan (model x strategy x layout x world) checked over `ranks`."""

    model: str
    strategy: Strategy
    shape: ParallelShape | None
    world: int
    batch_size: int
    model_parameters: int
    tied_parameters: int  # the copy a pipeline's last stage holds of a tied weight
    skipped: Finding | None = None
    ranks: list[RankShare] = field(default_factory=list)

    @property
    def layout(self) -> str:
        """`ddp`, `tp8`, `pp8 1f1b m4`, `fsdp_tp dp4 tp2`: the plan in a table cell."""
        s = self.shape
        if s is None:
            return str(self.strategy)
        pipe = f" {s.schedule} m{s.microbatches}" if s.pp > 1 else ""
        inner = f"tp{s.tp}" if s.tp > 1 else f"pp{s.pp}"
        return f"{s.hybrid} dp{s.dp} {inner}{pipe}" if s.hybrid else f"{inner}{pipe}"

    @property
    def all_ranks(self) -> bool:
        return sorted(r.rank for r in self.ranks) == list(range(self.world))

    @property
    def expected_unique(self) -> int:
        """The model's elements, with a pipeline's tied copy, held once over the world."""
        pp = self.shape is not None and self.shape.pp > 1
        return self.model_parameters + (self.tied_parameters if pp else 0)

    def verdict(self) -> str:
        """ok / mismatch (the ranks' shares do not add up to the model) / sampled (not every
        rank checked: shapes only) / skipped (the plan refuses the layout: `skipped`)."""
        if self.skipped is not None:
            return "skipped"
        if not self.all_ranks:
            return "sampled"
        held = sum(r.unique for r in self.ranks)
        return "ok" if round(held) == self.expected_unique else "mismatch"


def zoo_plans(world: int) -> list[tuple[Strategy, ParallelShape | None]]:
    """Every strategy's layouts at `world` ranks, as a sweep's plan expands them."""
    return [(s, shape) for s in STRATEGIES for shape in parallel_shapes(s, ZOO_PARALLEL, world)]


def _tied(model: torch.nn.Module) -> int:
    plan = plan_of(model)
    if plan is None:
        return 0
    return sum(t.last.numel() for t in plan.pipeline_parts().tied)


def check_plan(
    model: str,
    strategy: Strategy,
    shape: ParallelShape | None,
    world: int,
    batch_size: int,
    ranks: list[int] | None = None,
    seq_len: int | None = None,
) -> PlanCheck:
    """The plan checked on `ranks` (every rank when None), or why the planner skips it."""
    with META:
        built = build_model(model, seq_len=seq_len).model
    check = PlanCheck(
        model, strategy, shape, world, batch_size, trainer_parameters(built), _tied(built)
    )
    if shape is not None:
        check.skipped = world_problem(strategy, shape, world) or model_problem(
            strategy, shape, world, ModelSpec(name=model), batch_size, "fp32", 1, seq_len, None
        )
    if check.skipped is None:
        spec = worker_spec(model, strategy, shape, world, batch_size, seq_len=seq_len)
        for rank in range(world) if ranks is None else ranks:
            check.ranks.append(rank_share(spec, rank))
    return check


def trainer_parameters(model: torch.nn.Module) -> int:
    """The unsplit model's parameters, a tied tensor once (registry.parameter_count)."""
    from torchscale.rank.models.registry import parameter_count

    return parameter_count(model)


def compiled_step(model: str, strategy: Strategy, world: int, rank: int, batch_size: int) -> int:
    """One compiled training step of `model` as rank `rank` of a fake world, built and stepped
    by the worker's own Trainer (the model real, on the CPU: use a tiny one); returns the
    graphs dynamo compiled for it."""
    from torch._dynamo.utils import counters

    spec = worker_spec(model, strategy, None, world, batch_size, compile_=True)
    counters.clear()
    with fake_world(world, rank):
        built = trainer.Trainer.build(spec, CPU)
        built.step()
        built.close()
    return int(counters["stats"]["unique_graphs"])
