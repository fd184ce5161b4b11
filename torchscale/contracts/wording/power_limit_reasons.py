"""Why a GPU's power limit is unknown (`PowerLimit.unavailable`, contracts/power_limit.py):
the codes the readers store and their words."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.wording.unavailable import reason_of, why


def _queries(f: Mapping[str, Any]) -> str:
    return "; ".join(f"{query}: {error}" for query, error in f["errors"].items())


PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "power_limit.queries_failed": _queries,
    "power_limit.no_torch_uuid": lambda f: "this torch reports no UUID for the GPU",
    "power_limit.nvml_unavailable": lambda f: f"NVML unavailable: {f['error']}",
    "power_limit.no_gpu_with_uuid": lambda f: f"NVML has no GPU with UUID {f['uuid']}",
    "power_limit.device_undescribed": lambda f: (
        f"torch cannot describe {f['device']}: {f['error']}"
    ),
    "power_limit.no_pynvml": lambda f: (
        f"pynvml is not importable ({f['error']}); pip install nvidia-ml-py"
    ),
    "power_limit.nvml_init_failed": lambda f: f"nvmlInit failed: {f['error']}",
    "power_limit.uuid_not_found": lambda f: (
        f"no NVML device with torch's UUID ({'; '.join(f['tried'])})"
    ),
}


def limit_why(stored: Any) -> str:
    """A finding's figure of why a limit is unknown (`power_limit.stored_reason`) in words."""
    return str(why(reason_of(stored))) if stored else "not read"
