"""A GPU's power limit as NVML enforces it, beside the limit its board ships with.

Cloud providers often cap each GPU's power below the SKU's default (an H100 SXM at 500 W of
its 700 W): every GPU of such a node is healthy and still below the SKU's matmul bar, and only
the limits tell that from a node that is slow for another reason. NVML gives both, in
milliwatts: `nvmlDeviceGetEnforcedPowerLimit` (the limit in force, the lowest of every
constraint: nvidia-smi -pl, the in-band and out-of-band caps) and
`nvmlDeviceGetPowerManagementDefaultLimit` (the board's default). A limit that cannot be read
says why; it is never guessed.

Shared by the ranks that read the limits (rank/programs/perf.py) and the host that judges them.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from torchscale.contracts.finding import Finding
from torchscale.contracts.nvml import call, nvml_error_name
from torchscale.contracts.versioned import Record


class PowerLimit(Record):
    """One GPU's enforced and default power limits (watts), or why they are unknown."""

    enforced_w: float | None = Field(default=None, description="the limit NVML enforces now")
    default_w: float | None = Field(default=None, description="the board's default limit")
    unavailable: Finding | None = Field(
        default=None,
        description="why a limit is unknown: a code and its figures (contracts/wording/"
        "cell_telemetry.py)",
    )

    @property
    def capped(self) -> bool | None:
        """Whether the GPU runs under a limit below its default; None: not known."""
        if self.enforced_w is None or self.default_w is None:
            return None
        return self.enforced_w < self.default_w


def _failed(code: str, exc: BaseException) -> Finding:
    return Finding(code=code, figures={"error": nvml_error_name(exc)})


def power_limit_of(pynvml: Any, handle: Any) -> PowerLimit:
    """Both limits of the GPU behind an NVML handle; a failed query says which and why."""
    queries = ("nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetPowerManagementDefaultLimit")
    read = {query: call(getattr(pynvml, query), handle) for query in queries}
    errors = {query: error for query, (_, error) in read.items() if error is not None}
    enforced, default = (value for value, _ in read.values())
    return PowerLimit(
        enforced_w=int(enforced) / 1000 if enforced is not None else None,
        default_w=int(default) / 1000 if default is not None else None,
        unavailable=Finding(code="power_limit.queries_failed", figures={"errors": errors})
        if errors
        else None,
    )


def read_power_limit(uuids: Sequence[str]) -> PowerLimit:
    """The power limits of the GPU NVML knows by one of `uuids` (the spellings of the UUID
    torch reports for this rank's GPU: rank/telemetry/nvml_source.uuid_candidates); never
    raises. NVML is initialised and shut down here (its init is reference-counted)."""
    if not uuids:
        return PowerLimit(unavailable=Finding(code="power_limit.no_torch_uuid"))
    try:
        pynvml: Any = importlib.import_module("pynvml")
        pynvml.nvmlInit()
    except Exception as exc:  # no nvidia-ml-py, no driver
        return PowerLimit(unavailable=_failed("power_limit.nvml_unavailable", exc))
    try:
        for uuid in uuids:
            handle, _ = call(pynvml.nvmlDeviceGetHandleByUUID, uuid)
            if handle is not None:
                return power_limit_of(pynvml, handle)
        missing = Finding(code="power_limit.no_gpu_with_uuid", figures={"uuid": uuids[0]})
        return PowerLimit(unavailable=missing)
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def stored_reason(limit: PowerLimit | None) -> Any:
    """Why a limit is unknown as a finding's figure (a finding's dump, stored words or None),
    worded by `contracts.wording.why(reason_of(...))`."""
    reason = limit.unavailable if limit is not None else None
    return reason.model_dump() if isinstance(reason, Finding) else reason or None


def node_power_cap(limits: Sequence[PowerLimit | None]) -> tuple[bool | None, dict[str, Any]]:
    """Whether every GPU of a group runs capped below its default (None: unknown), and the
    figures a finding says it by (contracts/wording/validate_measured.py `power_words`): the
    enforced and default limits read, how many GPUs are capped, or how many were not read and
    why."""
    if not limits:
        return None, {"unread": 0, "of": 0}
    missing = [limit for limit in limits if limit is None or limit.capped is None]
    if missing:
        first = missing[0]
        return None, {"unread": len(missing), "of": len(limits), "why": stored_reason(first)}
    known = [limit for limit in limits if limit is not None]
    figures: dict[str, Any] = {
        "enforced_w": [limit.enforced_w for limit in known],
        "default_w": [limit.default_w for limit in known],
        "capped_gpus": sum(bool(limit.capped) for limit in known),
        "of": len(known),
    }
    return figures["capped_gpus"] == len(known), figures
