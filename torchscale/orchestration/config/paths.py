"""Paths into nested config data, and how they are written for people."""

from __future__ import annotations

Path_ = tuple[str | int, ...]


def render_path(path: Path_) -> str:
    """('training', 'precision', 0) -> 'training.precision[0]'."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
