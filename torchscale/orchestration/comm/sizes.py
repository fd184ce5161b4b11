"""Message sizes as nccl-tests steps through them (sizes as written:
torchscale/contracts/units.py)."""

from __future__ import annotations

from torchscale.contracts.errors import UsageError

MAX_SIZES = 64  # a ladder longer than this is almost certainly a typo in the step factor


def size_ladder(min_bytes: int, max_bytes: int, step_factor: int) -> list[int]:
    """nccl-tests' sizes: min, min x f, min x f^2, ... up to max (max itself only when hit)."""
    if min_bytes <= 0 or max_bytes <= 0:
        raise UsageError("--min-bytes and --max-bytes must be positive")
    if min_bytes > max_bytes:
        raise UsageError(f"--min-bytes ({min_bytes}) is larger than --max-bytes ({max_bytes})")
    if step_factor < 2:
        raise UsageError(f"--step-factor must be at least 2, got {step_factor}")
    sizes = [min_bytes]
    while sizes[-1] * step_factor <= max_bytes:
        sizes.append(sizes[-1] * step_factor)
        if len(sizes) > MAX_SIZES:
            raise UsageError(f"more than {MAX_SIZES} sizes from --min-bytes to --max-bytes")
    return sizes
