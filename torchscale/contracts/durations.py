"""Durations as people type them on a command line: `30s`, `2m`, `1h`, `45` (seconds)."""

from __future__ import annotations

import math
import re

from torchscale.contracts.errors import UsageError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|m|min|h)?\s*$", re.IGNORECASE)
_SECONDS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_duration(text: str, *, option: str = "--duration") -> float:
    """Seconds in `text`; a bare number is seconds. One clear line when it is not a duration."""
    match = _DURATION.match(text)
    if match is None:
        raise UsageError(
            f"{option}: '{text}' is not a duration; use e.g. 30s, 2m, 1h or 45 (seconds)"
        )
    value = float(match.group(1)) * _SECONDS[(match.group(2) or "s").lower()]
    if value <= 0 or not math.isfinite(value):
        raise UsageError(f"{option}: '{text}' must be longer than 0 s")
    return value
