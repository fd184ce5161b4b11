"""Benchmark configuration: the schema, and loading it from YAML with overrides.

The loader and the schema (pydantic models: a tenth of a second to build) are imported on
first use, so what needs only this node's hardware (`config.hardware`) does not pay for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchscale.contracts.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from torchscale.orchestration.config.loader import load_config, parse_config
    from torchscale.orchestration.config.schema import BenchConfig

__all__ = ["BenchConfig", "load_config", "parse_config"]

__getattr__ = lazy_exports(
    __name__, {"BenchConfig": "schema", "load_config": "loader", "parse_config": "loader"}
)
