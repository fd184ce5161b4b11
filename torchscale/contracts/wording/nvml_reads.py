"""Words for why a GPU's reading through NVML is missing (the burn's error counters in
rank/programs/burn_in.py): the query that failed and NVML's error name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

F = Mapping[str, Any]

PHRASES: dict[str, Callable[[F], str]] = {
    "nvml.cpu_no_counters": lambda f: "a CPU has no NVML error counters",
    "nvml.no_uuid": lambda f: f"this torch reports no UUID for the {f.get('what', 'GPU')}",
    "nvml.unavailable": lambda f: f"NVML unavailable: {f['error']}",
    "nvml.no_gpu_with_uuid": lambda f: f"NVML has no {f.get('what', 'GPU')} with UUID {f['uuid']}",
    "nvml.read_failed": lambda f: f["error"],
    "nvml.xid_not_read": lambda f: "Xid errors need NVML's event API or the kernel log: not read",
}
