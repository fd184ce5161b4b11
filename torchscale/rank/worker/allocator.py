"""CUDA caching-allocator figures of the measured windows, from torch.cuda.memory_stats.

Pure: takes the stats read before and after the windows (outside them), with the peaks reset
before the windows. Fragmentation is `1 - allocated_bytes.all.peak / reserved_bytes.all.peak`,
beside `inactive_split_bytes.all.peak`; why that definition (reserved memory does not shrink
inside the windows, so the two peaks compare like for like): docs/telemetry.md, "CUDA allocator
figures".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AllocatorStats:
    alloc_retries: int  # cudaMalloc retries after freeing the cache, during the windows
    oom_count: int  # out-of-memory errors raised during the windows
    fragmentation: float | None  # None when nothing was reserved
    inactive_split_peak_bytes: int


def _int(stats: Mapping[str, Any], key: str) -> int:
    return int(stats.get(key, 0) or 0)


def allocator_stats(before: Mapping[str, Any], after: Mapping[str, Any]) -> AllocatorStats:
    """The windows' figures: counters as differences, peaks as read after the windows."""
    allocated = _int(after, "allocated_bytes.all.peak")
    reserved = _int(after, "reserved_bytes.all.peak")
    return AllocatorStats(
        alloc_retries=_int(after, "num_alloc_retries") - _int(before, "num_alloc_retries"),
        oom_count=_int(after, "num_ooms") - _int(before, "num_ooms"),
        fragmentation=1 - allocated / reserved if reserved > 0 else None,
        inactive_split_peak_bytes=_int(after, "inactive_split_bytes.all.peak"),
    )


def merge_windows(windows: list[AllocatorStats]) -> AllocatorStats:
    """Several measured windows' figures as one (each window's peaks were reset before it, so
    that the no_sync windows interleaved between them count in none): retries and OOMs
    summed, fragmentation and stranded bytes the worst window's."""
    fragmentation = [w.fragmentation for w in windows if w.fragmentation is not None]
    return AllocatorStats(
        alloc_retries=sum(w.alloc_retries for w in windows),
        oom_count=sum(w.oom_count for w in windows),
        fragmentation=max(fragmentation) if fragmentation else None,
        inactive_split_peak_bytes=max((w.inactive_split_peak_bytes for w in windows), default=0),
    )
