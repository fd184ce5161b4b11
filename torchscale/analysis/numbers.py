"""A value read from a results table or file, as a number to compute with: the one reading
the analyses and the report apply (a table cell may hold None, NaN, text or a bool).
"""

from __future__ import annotations

import math
from typing import Any


def finite(value: Any) -> float | None:
    """A finite float, or None (None, booleans, NaN, infinities, anything float() refuses)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
