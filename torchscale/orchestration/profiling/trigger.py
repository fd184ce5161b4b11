"""Which cells of a finished sweep to profile (the config's `profiling.trigger`). Pure.

`always`: every ok cell. `sync_stall_detection`: ok cells of more than one rank where the
measured windows already show a stall worth a trace: exposed communication (the synchronised
step beyond the slowest rank's compute) or load imbalance (the mean wait of the other ranks for
the slowest) at or above `stall_threshold`, or a step-time coefficient of variation at or above
`variance_threshold`. Each selected cell carries the reason, in words, with its figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torchscale.contracts.cell import Status
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.wording.spell import cv, pct_whole
from torchscale.offline.results.split_figures import split_figures
from torchscale.orchestration.config.schema import ProfilingConfig


@dataclass(frozen=True)
class Selected:
    cell_id: str
    reason: str


def stall_reasons(result: CellResult, settings: ProfilingConfig) -> list[str]:
    """What in this cell's measurement crosses the thresholds, one phrase each."""
    reasons = []
    comm = split_figures(result)
    threshold = settings.stall_threshold
    limit = f">= {pct_whole(threshold)}"
    exposed = comm.comm_overhead
    if exposed is not None and exposed >= threshold:
        reasons.append(f"exposed communication {pct_whole(exposed)} {limit} of the step")
    imbalance = comm.load_imbalance
    if imbalance is not None and imbalance >= threshold:
        reasons.append(f"wait for the slowest rank {pct_whole(imbalance)} {limit}")
    steps = result.step_time
    if steps is not None and steps.cv >= settings.variance_threshold:
        reasons.append(
            f"step-time CV {cv(steps.cv)} >= {cv(settings.variance_threshold)} (high variance)"
        )
    return reasons


def select_for_profiling(
    results: Sequence[CellResult], settings: ProfilingConfig
) -> list[Selected]:
    """The cells to profile, in sweep order, each with why."""
    chosen = []
    for result in results:
        if result.status is not Status.OK:
            continue
        if settings.trigger == "always":
            chosen.append(Selected(result.cell_id, "profiling.trigger is 'always'"))
            continue
        if result.cell.world_size < 2:
            continue  # one rank: nothing to wait for
        reasons = stall_reasons(result, settings)
        if reasons:
            chosen.append(Selected(result.cell_id, "; ".join(reasons)))
    return chosen
