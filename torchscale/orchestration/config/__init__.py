"""Benchmark configuration: the schema, and loading it from YAML with overrides.

Layer 3 (orchestration) of docs/architecture.md: imports only from layers below and its own.
"""

from torchscale.orchestration.config.loader import load_config, parse_config
from torchscale.orchestration.config.schema import BenchConfig

__all__ = ["BenchConfig", "load_config", "parse_config"]
