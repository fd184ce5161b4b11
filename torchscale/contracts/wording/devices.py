"""How the report names a GPU: as the driver names it, NVIDIA's prefix dropped ('H100 80GB
HBM3'), so every surface calls one device by one name."""

from __future__ import annotations

import re

_VENDOR_PREFIX = re.compile(r"^NVIDIA\s+", re.IGNORECASE)


def gpu_name(driver_name: str) -> str | None:
    """'NVIDIA H100 80GB HBM3' -> 'H100 80GB HBM3'; None for a name that is only the prefix."""
    return _VENDOR_PREFIX.sub("", driver_name).strip() or None
