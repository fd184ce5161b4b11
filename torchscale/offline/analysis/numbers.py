"""A value read from a results table or file, as a number to compute with: the one reading
the analyses and the report apply (a table cell may hold None, NaN, text or a bool).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def finite(value: Any) -> float | None:
    """A finite float, or None (None, booleans, NaN, infinities, anything float() refuses)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def parse_repeats(value: Any) -> list[float]:
    """Per-repeat figures from a cells-table value: a ';'-joined string (as in
    `samples_per_s_repeats`) or a sequence; missing values and non-numbers give none."""
    if isinstance(value, str):
        parts: Sequence[Any] = [p for p in value.split(";") if p.strip()]
    elif isinstance(value, (list, tuple, np.ndarray)):
        parts = list(value)
    else:
        return []
    numbers = [finite(p) for p in parts]
    return [n for n in numbers if n is not None]
