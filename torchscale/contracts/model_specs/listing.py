"""The built-in models as `torchscale list --json` prints them: one row per spec, nothing built,
so the list answers without importing torch."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from torchscale.contracts.model_specs.registry import BUILTIN
from torchscale.contracts.model_specs.spec import BuiltinModelSpec


def rows() -> list[dict[str, Any]]:
    """One row per built-in model, in registry order."""
    return [row(spec) for spec in BUILTIN.values()]


def row(spec: BuiltinModelSpec) -> dict[str, Any]:
    """The JSON row of one model: its name and facts, the descriptive keys first."""
    measured = asdict(spec.measured)
    first = ("kind", "parameters", "input_shape", "tokens_per_sample")
    return {
        "name": spec.name,
        "family": spec.family,
        **{key: measured.pop(key) for key in first},
        "options": dict(spec.defaults),
        **measured,
        "description": spec.description,
        "strategies": list(spec.strategies),
    }
