"""How every surface writes the upper bound of a share that is inside its noise ('< 0.1 %'):
rounded up at the shown precision and never below one unit of it, since '< 0.0 %' reads as a
share below zero (a real GPU trace's data wait: microseconds of a 34 ms step)."""

from __future__ import annotations

import math


def share_bound(high: float, places: int = 1) -> str:
    """`high` (a fraction) in percent at `places` decimals, rounded up, at least one unit."""
    unit = 10.0**-places
    units = math.ceil(round(high * 100 / unit, 6))  # round first: 4.2 stays 4.2, not 4.3
    return f"{max(1, units) * unit:.{places}f}"
