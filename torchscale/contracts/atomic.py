"""Atomic file writes: a reader sees the old file or the new one, never half of one.

A finished measurement must survive a crash or Ctrl-C at any instant, so every result file is
written to a temporary file in the same directory, flushed to disk, then renamed over the target.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write `text` to `path` atomically (temp file + fsync + rename); create parent dirs."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Write `data` to `path` atomically (temp file + fsync + rename); create parent dirs."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        Path(tmp_name).chmod(0o666 & ~_umask())  # mkstemp gives 0600: results are for sharing
        Path(tmp_name).replace(target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            Path(tmp_name).unlink()
        raise
    return target
