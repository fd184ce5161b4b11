"""What a model hands to the training loop: the module, a batch maker and a loss.

Every model, built-in or plug-in, is reduced to this one shape so the worker's train loop never
needs to know which architecture it is timing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import torch

if TYPE_CHECKING:
    from torch.distributed.device_mesh import DeviceMesh

ModelKind = Literal["vision", "language", "other"]
MakeBatch = Callable[[int, torch.device], tuple[Any, Any]]
LossFn = Callable[[Any, Any], torch.Tensor]
# a plug-in's own input pipeline: (batch_size, device) -> an iterable of (inputs, targets), such
# as a DataLoader or a generator; one batch drawn per micro-batch
# (torchscale/rank/data/plugin_batches.py)
Batches = Callable[[int, torch.device], Iterable[tuple[Any, Any]]]
# a plug-in's own DDP set-up, called once with the DistributedDataParallel-wrapped model: where
# it registers its communication hook (gradient compression, PowerSGD, its own all-reduce)
DdpSetup = Callable[[torch.nn.Module], None]
# a plug-in's own tensor-parallel plan: (model, 1-D "tp" DeviceMesh, sequence_parallel) -> None,
# applied in place with torch.distributed.tensor.parallel.parallelize_module
TpPlan = Callable[[torch.nn.Module, "DeviceMesh", bool], None]
# a plug-in's own pipeline split: (model, number of stage modules) -> the stage modules in order,
# each taking the previous one's output tensor (the first the model input, the last giving output)
PpSplit = Callable[[torch.nn.Module, int], list[torch.nn.Module]]


@dataclass
class ModelBundle:
    """A model ready to train on synthetic data.

    `make_batch(batch_size, device)` returns `(inputs, targets)` generated directly on `device`
    (no host I/O, so the timed loop measures compute and communication only). The model is
    called with `call_model(model, inputs)`: a tuple is unpacked into positional arguments, a
    mapping into keyword arguments, anything else is the single argument.
    """

    model: torch.nn.Module
    make_batch: MakeBatch
    loss_fn: LossFn
    kind: ModelKind
    tokens_per_sample: int | None  # seq_len for language models: tokens/s = samples/s * this
    input_shape: tuple[int, ...]  # per-sample input shape, shown by `torchscale list`
    conv_net: bool  # channels_last memory format is meaningful
    # optional, a plug-in's short form of the ParallelPlan its model class may declare instead
    # (torchscale/rank/models/parallel_plan.py; read only when it declares none): without either a
    # plug-in is reported infeasible for tensor / pipeline parallelism
    tp_plan: TpPlan | None = None
    pp_split: PpSplit | None = None
    # the same loss for cells that run eager, where it is leaner (the language models' token
    # loss a block at a time: torchscale/rank/models/token_loss.py); None: loss_fn
    eager_loss_fn: LossFn | None = None
    # optional, a plug-in's own batches (its DataLoader): with the default data.source synthetic
    # the data phase draws one per micro-batch, so its wait is measured; make_batch still gives
    # the shapes (FLOPs on the meta device, memory estimates) and the tp / pp cells' batch
    batches: Batches | None = None
    # optional, called with the DDP wrapper of DDP cells (no other strategy has one): a plug-in
    # benchmarks its own communication hook as it trains with it
    ddp_comm_hook: DdpSetup | None = None

    def step_loss(self, inputs: Any, targets: Any) -> torch.Tensor:
        """Forward pass and loss for one batch: the part of a training step the model defines."""
        return self.loss_fn(call_model(self.model, inputs), targets)


def model_args(inputs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Positional and keyword arguments by the ModelBundle convention (tuple, mapping, value)."""
    if isinstance(inputs, tuple):
        return inputs, {}
    if isinstance(inputs, Mapping):
        return (), dict(inputs)
    return (inputs,), {}


def call_model(model: torch.nn.Module, inputs: Any) -> Any:
    """Call `model` on `inputs` following the ModelBundle convention."""
    args, kwargs = model_args(inputs)
    return model(*args, **kwargs)
