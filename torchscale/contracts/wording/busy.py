"""Words for the findings of a machine busy with other work beside a cell."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {}
