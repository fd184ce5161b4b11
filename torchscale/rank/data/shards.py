"""The on-disk dataset of `data.source: disk`: shard files of random bytes, made once, cached.

Names, manifest fields, caching and disk-full handling: docs/data.md, "Disk shards". The shards
hold no structure (each model reads its own records: records.py), so one generated dataset
serves every model of a sweep. Each shard is written under a temporary name, fsynced and
renamed, and `manifest.json` last, so a manifest on disk always describes complete shards; the
random bytes are one PCG64 stream over all shards, in order.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from torchscale.contracts.atomic import write_text_atomic
from torchscale.contracts.errors import DataError, describe_os_error
from torchscale.contracts.finding import Finding
from torchscale.contracts.versioned import read_json_object
from torchscale.contracts.wording.spell import MB, megabytes

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
CHECK_BYTES = 2**20  # the checksum covers this much at each end of a shard
CHUNK_BYTES = 4 * 2**20  # generated and written this much at a time
DEFAULT_SEED = 0
FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def shard_name(index: int) -> str:
    return f"shard_{index:04d}.bin"


@dataclass(frozen=True)
class ShardSet:
    """A verified dataset: where it is, its shards, and whether this call generated it."""

    directory: Path
    shard_bytes: int
    names: tuple[str, ...]
    generated: bool
    note: str | None = None  # why an existing dataset was regenerated

    @property
    def paths(self) -> list[Path]:
        return [self.directory / name for name in self.names]

    @property
    def total_bytes(self) -> int:
        return self.shard_bytes * len(self.names)


def write_chunk(handle: IO[bytes], data: bytes) -> None:
    """Write one chunk of a shard (the seam tests replace to simulate a full disk)."""
    handle.write(data)


def checksum(path: Path, size: int) -> str:
    """blake2b of the first and last CHECK_BYTES of a file: cheap on any size, and catches a
    truncated, replaced or regenerated shard."""
    digest = hashlib.blake2b(digest_size=16)
    with path.open("rb") as handle:
        digest.update(handle.read(CHECK_BYTES))
        if size > CHECK_BYTES:
            handle.seek(max(CHECK_BYTES, size - CHECK_BYTES))
            digest.update(handle.read(CHECK_BYTES))
    digest.update(str(size).encode())
    return digest.hexdigest()


def _parameters(shard_mb: int, num_shards: int, seed: int) -> dict[str, int]:
    return {
        "format_version": FORMAT_VERSION,
        "shard_mb": shard_mb,
        "num_shards": num_shards,
        "seed": seed,
        "shard_bytes": shard_mb * MB,
    }


def read_manifest(directory: Path) -> dict[str, Any] | None:
    """The manifest's content, or None when there is none or it cannot be parsed."""
    return read_json_object(directory / MANIFEST)


def stale_reason(directory: Path, manifest: dict[str, Any], wanted: dict[str, int]) -> str | None:
    """Why the dataset described by `manifest` is not the one wanted (None: it is, verified)."""
    for key, value in wanted.items():
        if manifest.get(key) != value:
            return f"{key} was {manifest.get(key)!r}, now {value!r}"
    shards = manifest.get("shards")
    if not isinstance(shards, list) or len(shards) != wanted["num_shards"]:
        return "the manifest does not list every shard"
    for index, entry in enumerate(shards):
        name = shard_name(index)
        if not isinstance(entry, dict) or entry.get("name") != name:
            return f"the manifest's entry {index} is not {name}"
        path = directory / name
        try:
            size = path.stat().st_size
            if size != wanted["shard_bytes"]:
                return f"{name} has {size} bytes, not {wanted['shard_bytes']}"
            if checksum(path, size) != entry.get("checksum"):
                return f"{name} does not match its checksum"
        except OSError as exc:
            return f"{name}: {describe_os_error(exc)}"
    return None


def _free_bytes(directory: Path) -> int | None:
    try:
        return shutil.disk_usage(directory).free
    except OSError:
        return None


def _mb(count: int | None) -> str:
    return "?" if count is None else megabytes(count)


