"""The one name of each peak-memory figure, so no label means two things in one report (the
first screen said "peak memory" for the allocator's reserved peak while the strategies table
said it for the allocated one). `allocated`: torch.cuda.max_memory_allocated, what tensors
held at once; `reserved`: torch.cuda.max_memory_reserved, what the caching allocator held
(what nvidia-smi sees); `rss`: a CPU rank's peak resident set (interpreter and libraries in)."""

from __future__ import annotations

from typing import Literal

from torchscale.contracts.wording.spell import size_bytes

Peak = Literal["allocated", "reserved", "rss"]

NAMES: dict[Peak, str] = {
    "allocated": "peak allocated",
    "reserved": "peak reserved",
    "rss": "peak RSS",
}
MEANINGS: dict[Peak, str] = {
    "allocated": "the most memory the rank's tensors held at once (CUDA allocator)",
    "reserved": "the most memory the CUDA caching allocator held for the rank (what "
    "nvidia-smi sees)",
    "rss": "the rank's peak resident set on the host (the interpreter and libraries in)",
}


def title(kind: Peak) -> str:
    """'Peak allocated': the name opening a title or a label."""
    name = NAMES[kind]
    return f"{name[:1].upper()}{name[1:]}"


def heading(kind: Peak, where: str = "per rank") -> str:
    """A column's label: 'Peak reserved per rank', 'Peak allocated (largest rank)'."""
    return f"{title(kind)} {where}"


def peak_text(value: float, kind: Peak, where: str = "per rank") -> str:
    """A sentence's figure: '10.0 GiB peak reserved per rank'."""
    return f"{size_bytes(value)} {NAMES[kind]} {where}"
