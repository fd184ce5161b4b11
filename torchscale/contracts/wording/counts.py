"""Counts in words: '2 comm runs', '8 x H100', a cell's shape 'b8 x2', a share limit '10 %'.
The one spelling of a count beside its noun, so a report's tables, notes and labels agree."""

from __future__ import annotations

from torchscale.contracts.wording import units

devices = units.of  # '8 x H100 80GB HBM3': how many of one device


def count_of(count: int | None, noun: str, plural: str | None = None) -> str:
    """'1 comm run', '1,234 cells'; '? GPUs' where the count is unknown."""
    shown = "?" if count is None else f"{count:,}"
    return f"{shown} {noun if count == 1 else plural or noun + 's'}"


def cell_shape(batch_size: object, world_size: object) -> str:
    """'b8 x2': a cell's batch per rank and its ranks, as every cell label spells them."""
    return f"b{batch_size} x{world_size}"


def ranks_of(world_size: object) -> str:
    """'2x': a collective run's ranks, before its backend ('torchscale 2x nccl bf16')."""
    return f"{world_size}x"


def limit_pct(fraction: float) -> str:
    """A threshold as a percentage, as short as it is set: 0.1 -> '10 %', 0.025 -> '2.5 %'."""
    return f"{fraction * 100:g} %"
