"""glibc malloc settings for CPU ranks: keep freed memory for the next step. With glibc's
defaults a step's freed activations go back to the kernel and are faulted in again every step
(docs/models.md, "The workload: fast by default, faithful on request"; measured in
docs/measured.md). Memory the process freed stays mapped for reuse: its RSS stays near its
peak instead of shrinking, its peak unchanged.

`launcher.cpu_malloc: default` leaves glibc as it is. A threshold the user set (in
GLIBC_TUNABLES or as MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_) is theirs: only the ones
not set are added. Other C libraries ignore the variable; the rank records which libc ran.
"""

from __future__ import annotations

from collections.abc import Mapping

from torchscale.contracts.wording.spell import MIB

TUNABLES_VAR = "GLIBC_TUNABLES"
# tunable -> (value, the older environment variable that sets the same threshold)
REUSE_TUNABLES: dict[str, tuple[int, str]] = {
    "glibc.malloc.mmap_threshold": (32 * MIB, "MALLOC_MMAP_THRESHOLD_"),
    "glibc.malloc.trim_threshold": (1024 * MIB, "MALLOC_TRIM_THRESHOLD_"),
}


def _set_tunables(value: str) -> set[str]:
    """The tunable names a GLIBC_TUNABLES value sets (`name=value` pairs joined by ':')."""
    return {pair.split("=", 1)[0].strip() for pair in value.split(":") if "=" in pair}


def malloc_reuse_env(env: Mapping[str, str]) -> dict[str, str]:
    """What to set on top of `env` (the rank's environment before it) so that glibc keeps
    freed memory: GLIBC_TUNABLES with the thresholds the user did not set appended to theirs;
    nothing when they set both."""
    current = env.get(TUNABLES_VAR, "")
    already = _set_tunables(current)
    added = [
        f"{name}={value}"
        for name, (value, legacy) in REUSE_TUNABLES.items()
        if name not in already and legacy not in env
    ]
    if not added:
        return {}
    return {TUNABLES_VAR: ":".join([p for p in current.split(":") if p.strip()] + added)}
