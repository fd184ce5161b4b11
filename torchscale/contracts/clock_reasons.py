"""NVML clocks-event ("throttle") reasons: the bit table, their names, and reading the mask.

One table for `torchscale validate` (clocks held down now) and the telemetry sampler (clocks
held down during a window). Names are nvml.h's, so they match `nvidia-smi -q -d PERFORMANCE`.
"""

from __future__ import annotations

from typing import Any

from torchscale.contracts.gpu_clocks import HARDWARE_SLOWDOWNS, POWER_CAP
from torchscale.contracts.nvml import nvml_error_name

# NVML clock event ("throttle") reason bits; names as in nvml.h
CLOCK_REASONS: dict[int, str] = {
    0x1: "GpuIdle",
    0x2: "ApplicationsClocksSetting",
    0x4: "SwPowerCap",
    0x8: "HwSlowdown",
    0x10: "SyncBoost",
    0x20: "SwThermalSlowdown",
    0x40: "HwThermalSlowdown",
    0x80: "HwPowerBrakeSlowdown",
    0x100: "DisplayClockSetting",
}
# bits the telemetry leaves out: idle between kernels and administrator-set clocks say nothing
# about throttling during training
IGNORED_REASONS = frozenset({"GpuIdle", "ApplicationsClocksSetting"})
# the reasons that may hold the clocks below what the workload asks for: heat, hardware, the
# power brake, and the power limit (SwPowerCap: a slowdown only under a site cap or at lowered
# clocks, contracts/gpu_clocks.judge_clocks)
SLOWDOWN_REASONS = frozenset({POWER_CAP, *HARDWARE_SLOWDOWNS})


def decode_clock_reasons(mask: int) -> list[str]:
    """Names of the bits set in an NVML clocks-event-reasons mask (unknown bits in hex)."""
    names = [name for bit, name in CLOCK_REASONS.items() if mask & bit]
    unknown = mask & ~sum(CLOCK_REASONS)
    if unknown:
        names.append(hex(unknown))
    return names


# the query under its current name (driver >= 535), then the deprecated one with the same bits
CLOCK_REASON_QUERIES = (
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
)
# errors after which the other name may still answer
FALLBACK_ERRORS = ("NVMLError_FunctionNotFound", "NVMLError_NotSupported")


def read_clock_reasons(pynvml: Any, handle: Any) -> tuple[int | None, str | None, str | None]:
    """(mask, the query name that answered, None), or (None, None, why neither name answered)
    in words (`clock_reason_errors`)."""
    mask, query, errors = clock_reason_errors(pynvml, handle)
    why = "; ".join(f"{name}: {error}" for name, error in errors.items())
    return mask, query, why if mask is None else None


def clock_reason_errors(pynvml: Any, handle: Any) -> tuple[int | None, str | None, dict[str, str]]:
    """(mask, the query name that answered, {}), or (None, None, each name's error).

    nvidia-ml-py defines nvmlDeviceGetCurrentClocksEventReasons even when the driver lacks the
    symbol: the call then raises NVMLError_FunctionNotFound, and only the old "throttle" name
    works. The binding may also lack either name (old bindings the new, future ones the old).
    """
    fallback = tuple(
        cls for cls in (getattr(pynvml, n, None) for n in FALLBACK_ERRORS) if isinstance(cls, type)
    )
    errors: dict[str, str] = {}
    for name in CLOCK_REASON_QUERIES:
        query = getattr(pynvml, name, None)
        if query is None:
            errors[name] = "not in this pynvml"
            continue
        try:
            return int(query(handle)), name, {}
        except Exception as exc:
            errors[name] = nvml_error_name(exc)
            if not isinstance(exc, fallback):
                break  # a real failure (GPU lost, ...): the other name would not help
    return None, None, errors
