"""Words for the findings of a cell's noise: too few repeats to judge, or a figure that varies."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {}
