"""How a cell and a parallel layout are named: 'tiny-gpt2 b4 x2 fp32 ddp', 'dp x tp x pp = 2 x
2 x 1', 'blocks 2-3'. One spelling for the labels, the worker's notes and the layout's checks."""

from __future__ import annotations

from collections.abc import Sequence

from torchscale.contracts.cell import CellIdentity
from torchscale.contracts.wording.spell import cell_shape


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
