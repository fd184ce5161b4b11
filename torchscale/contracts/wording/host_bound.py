"""Words for the findings of a GPU cell whose step is host time (the GPU's busy share)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {}