def _write_shard(path: Path, size: int, generator: Any) -> None:
    """One shard under a temporary name, fsynced, then renamed into place."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("wb") as handle:
            for start in range(0, size, CHUNK_BYTES):
                write_chunk(handle, generator.bytes(min(CHUNK_BYTES, size - start)))
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def generate(
    directory: Path,
    shard_mb: int,
    num_shards: int,
    seed: int = DEFAULT_SEED,
) -> list[dict[str, Any]]:
    """Write the shards and the manifest; on any OSError remove the shards this call wrote and
    raise DataError in one line. Returns the manifest's shard entries."""
    import numpy as np

    size = shard_mb * MB
    generator = np.random.Generator(np.random.PCG64(seed))
    written: list[Path] = []
    entries: list[dict[str, Any]] = []
    current = shard_name(0)
    try:
        for index in range(num_shards):
            current = shard_name(index)
            path = directory / current
            _write_shard(path, size, generator)
            written.append(path)
            entries.append({"name": current, "bytes": size, "checksum": checksum(path, size)})
        current = MANIFEST
        manifest = _parameters(shard_mb, num_shards, seed) | {"shards": entries}
        write_text_atomic(directory / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    except OSError as exc:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()
        free = _free_bytes(directory)
        needs = size * num_shards
        if exc.errno in FULL_ERRNOS:
            what = "disk full" if exc.errno == errno.ENOSPC else "disk quota exceeded"
            raise DataError(
                f"data.dir {directory}: {what} while writing {current} (needs {_mb(needs)} for "
                f"{num_shards} x {shard_mb} MB, {_mb(free)} free); partial shards removed"
            ) from None
        raise DataError(
            f"data.dir {directory}: cannot write {current}: {describe_os_error(exc)}; "
            "partial shards removed"
        ) from None
    return entries


def ensure_shards(
    directory: str | Path,
    shard_mb: int,
    num_shards: int,
    seed: int = DEFAULT_SEED,
) -> ShardSet:
    """The dataset under `directory`: reused when its manifest matches these parameters and
    every shard verifies, else (re)generated. Errors are DataError, one line."""
    root = Path(directory).expanduser()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"data.dir {root}: cannot create it: {describe_os_error(exc)}") from None
    if not root.is_dir():
        raise DataError(f"data.dir {root}: not a directory")
    wanted = _parameters(shard_mb, num_shards, seed)
    names = tuple(shard_name(i) for i in range(num_shards))
    manifest = read_manifest(root)
    note = None
    if manifest is not None:
        reason = stale_reason(root, manifest, wanted)
        if reason is None:
            return ShardSet(root, wanted["shard_bytes"], names, generated=False)
        note = f"data.dir {root}: regenerating the shards ({reason})"
        try:  # an interrupted regeneration must never look like a valid dataset
            (root / MANIFEST).unlink()
        except OSError as exc:
            raise DataError(
                f"data.dir {root}: cannot replace {MANIFEST}: {describe_os_error(exc)}"
            ) from None
    needs = wanted["shard_bytes"] * num_shards
    free = _free_bytes(root)
    # shards about to be replaced give their space back
    reclaimed = sum((root / n).stat().st_size for n in names if (root / n).is_file())
    if free is not None and free + reclaimed < needs:
        raise DataError(
            f"data.dir {root}: not enough space for {num_shards} x {shard_mb} MB shards "
            f"(needs {_mb(needs)}, {_mb(free + reclaimed)} free); nothing written"
        )
    generate(root, shard_mb, num_shards, seed)
    return ShardSet(root, wanted["shard_bytes"], names, generated=True, note=note)


def evict(paths: list[Path]) -> Finding | None:
    """Drop the files' pages from the page cache (POSIX_FADV_DONTNEED: no root needed), so the
    next reads come from the storage. Returns why it could not be done, or None."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return Finding(code="data.no_fadvise")
    failed = []
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
            try:
                advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        except OSError as exc:
            failed.append(f"{path.name}: {describe_os_error(exc)}")
    return Finding(code="data.cache_not_dropped", figures={"failed": failed}) if failed else None
