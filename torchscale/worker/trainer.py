"""One rank's training set-up and step: model wrapped for DDP or FSDP, optimizer, precision.

The step is what a real training loop does (forward under autocast, loss, backward, optimizer
step, zero_grad) on one synthetic batch generated once on the device, so the timed loop measures
compute and communication, never data loading.
"""

from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from torchscale.models import ModelBundle, build_model, call_model
from torchscale.worker.precision import autocast_factory, grad_scaler
from torchscale.worker.spec import WorkerSpec


def _fused_supported(device: torch.device) -> bool:
    """Fused AdamW exists for CUDA and, in recent torch, for CPU."""
    return "fused" in inspect.signature(torch.optim.AdamW).parameters and device.type in (
        "cuda",
        "cpu",
    )


def _optimizer(
    spec: WorkerSpec, params: Any, device: torch.device
) -> tuple[torch.optim.Optimizer, bool]:
    lr = spec.training.learning_rate
    if spec.training.optimizer == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9), False
    fused = spec.training.fused_optimizer
    if fused is None:
        fused = device.type == "cuda" and _fused_supported(device)
    if fused and not _fused_supported(device):
        fused = False
    return torch.optim.AdamW(params, lr=lr, fused=fused or None), bool(fused)


def fsdp_units(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The repeated blocks to shard on their own, innermost first (FSDP2 wants bottom-up).

    Children of any nn.ModuleList or nn.Sequential made of two or more modules of one class
    (transformer layers, ResNet bottlenecks): the usual FSDP unit. Everything else, tied
    embeddings and heads included, stays with the root unit, so a weight shared by two modules
    is never split between two units.
    """
    depth = {module: len(name.split(".")) for name, module in model.named_modules() if name}
    units: dict[int, torch.nn.Module] = {}
    for holder in model.modules():
        if not isinstance(holder, (torch.nn.ModuleList, torch.nn.Sequential)):
            continue
        children = list(holder.children())
        if len(children) >= 2 and len({type(c) for c in children}) == 1:
            units.update((id(c), c) for c in children if any(True for _ in c.parameters()))
    return sorted(units.values(), key=lambda m: -depth.get(m, 0))


def _wrap(spec: WorkerSpec, model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    if spec.strategy == "fsdp":
        from torch.distributed.fsdp import fully_shard

        reshard = spec.training.fsdp.reshard_after_forward
        for block in fsdp_units(model):
            fully_shard(block, reshard_after_forward=reshard)
        fully_shard(model, reshard_after_forward=reshard)
        return model
    ddp = spec.training.ddp
    options: dict[str, Any] = {
        "device_ids": [device.index] if device.type == "cuda" else None,
        "bucket_cap_mb": ddp.bucket_cap_mb,
        "gradient_as_bucket_view": ddp.gradient_as_bucket_view,
        "static_graph": ddp.static_graph,
        "find_unused_parameters": ddp.find_unused_parameters,
    }
    if not ddp.broadcast_buffers:  # newer torch warns when the (default) True is passed
        options["broadcast_buffers"] = False
    return DistributedDataParallel(model, **options)


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

    @classmethod
    def build(cls, spec: WorkerSpec, device: torch.device) -> Trainer:
        torch.manual_seed(spec.training.seed + dist.get_rank())
        bundle = build_model(
            spec.model.name,
            spec.model.options,
            seq_len=spec.data.seq_len,
            image_size=spec.data.image_size,
        )
        model = bundle.model.to(device)
        channels_last = spec.training.channels_last
        if channels_last is None:
            channels_last = bundle.conv_net and device.type == "cuda"
        channels_last = bool(channels_last and bundle.conv_net)
        if channels_last:
            model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
        wrapped = _wrap(spec, model, device)
        if spec.training.compile:
            wrapped = torch.compile(wrapped)  # type: ignore[assignment]
        optimizer, fused = _optimizer(spec, wrapped.parameters(), device)
        inputs, targets = bundle.make_batch(spec.batch_size, device)
        if channels_last and isinstance(inputs, torch.Tensor) and inputs.dim() == 4:
            inputs = inputs.contiguous(memory_format=torch.channels_last)
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
            grad_scaler(spec.precision, device),
            autocast_factory(spec.precision, device),
        )

    def _no_sync(self, skip_sync: bool) -> Any:
        if skip_sync and isinstance(self.model, DistributedDataParallel):
            return self.model.no_sync()
        return contextlib.nullcontext()

    def step(self, skip_gradient_sync: bool = False) -> None:
        """One optimizer step over grad_accum_steps micro-batches.

        `skip_gradient_sync` runs every micro-batch under DDP no_sync(): the same compute with
        no gradient all-reduce, for the exposed-communication measurement.
        """
        accum = self.spec.training.grad_accum_steps
        for micro in range(accum):
            last = micro == accum - 1
            with self._no_sync(skip_gradient_sync or not last):
                with self.autocast():
                    loss = self.bundle.loss_fn(call_model(self.model, self.inputs), self.targets)
                if accum > 1:
                    loss = loss / accum
                if self.scaler is not None:
                    self.scaler.scale(loss).backward()
                else:
                    loss.backward()
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def samples_per_step(self) -> int:
        """Samples one rank processes per optimizer step."""
        return self.spec.batch_size * self.spec.training.grad_accum_steps
