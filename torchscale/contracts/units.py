"""Byte sizes as people write them: '64K', '1G' (nccl-tests: powers of 1024), '1GiB', '1GB'.

A contract of the lowest layer (docs/architecture.md): the config schema, the comm sweep and the
CLI read sizes the same way. `-b 8 -e 1G -f 2` in nccl-tests means 8 bytes to 2^30 bytes: its
K, M and G are powers of 1024, and so are ours, so a command line copied from nccl-tests sweeps
the same sizes; KiB/MiB/GiB say the same explicitly, and KB/MB/GB are powers of 1000 for those
who write SI units on purpose.
"""

from __future__ import annotations

import re

from torchscale.contracts.errors import UsageError

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
