"""Words for the collectives the ranks' traces disagree on (profile analysis `mismatches`,
offline/analysis/trace/collective_matching.py). Figures: group; counts [[rank, collectives]],
matched, by_seq; count, kinds, examples [{index, ranks [[rank, op, nelems, dtype]]}]."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases

Figures = Mapping[str, Any]


def _unequal(figures: Figures) -> str:
    counts = ", ".join(f"rank {rank}: {n}" for rank, n in figures["counts"])
    how = "common seq numbers" if figures["by_seq"] else "common prefix"
    return (
        f"group {figures['group']}: ranks recorded different numbers of collectives ({counts}); "
        f"matched the {figures['matched']} {how}"
    )


def _example(example: Figures) -> str:
    def rank(rank: int, op: str, nelems: int | None, dtype: str | None) -> str:
        size = "?" if nelems is None else f"{nelems} elems"
        return f"rank {rank}: {op} {size} {dtype or ''}".rstrip()

    return f"#{example['index']} ({'; '.join(rank(*r) for r in example['ranks'])})"


def _disagreeing(figures: Figures) -> str:
    return (
        f"group {figures['group']}: {figures['count']} collective(s) disagree on "
        f"{'/'.join(figures['kinds'])} across ranks, left out of the figures: "
        + ", ".join(_example(e) for e in figures["examples"])
    )


PHRASES: Phrases = {
    "trace.unequal_counts": _unequal,
    "trace.disagreeing_collectives": _disagreeing,
}
