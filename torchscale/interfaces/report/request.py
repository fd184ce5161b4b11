"""What a report is asked to be (`ReportOptions`): the input of `report.build.build_report`,
read by the sections' shared context too, so it lives below both (no build <-> sections loop)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from torchscale.contracts.errors import UsageError
from torchscale.interfaces.report.short import Scope


@dataclass(frozen=True)
class ReportOptions:
    """How to build a report. `generated_at` None: now (UTC, ISO 8601); fix it for a
    reproducible report. Regressions against a baseline are decided by one stated rule
    (`analysis.baseline.RULE`, docs/regressions.md), not by an option."""

    title: str | None = None
    cost_per_gpu_hour: float | None = None  # every result set (overrides stored prices)
    generated_at: str | None = None
    prices: Mapping[str, float] = field(default_factory=dict)  # experiment -> its price
    html_report: str | None = None  # where the HTML report is: the Markdown links to it
    scope: Scope = "full"  # what is built: every section, or a short format's (`report.short`)

    def __post_init__(self) -> None:
        for price in [self.cost_per_gpu_hour, *self.prices.values()]:
            if price is not None and (not math.isfinite(price) or price < 0):
                raise UsageError(f"--cost-per-gpu-hour must be a number >= 0, not {price}")
