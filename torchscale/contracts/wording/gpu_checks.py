"""Words for the findings of validate's GPU checks: NVLink, fabric, peer access,
what a node's GPUs agree on."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {}
