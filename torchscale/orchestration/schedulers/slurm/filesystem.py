"""Is the results directory on a filesystem every node sees? Read from /proc/mounts.

Only a hint: a local disk is reported by name (ext4, xfs, tmpfs, overlay ...), a network or
cluster filesystem is not; anything unknown is given the benefit of the doubt.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from torchscale.orchestration.launch.diagnose import read_text

MOUNTS = Path("/proc/mounts")
LOCAL_TYPES = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs", "vfat", "ramfs"}
)


@dataclass(frozen=True)
class Mount:
    point: str
    fstype: str


def mount_of(path: Path, mounts_text: str) -> Mount | None:
    """The mount holding `path` (the longest mount point that is a prefix of it)."""
    target = str(path)
    best: Mount | None = None
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        point = parts[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) > len(best.point)):
            best = Mount(point, parts[2])
    return best


def local_filesystem_warning(path: Path) -> str | None:
    """A warning when `path` looks node-local; None when shared or unknown."""
    found = mount_of(path.resolve(), read_text(MOUNTS))  # unreadable: "", no mount
    if found is None or found.fstype not in LOCAL_TYPES:
        return None
    return (
        f"the results directory {path} is on {found.fstype} ({found.point}), which looks "
        "local to this host: every node must see it (NFS, Lustre, GPFS ...), or cells on other "
        "nodes cannot read their specs or write their results"
    )
