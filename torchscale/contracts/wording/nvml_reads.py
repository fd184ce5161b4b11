"""Words for why a GPU's reading through NVML is missing (the burn's error counters in
rank/programs/burn_in.py): the query that failed and NVML's error name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases

F = Mapping[str, Any]

PHRASES: Phrases = {
    "nvml.cpu_no_counters": "a CPU has no NVML error counters",
    "nvml.no_uuid": lambda f: f"this torch reports no UUID for the {f.get('what', 'GPU')}",
    "nvml.unavailable": "NVML unavailable: {error}",
    "nvml.no_gpu_with_uuid": lambda f: f"NVML has no {f.get('what', 'GPU')} with UUID {f['uuid']}",
    "nvml.read_failed": "{error}",
    "nvml.xid_not_read": "Xid errors need NVML's event API or the kernel log: not read",
}
