"""What a sweep hands back (`SweepOutcome`), in a module of its own: every run carries one (an
empty one before the sweep ran), and the sweep's module imports pandas, which planning, a dry
run and a command's first error need not."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from torchscale.contracts.schema.cell_result import CellResult


@dataclass
class SweepOutcome:
    results: list[CellResult] = field(default_factory=list)
    table: pd.DataFrame | None = None  # the flat cells table last written to summary.csv
    stopped_early: bool = False  # --fail-fast stopped it

    @property
    def failures(self) -> list[CellResult]:
        return [r for r in self.results if r.status.is_failure]
