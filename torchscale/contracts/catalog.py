"""The names a config may refer to, which cells and results carry too:
built-in models and the options each one accepts, precisions, strategies, pipeline schedules,
hybrid layouts and collectives (one source for each; what each collective is, for the comm
sweep, the nccl-tests importer and the trace analyses: collective_facts.py).

The built-in models and their options are read from their specs (torchscale/contracts/model_specs/),
which import no torch, so validating a config never does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal, get_args

from torchscale.contracts.model_specs.registry import BUILTIN
from torchscale.contracts.model_specs.shared_options import (
    PUBLISHED,
    SPEED_DEFAULTS,
    WORKLOAD_OPTIONS,
)

# name -> architecture options a config may set under `models: [{name: ..., options: {...}}]`,
# in registry order (torchscale/contracts/model_specs/registry.py)
BUILTIN_MODELS: dict[str, frozenset[str]] = {name: spec.options for name, spec in BUILTIN.items()}

# the models that take the workload options (model_specs/shared_options.py)
WORKLOAD_MODELS = frozenset(
    name for name, options in BUILTIN_MODELS.items() if options >= WORKLOAD_OPTIONS
)

# "package.module:factory" plugs in a user model (the factory returns model, batch maker, loss)
PLUGIN_MODEL_PATTERN = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")

# the names a config, a cell and a result share: each a type, and its values as a tuple
Precision = Literal["fp32", "amp", "bf16"]
Strategy = Literal["ddp", "fsdp", "tp", "pp", "hybrid"]
Schedule = Literal["gpipe", "1f1b", "interleaved_1f1b"]
HybridLayout = Literal["fsdp_tp", "ddp_pp"]
Collective = Literal[
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv"
]
PRECISIONS: tuple[Precision, ...] = get_args(Precision)
STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)
COLLECTIVES: tuple[Collective, ...] = get_args(Collective)


def faithful_conflict(name: str, options: Mapping[str, object]) -> str | None:
    """Why `options` contradict themselves: `faithful: true` fixes the options it names."""
    if name not in WORKLOAD_MODELS or not options.get("faithful"):
        return None
    clash = sorted(key for key in PUBLISHED if key in options)
    if not clash:
        return None
    return (
        f"model '{name}': faithful: true is the model as published "
        f"({', '.join(f'{k} {PUBLISHED[k]}' for k in PUBLISHED)}); "
        f"drop {' and '.join(clash)} or faithful"
    )


def workload_options(name: str, options: Mapping[str, object]) -> dict[str, object]:
    """The model options a cell trains with: `options` with the speed-first (or, under
    `faithful: true`, the published) values of the workload options filled in, and
    `faithful` itself folded into them. A cell's definition and its worker both use this,
    so two configs that build the same model give the same cell, and a default that changes
    changes the cells it shapes (their earlier results are not resumed as the new workload)."""
    if name not in WORKLOAD_MODELS:
        return dict(options)
    base = PUBLISHED if options.get("faithful", False) else SPEED_DEFAULTS
    return {**base, **{key: value for key, value in options.items() if key != "faithful"}}


def is_plugin_model(name: str) -> bool:
    """True when `name` names a user factory rather than a built-in model."""
    return bool(PLUGIN_MODEL_PATTERN.match(name))
