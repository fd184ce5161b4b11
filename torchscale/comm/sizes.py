"""Message sizes as nccl-tests writes and steps through them.

`-b 8 -e 1G -f 2` in nccl-tests means 8 bytes to 2^30 bytes, doubling: its K, M and G are powers
of 1024. We read them the same way, so a command line copied from nccl-tests sweeps the same
sizes; KiB/MiB/GiB say the same explicitly, and KB/MB/GB are powers of 1000 for those who write
SI units on purpose.
"""

from __future__ import annotations

import re

from torchscale.errors import UsageError

MAX_SIZES = 64  # a ladder longer than this is almost certainly a typo in the step factor
_UNITS = {
    "": 1,
    "b": 1,
    "k": 2**10,
    "m": 2**20,
    "g": 2**30,
    "t": 2**40,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
}
_SIZE = re.compile(r"^\s*(\d+)\s*([A-Za-z]*)\s*$")


def parse_bytes(text: str, option: str = "size") -> int:
    """'8', '64K', '1G' (nccl-tests: powers of 1024), '1GiB', '1GB' (10^9) -> bytes."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise UsageError(
            f"{option} {text!r}: expected a whole number of bytes with an optional unit "
            "(K, M, G as in nccl-tests: powers of 1024; KiB/MiB/GiB; KB/MB/GB: powers of 1000)"
        )
    value = int(match.group(1)) * _UNITS[unit]
    if value <= 0:
        raise UsageError(f"{option} {text!r}: must be positive")
    return value


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
