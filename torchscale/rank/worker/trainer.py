"""One rank's training set-up and step: model wrapped for DDP or FSDP, optimizer, precision.

The step is what a real training loop does (forward under autocast, loss, backward, optimizer
step, zero_grad). With `data.source: synthetic` it trains on one batch generated once on the
device, so the timed loop measures compute and communication, never data loading; with `disk`
or `cifar100` every micro-batch comes from a DataLoader (torchscale/rank/data/input_pipeline.py),
as it does under `synthetic` from a plug-in's own batches (`ModelBundle.batches`:
torchscale/rank/data/plugin_batches.py), fetched inside the step's data phase, so the phase is
the step's real wait for its input.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from torchscale.contracts.training_defaults import (
    resolve_channels_last,
    resolve_fused_optimizer,
    resolve_loss,
)
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.rank.data import plugin_batches as plugin_data
from torchscale.rank.data.input_pipeline import SETTINGS_KEY, Pipeline, build_pipeline, layout_for
from torchscale.rank.models import ModelBundle, build_model, call_model
from torchscale.rank.models.bundle import LossFn
from torchscale.rank.models.layers import set_bf16_activations
from torchscale.rank.models.seeded_init import SeededBuild, SeededInit
from torchscale.rank.worker import markers
from torchscale.rank.worker.comm_hold import HOOK_TIMED, HoldTally, timed_hooks
from torchscale.rank.worker.delay import NO_DELAYS, RankDelays, sleep
from torchscale.rank.worker.phases import PhaseRecorder
from torchscale.rank.worker.precision import (
    AUTOCAST_DTYPES,
    autocast_factory,
    describe_policy,
    dtype_name,
    fsdp_policy,
    grad_scaler,
    norm_policy,
    upcast_loss,
)

if TYPE_CHECKING:  # imported when a cell is model-parallel: ddp and fsdp ranks never load them
    from torchscale.rank.parallel.pipeline_step import PipelineRunner

# the FSDP settings of an unsharded cell; every use copies it (settings grow in place)
NOT_SHARDED: dict[str, Any] = {"fsdp_mesh_device": None, "fsdp_mixed_precision": None}
# at world size 1 there is no peer to average gradients with, so the model trains unwrapped,
# as a one-GPU training script does (DDP's bucketing and hooks would cost 5-13 % of a small
# model's step); scaling efficiency is measured against this baseline
NO_DDP_AT_ONE_RANK = "none"


def bf16_activations_setting(on: bool, streams: int) -> str | None:
    """What the result says of `training.bf16_activations` (torchscale/rank/models/layers.py:
    the residual stream and LayerNorms in bf16 under bf16 autocast, weights and optimizer state
    fp32): on, or no_residual_stream (a model with none of torchscale's); None where off."""
    if not on:
        return None
    return "on" if streams else "no_residual_stream"


def has_peers() -> bool:
    """Whether this rank has any other to average gradients with (DDP wraps only then)."""
    return dist.get_world_size() > 1


def _optimizer(
    spec: WorkerSpec, params: Any, device: torch.device
) -> tuple[torch.optim.Optimizer, bool]:
    lr = spec.training.learning_rate
    if spec.training.optimizer == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9), False
    # CPU too: +14 % for tiny-gpt2 on 2 cores (docs/models.md); a torch without the kernel
    # for this device falls back, and the result's fused_optimizer says so
    fused = resolve_fused_optimizer(spec.training.fused_optimizer, "adamw")
    # fused AdamW exists for CUDA and, in recent torch, for CPU
    fused = fused and "fused" in inspect.signature(torch.optim.AdamW).parameters
    fused = fused and device.type in ("cuda", "cpu")
    return torch.optim.AdamW(params, lr=lr, fused=fused or None), bool(fused)


