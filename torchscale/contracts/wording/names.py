"""How things are named on every surface: a GPU as the driver names it ('H100 80GB
HBM3'), each peak-memory figure (allocated, reserved, RSS), a cell, a searched group and a
parallel layout ('b8 x2', 'gpt2 x2 bf16 ddp', 'dp x tp x pp = 2 x 2 x 1', 'blocks 2-3')."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from torchscale.contracts.cell import CellIdentity
from torchscale.contracts.wording.spell import cell_shape, size_bytes

# How the report names a GPU: as the driver names it, NVIDIA's prefix dropped ('H100 80GB
# HBM3'), so every surface calls one device by one name.

_VENDOR_PREFIX = re.compile(r"^NVIDIA\s+", re.IGNORECASE)


def gpu_name(driver_name: str) -> str | None:
    """'NVIDIA H100 80GB HBM3' -> 'H100 80GB HBM3'; None for a name that is only the prefix."""
    return _VENDOR_PREFIX.sub("", driver_name).strip() or None


# The one name of each peak-memory figure, so no label means two things in one report (the
# first screen said "peak memory" for the allocator's reserved peak while the strategies table
# said it for the allocated one). `allocated`: torch.cuda.max_memory_allocated, what tensors
# held at once; `reserved`: torch.cuda.max_memory_reserved, what the caching allocator held
# (what nvidia-smi sees); `rss`: a CPU rank's peak resident set (interpreter and libraries in).

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


# How a cell and a parallel layout are named: 'tiny-gpt2 b4 x2 fp32 ddp', 'dp x tp x pp = 2 x
# 2 x 1', 'blocks 2-3'. One spelling for the labels, the worker's notes and the layout's checks.


def product(names: Sequence[str], values: Sequence[int], *, total: bool = False) -> str:
    """'dp x tp x pp = 2 x 2 x 1', with '= 4' after it when `total`."""
    said = f"{' x '.join(names)} = {' x '.join(map(str, values))}"
    if not total:
        return said
    result = 1
    for value in values:
        result *= value
    return f"{said} = {result}"


def span(noun: str, run: range) -> str:
    """A run of blocks by name: 'blocks 2-3', or 'block 2' for a run of one."""
    plural = noun + "s"
    return f"{plural} {run.start}-{run.stop - 1}" if len(run) > 1 else f"{noun} {run.start}"


def cell_title(cell: CellIdentity, layout: str) -> str:
    """'tiny-gpt2 b4 x2 fp32 ddp', as the reports name a cell (the id, with its hash, is for
    finding files); its nodes where it spans more than one."""
    nodes = f" ({cell.nodes} nodes)" if (cell.nodes or 1) > 1 else ""
    shape = cell_shape(cell.batch_size, cell.world_size)
    return f"{cell.label} {shape}{nodes} {cell.precision} {layout}"


def product_of(*names: str) -> str:
    """'batch x grad_accum x GPUs x steps': a formula's factors by name."""
    return " x ".join(names)
