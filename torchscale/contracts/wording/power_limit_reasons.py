"""Why a GPU's power limit is unknown (`PowerLimit.unavailable`, contracts/power_limit.py):
the codes the readers store and their words."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording.unavailable import reason_of, why


def queries(f: Mapping[str, Any]) -> str:
    return "; ".join(f"{query}: {error}" for query, error in f["errors"].items())


PHRASES: Phrases = {
    "power_limit.queries_failed": queries,
    "power_limit.no_torch_uuid": "this torch reports no UUID for the GPU",
    "power_limit.nvml_unavailable": "NVML unavailable: {error}",
    "power_limit.no_gpu_with_uuid": "NVML has no GPU with UUID {uuid}",
    "power_limit.device_undescribed": "torch cannot describe {device}: {error}",
    "power_limit.no_pynvml": "pynvml is not importable ({error}); pip install nvidia-ml-py",
    "power_limit.nvml_init_failed": "nvmlInit failed: {error}",
    "power_limit.uuid_not_found": "no NVML device with torch's UUID ({tried:list;})",
}


def limit_why(stored: Any) -> str:
    """A finding's figure of why a limit is unknown (`power_limit.stored_reason`) in words."""
    return str(why(reason_of(stored))) if stored else "not read"
