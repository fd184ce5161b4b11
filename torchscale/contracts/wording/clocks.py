"""Words for the findings of GPU clocks over the measured windows (contracts/gpu_clocks.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {}
