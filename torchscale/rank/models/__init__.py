"""The model zoo: built-in architectures in plain torch.nn, plug-in loading, and the registry.

Everything the train loop needs from a model comes as a ModelBundle from `build_model`; how it
splits for tensor and pipeline parallelism, from the ParallelPlan its class declares
(torchscale/rank/models/parallel_plan.py, all that torchscale/rank/parallel/ reads; docs/models.md).

Each built-in model's facts (its options and defaults, its builder, what `torchscale list`
shows) are its spec in torchscale/contracts/model_specs/, which imports no torch. The names below
load on first use (PEP 562): importing one submodule does not build the registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchscale.contracts.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from torchscale.rank.models.bundle import ModelBundle, call_model
    from torchscale.rank.models.plugin import load_plugin
    from torchscale.rank.models.registry import build_model, parameter_count

# exported name -> the submodule defining it
_SOURCES = {
    "ModelBundle": "bundle",
    "call_model": "bundle",
    "load_plugin": "plugin",
    "build_model": "registry",
    "parameter_count": "registry",
}

__all__ = [
    "ModelBundle",
    "build_model",
    "call_model",
    "load_plugin",
    "parameter_count",
]

__getattr__ = lazy_exports(__name__, _SOURCES)  # each submodule imports torch: on first use
