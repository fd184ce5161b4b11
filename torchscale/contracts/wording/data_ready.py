"""The line a sweep prints when its dataset is ready: how many shards or images, how big."""

from __future__ import annotations

from torchscale.contracts.wording.spell import as_set, count, megabytes


def disk_ready(verb: str, shards: int, shard_mb: int, total_bytes: int, directory: object) -> str:
    """'data: generated: 4 shards x 64 MB (256 MB) under /data'."""
    return (
        f"data: {verb}: {shards} shards x {as_set(shard_mb, 'MB')} ({megabytes(total_bytes)}) "
        f"under {directory}"
    )


def cifar_ready(images: int, path: object, file_bytes: int) -> str:
    """'data: CIFAR-100 50,000 training images from <path> (161 MB)'."""
    return f"data: CIFAR-100 {count(images)} training images from {path} ({megabytes(file_bytes)})"
