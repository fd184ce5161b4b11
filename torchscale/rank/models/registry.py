"""Building a built-in model from its spec, or a plug-in.

Each built-in model's facts are its spec (torchscale/contracts/model_specs/): its options and their
defaults, and its builder as a "module:function" reference, imported here, on the rank side,
the first time the model is built, so reading a spec never imports torch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, cast

import torch

from torchscale.contracts.catalog import faithful_conflict, is_plugin_model, workload_options
from torchscale.contracts.errors import ModelError
from torchscale.contracts.model_specs.registry import BUILTIN
from torchscale.contracts.model_specs.spec import BuiltinModelSpec
from torchscale.contracts.suggest import did_you_mean
from torchscale.rank.models.bundle import ModelBundle
from torchscale.rank.models.option_values import positive_int, probability, switch
from torchscale.rank.models.plugin import load_plugin


def build_model(
    name: str,
    options: Mapping[str, Any] | None = None,
    *,
    seq_len: int | None = None,
    image_size: int | None = None,
) -> ModelBundle:
    """Build a built-in model or a `package.module:factory` plug-in.

    `seq_len`/`image_size` are the config-wide data settings: they apply to the models that
    take that option and are ignored by the others; a model's own `options` win over them.
    Plug-ins receive only their `options`. Builds on the current default device, so
    `with torch.device("meta"):` builds without allocating memory.
    """
    options = dict(options or {})
    spec = BUILTIN.get(name)
    if spec is None:
        if is_plugin_model(name):
            return load_plugin(name, options)
        hint = did_you_mean(name, BUILTIN)
        hint = hint if hint.startswith(" (did you mean") else ""  # the list follows anyway
        raise ModelError(
            f"unknown model '{name}'{hint}; built-in models: {', '.join(BUILTIN)}; "
            "or give a plug-in as 'package.module:factory'"
        )
    unknown = sorted(set(options) - spec.options)
    if unknown:
        raise ModelError(
            f"model '{name}' does not take option(s) {', '.join(unknown)}; "
            f"it takes: {', '.join(sorted(spec.options))}"
        )
    resolved: dict[str, Any] = dict(spec.defaults)
    for key, value in (("seq_len", seq_len), ("image_size", image_size)):
        if value is not None and key in resolved:
            resolved[key] = value
    if "faithful" in options:  # checked before workload_options folds it into the others
        switch(name, "faithful", options["faithful"])
    conflict = faithful_conflict(name, options)
    if conflict is not None:
        raise ModelError(conflict)
    resolved.update(workload_options(name, options))
    for key, value in resolved.items():
        resolved[key] = _checker(spec.defaults[key])(name, key, value)
    return builder_of(spec)(**resolved)


def builder_of(spec: BuiltinModelSpec) -> Callable[..., ModelBundle]:
    """The function a spec's builder reference names, imported now (it imports torch)."""
    module, _, function = spec.builder.partition(":")
    found = getattr(importlib.import_module(module), function, None)
    if not callable(found):
        raise ModelError(f"model '{spec.name}': its builder '{spec.builder}' is not a function")
    return cast(Callable[..., ModelBundle], found)


def _checker(default: Any) -> Callable[[str, str, Any], Any]:
    """The value check of an option, by the type of its default."""
    if isinstance(default, bool):
        return switch
    return probability if isinstance(default, float) else positive_int


def parameter_count(model: torch.nn.Module) -> int:
    """Parameters of `model`; a tensor shared by two modules (tied weights) counts once."""
    return sum(p.numel() for p in model.parameters())
