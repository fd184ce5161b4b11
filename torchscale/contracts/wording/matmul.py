"""Words for the findings of validate --level perf: a matmul figure against its
SKU's bar (orchestration/validate/reference.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {}