def fsdp_units(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The repeated blocks to shard on their own, innermost first (FSDP2 wants bottom-up); the
    rest stays in the root, so a tied weight is never split (docs/strategies.md)."""
    depth = {module: len(name.split(".")) for name, module in model.named_modules() if name}
    units: dict[int, torch.nn.Module] = {}
    for holder in model.modules():
        if not isinstance(holder, (torch.nn.ModuleList, torch.nn.Sequential)):
            continue
        children = list(holder.children())
        if len(children) >= 2 and len({type(c) for c in children}) == 1:
            units.update((id(c), c) for c in children if any(True for _ in c.parameters()))
    return sorted(units.values(), key=lambda m: -depth.get(m, 0))


def eager_module(model: torch.nn.Module) -> torch.nn.Module:
    """The module torch.compile wrapped (`OptimizedModule._orig_mod`), or `model` itself.

    The compiled wrapper is not a DDP instance and does not forward `no_sync()`: whatever needs
    the real wrapper (no_sync) looks through it.
    """
    inner = getattr(model, "_orig_mod", None)
    return inner if isinstance(inner, torch.nn.Module) else model


def ddp_module(model: torch.nn.Module) -> DistributedDataParallel | None:
    """The DDP wrapper, compiled or not; None under FSDP."""
    inner = eager_module(model)
    return inner if isinstance(inner, DistributedDataParallel) else None


def batch_norms(model: torch.nn.Module) -> list[torch.nn.Module]:
    """BatchNorm modules holding parameters (they need their own FSDP unit under bf16)."""
    from torch.nn.modules.batchnorm import _BatchNorm

    return [
        m
        for m in model.modules()
        if isinstance(m, _BatchNorm) and any(True for _ in m.parameters(recurse=False))
    ]


def _compile_units(model: torch.nn.Module, units: list[torch.nn.Module]) -> list[torch.nn.Module]:
    """Each unit replaced in its holder by its torch.compile wrapper (what fully_shard then
    wraps, so FSDP's hooks run around the graph, not inside it); returns the wrappers."""
    parents = {  # id -> (the holder, its name there)
        id(child): (parent, name)
        for parent in model.modules()
        for name, child in parent.named_children()
    }
    compiled = []
    for unit in units:
        parent, name = parents[id(unit)]
        wrapper: torch.nn.Module = torch.compile(unit)  # type: ignore[assignment]
        parent.register_module(name, wrapper)
        compiled.append(wrapper)
    return compiled


def _shard(
    spec: WorkerSpec, model: torch.nn.Module, device: torch.device
) -> tuple[dict[str, Any], bool]:
    """FSDP2 bottom-up (docs/strategies.md, "How FSDP2 is wrapped"); returns what was set up
    and whether the units were compiled (then the model is not compiled whole).

    The mesh is explicit: fully_shard's default takes the accelerator, so a `device: cpu` cell
    on a GPU node would shard onto CUDA and fail. Under bf16, BatchNorm layers are units of
    their own with fp32 parameters (`norm_policy`), as FSDP1 did by default.
    """
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    reshard = spec.training.fsdp.reshard_after_forward
    policy = fsdp_policy(spec.cell.precision)
    options: dict[str, Any] = {"mesh": mesh, "reshard_after_forward": reshard}
    units = fsdp_units(model)  # before any fully_shard: it changes the classes it compares
    norms: list[torch.nn.Module] = []
    if policy is not None:
        options["mp_policy"] = policy
        norms = batch_norms(model)
        for norm in norms:
            fully_shard(
                norm, mesh=mesh, reshard_after_forward=reshard, mp_policy=norm_policy(policy)
            )
    blocks = [unit for unit in units if not any(unit is norm for norm in norms)]
    why_whole = _whole_model_compile(blocks, norms)
    per_unit = bool(spec.training.compile) and why_whole is None
    if per_unit:
        blocks = _compile_units(model, blocks)
    for block in blocks:
        fully_shard(block, **options)
    fully_shard(model, **(options | {"reshard_after_forward": False}))
    settings: dict[str, Any] = {
        "fsdp_mesh_device": mesh.device_type,
        "fsdp_mixed_precision": describe_policy(policy)
        | {"batchnorm_units_fp32_params": len(norms)},
        # the units resharded after forward as set, the root never (backward starts with it)
        "fsdp_units": len(blocks) + len(norms),
    }
    if spec.training.compile:  # per_unit: torchtitan's order, FSDP's hooks outside the graphs
        settings["compile_scope"] = "per_unit" if per_unit else f"whole_model:{why_whole}"
    return settings, per_unit


def _whole_model_compile(blocks: list[torch.nn.Module], norms: list[torch.nn.Module]) -> str | None:
    """Why a compiled FSDP cell compiles the whole model after fully_shard rather than unit by
    unit: no_blocks (none repeated to compile one by one), nested_units (an inner unit's hooks
    would land in the outer graph); None when each unit can be compiled alone."""
    if not blocks:
        return "no_blocks"
    inner = {id(m) for unit in [*blocks, *norms] for m in unit.modules() if m is not unit}
    if any(id(unit) in inner for unit in [*blocks, *norms]):
        return "nested_units"
    return None


def _wrap(
    spec: WorkerSpec, model: torch.nn.Module, device: torch.device
) -> tuple[torch.nn.Module, dict[str, Any], bool]:
    """The model as the cell trains it, what was set up, and whether it is compiled already
    (FSDP's units, compiled one by one before sharding)."""
    if spec.cell.strategy == "fsdp":
        settings, compiled = _shard(spec, model, device)
        return model, settings, compiled
    if not has_peers():
        return model, NOT_SHARDED | {"ddp_wrapper": NO_DDP_AT_ONE_RANK}, False
    ddp = spec.training.ddp
    # broadcast_buffers only when off: newer torch warns when the (default) True is passed
    options = ddp.model_dump(exclude={"broadcast_buffers"} if ddp.broadcast_buffers else None)
    options["device_ids"] = [device.index] if device.type == "cuda" else None
    return DistributedDataParallel(model, **options), dict(NOT_SHARDED), False


def _ddp_comm_hook(
    bundle: ModelBundle, wrapped: torch.nn.Module, settings: dict[str, Any]
) -> HoldTally | None:
    """Hand a DDP cell's wrapper to the plug-in's `ddp_comm_hook` (it registers its own
    communication hook there, timed: comm_hold.py) and return the tally of the time its hooks
    hold their launches; a cell with no DDP wrapper (FSDP, one rank) says why it ran without
    it, so a result never implies a hook that did not run."""
    if not isinstance(wrapped, DistributedDataParallel):
        settings["ddp_comm_hook"] = "no_ddp_wrapper"  # not called
        return None
    tally = HoldTally()
    timed_hooks(wrapped, tally)
    bundle.ddp_comm_hook(wrapped)  # type: ignore[misc]
    settings["ddp_comm_hook"] = HOOK_TIMED
    return tally


def _channels_last(inputs: Any, channels_last: bool) -> Any:
    """An NCHW image batch in channels_last memory format when the trainer uses it."""
    if channels_last and isinstance(inputs, torch.Tensor) and inputs.dim() == 4:
        return inputs.contiguous(memory_format=torch.channels_last)
    return inputs


def _pipeline(
    spec: WorkerSpec, bundle: ModelBundle, device: torch.device, data_rank: int, data_ranks: int
) -> Pipeline:
    """This rank's DataLoader for the cell's model (torchscale/rank/data/input_pipeline.py): the
    shard of its data-parallel replica (the global rank under ddp and fsdp)."""
    layout = layout_for(
        spec.model.name,
        spec.model.options,
        bundle,
        seq_len=spec.data.seq_len,
        image_size=spec.data.image_size,
    )
    return build_pipeline(
        spec.data,
        layout,
        spec.model.name,
        spec.cell.batch_size,
        device,
        data_rank,
        data_ranks,
        spec.training.seed,
    )


def _bundle_of(spec: WorkerSpec) -> ModelBundle:
    return build_model(
        spec.model.name,
        spec.model.options,
        seq_len=spec.data.seq_len,
        image_size=spec.data.image_size,
    )


def _model_of(spec: WorkerSpec) -> torch.nn.Module:
    """The cell's model as the trainer sets it up before any strategy: what a pipeline rank
    builds its stages from."""
    model = _bundle_of(spec).model
    set_bf16_activations(model, bool(spec.training.bf16_activations))
    return model


@dataclass
class Trainer:
    spec: WorkerSpec
    device: torch.device
    bundle: ModelBundle
    model: torch.nn.Module  # wrapped
    optimizer: torch.optim.Optimizer
    fused_optimizer: bool
    channels_last: bool
    inputs: Any
    targets: Any
    scaler: torch.amp.GradScaler | None
    autocast: Any
    settings: dict[str, Any]  # what was set up that a reader of the result must know
    delays: RankDelays = NO_DELAYS  # --inject-delay aimed at this rank
    # disk / cifar100, or a plug-in's own batches: the DataLoader every batch comes from
    pipeline: Pipeline | plugin_data.PluginBatches | None = None
    runner: PipelineRunner | None = None  # pp, hybrid ddp_pp: runs forward and backward
    loss_fn: LossFn | None = None  # the measured steps' loss, eager form or compiled
    # a plug-in's DDP comm hook: the running time it held its launches (comm_hold.py)
    comm_hold: HoldTally | None = None

    @classmethod
    def build(cls, spec: WorkerSpec, device: torch.device) -> Trainer:
        # one seed for the weights (every FSDP shard then comes from the same model, as DDP's
        # broadcast makes it), another per rank for the data; every random op of the model's
        # construction seeded by its place (seeded_init.py), so a pipeline rank can build its
        # own stages alone with the values the unsplit model of any other strategy has
        torch.manual_seed(spec.training.seed)
        build = SeededBuild(functools.partial(_model_of, spec), spec.training.seed)
        pipelined = spec.cell.parallel is not None and spec.cell.parallel.pp > 1
        with torch.device("meta") if pipelined else SeededInit(spec.training.seed):
            bundle = _bundle_of(spec)
        model = bundle.model if pipelined else bundle.model.to(device)
        bf16_streams = set_bf16_activations(model, bool(spec.training.bf16_activations))
        # as the plan resolved it; a plug-in's (unknown to the plan) from the model built here
        channels_last = resolve_channels_last(
            spec.training.channels_last, device.type, bundle.conv_net
        )
        # model-parallel cells keep contiguous tensors: pipeline sends need them
        channels_last = bool(channels_last and bundle.conv_net and spec.cell.parallel is None)
        weights_channels_last = channels_last and spec.cell.strategy == "ddp"
        if weights_channels_last:
            model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
        # FSDP's bf16 policy casts parameters and inputs itself: no autocast on top of it
        fsdp_cast = fsdp_policy(spec.cell.precision) if spec.cell.strategy == "fsdp" else None
        autocast = autocast_factory(spec.cell.precision, device, fsdp_cast)
        runner = comm_hold = None
        data_rank, data_ranks = dist.get_rank(), dist.get_world_size()
        settings: dict[str, Any]
        params: Any = None
        units_compiled = False
        if spec.cell.parallel is not None:
            from torchscale.rank.worker.model_parallel import model_parallel

            parallel = model_parallel(spec, bundle, model, device, autocast, data_ranks, build)
            wrapped, runner = parallel.module, parallel.runner
            data_rank, data_ranks = parallel.data_rank, parallel.data_ranks
            params = parallel.param_groups
            settings = NOT_SHARDED | {"model_parallel": parallel.settings}
            del model  # a pipeline rank keeps only its stages: the rest can be freed
        else:
            wrapped, settings, units_compiled = _wrap(spec, model, device)
            if bundle.ddp_comm_hook is not None:
                comm_hold = _ddp_comm_hook(bundle, wrapped, settings)
        settings |= {
            "channels_last_weights": weights_channels_last,
            "autocast": None
            if fsdp_cast is not None
            else dtype_name(AUTOCAST_DTYPES.get(spec.cell.precision)),
            "bf16_activations": bf16_activations_setting(
                bool(spec.training.bf16_activations), bf16_streams
            ),
        }
        # the plan skips compile + pipelines; a pipeline's last stage computes the bundle's loss
        loss = resolve_loss(
            compiled=bool(spec.training.compile),
            pipeline=runner is not None,
            blockwise_available=bundle.eager_loss_fn is not None,
        )
        settings["loss"] = loss
        loss_fn = bundle.eager_loss_fn if loss == "blockwise" else bundle.loss_fn
        if fsdp_cast is not None and loss != "blockwise":  # the blockwise loss works in fp32
            loss_fn = upcast_loss(bundle.loss_fn)
        if loss == "compiled":
            if not units_compiled:
                wrapped = torch.compile(wrapped)  # type: ignore[assignment]
            loss_fn = torch.compile(loss_fn)  # type: ignore[assignment]
        optimizer, fused = _optimizer(
            spec, params if params is not None else wrapped.parameters(), device
        )
        delays = RankDelays.for_rank(spec.inject_delay, dist.get_rank(), dist.get_world_size())
        # the data seed follows the replica: ranks of one TP group or pipeline read one batch
        torch.manual_seed(spec.training.seed + data_rank)
        pipeline: Pipeline | plugin_data.PluginBatches | None = None
        inputs = targets = None  # every micro-batch comes from the pipeline, unless made here
        if spec.data.source != "synthetic":
            pipeline = _pipeline(spec, bundle, device, data_rank, data_ranks)
            settings[SETTINGS_KEY] = pipeline.info
        elif bundle.batches is not None and spec.cell.parallel is None:
            pipeline = plugin_data.plugin_batches(bundle.batches, spec.cell.batch_size, device)
            settings[SETTINGS_KEY] = pipeline.info
        else:
            inputs, targets = bundle.make_batch(spec.cell.batch_size, device)
            inputs = _channels_last(inputs, channels_last)
            if bundle.batches is not None:  # tp / pp / hybrid: the result says why not drawn
                settings[SETTINGS_KEY] = {"notes": [plugin_data.NOT_MODEL_PARALLEL]}
        return cls(
            spec,
            device,
            bundle,
            wrapped,
            optimizer,
            fused,
            channels_last,
            inputs,
            targets,
            grad_scaler(spec.cell.precision, device),
            autocast,
            settings,
            delays,
            pipeline,
            runner,
            loss_fn,
            comm_hold,
        )

    def close(self) -> None:
        """Shut the DataLoader's workers down (also done at exit; idempotent)."""
        if self.pipeline is not None:
            self.pipeline.close()

    def next_batch(self) -> tuple[Any, Any]:
        """The micro-batch to train on: the synthetic one, or the pipeline's next one."""
        if self.pipeline is None:
            return self.inputs, self.targets
        inputs, targets = self.pipeline.next_batch()
        return _channels_last(inputs, self.channels_last), targets

    def no_sync(self, skip_sync: bool) -> Any:
        """DDP's no_sync() when `skip_sync` (looking through torch.compile's wrapper), else a
        null context. FSDP has no equivalent here: its micro-batches always reduce-scatter."""
        ddp = ddp_module(self.model) if skip_sync else None
        return ddp.no_sync() if ddp is not None else contextlib.nullcontext()

    def step(self, skip_gradient_sync: bool = False, phases: PhaseRecorder | None = None) -> None:
        """One optimizer step over grad_accum_steps micro-batches.

        `skip_gradient_sync` runs every micro-batch under DDP no_sync(): the same compute with
        no gradient all-reduce, each rank's compute alone (straggler, exposed communication).
        `phases` records the phase boundaries (phases.py). Phase ranges go to whichever
        profiler listens (markers.py; none in the measured windows), and a delay injected on
        this rank sleeps in its phase (delay.py).
        """
        if self.runner is not None:
            self._pipeline_step(phases)
            return
        model = self.model
        loss_fn = self.loss_fn if self.loss_fn is not None else self.bundle.loss_fn
        accum = self.spec.training.grad_accum_steps
        marks = markers.current()
        delays = self.delays
        if phases is not None:
            phases.step_start()
        for micro in range(accum):
            last = micro == accum - 1
            with marks.range(markers.DATA):
                inputs, targets = self.next_batch()
                if last and delays.data:
                    sleep(delays.data)
            if phases is not None:
                phases.data_end()
            with self.no_sync(skip_gradient_sync or not last):
                with marks.range(markers.FORWARD):
                    with self.autocast():
                        loss = loss_fn(call_model(model, inputs), targets)
                    if accum > 1:
                        loss = loss / accum
                    if last and delays.any:
                        if delays.forward:
                            sleep(delays.forward)
                        loss = delays.delay_backward(loss)
                if phases is not None:
                    phases.backward_start()
                with marks.range(markers.BACKWARD):
                    if self.scaler is not None:
                        self.scaler.scale(loss).backward()
                    else:
                        loss.backward()
                if phases is not None:
                    phases.backward_end()
        self._optimizer_step(marks)
        if phases is not None:
            phases.step_end()

    def _optimizer_step(self, marks: markers.Markers) -> None:
        """optimizer.step() (GradScaler's step and update under fp16) and zero_grad."""
        with marks.range(markers.OPTIMIZER):
            if self.delays.optimizer:
                sleep(self.delays.optimizer)
            if self.scaler is not None:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)

    def _pipeline_step(self, phases: PhaseRecorder | None) -> None:
        """One optimizer step of a pipeline rank: the schedule runs every micro-batch's
        forward and backward (interleaved, so no forward/backward phases: the pipeline's busy
        time and bubble stand in for them); gradient accumulation is refused by the plan."""
        assert self.runner is not None and phases is None
        marks = markers.current()
        delays = self.delays
        with marks.range(markers.DATA):
            inputs, targets = self.next_batch()
            if delays.data:
                sleep(delays.data)
        with marks.range(markers.FORWARD):
            if delays.forward:
                sleep(delays.forward)
            self.runner.step(inputs, targets)
        self._optimizer_step(marks)  # no scaler: fp16 is refused with pipelines
