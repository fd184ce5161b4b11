"""The model zoo: built-in architectures in plain torch.nn, plug-in loading, and the registry.

Everything the train loop needs from a model comes as a ModelBundle from `build_model`; how it
splits for tensor and pipeline parallelism, from the ParallelPlan its class declares
(torchscale/models/parallel_plan.py, all that torchscale/parallel/ reads; docs/models.md).

Layer 2 (rank side) of docs/architecture.md: imports only from layers below and its own.
"""

from torchscale.models.bundle import ModelBundle, call_model
from torchscale.models.plugin import load_plugin
from torchscale.models.registry import (
    BUILTIN,
    ModelInfo,
    build_model,
    list_models,
    parameter_count,
)

__all__ = [
    "BUILTIN",
    "ModelBundle",
    "ModelInfo",
    "build_model",
    "call_model",
    "list_models",
    "load_plugin",
    "parameter_count",
]
