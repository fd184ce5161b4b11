"""Benchmark configuration: the schema, and loading it from YAML with overrides.

The loader and the schema (pydantic models: a tenth of a second to build) are imported on
first use, so what needs only this node's hardware (`config.hardware`) does not pay for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchscale.orchestration.config.loader import load_config, parse_config
    from torchscale.orchestration.config.schema import BenchConfig

__all__ = ["BenchConfig", "load_config", "parse_config"]

_HOME_OF = {"BenchConfig": "schema", "load_config": "loader", "parse_config": "loader"}


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
