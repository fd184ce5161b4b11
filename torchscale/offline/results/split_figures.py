"""The communication figures of a cell, read off its one diagnosis: the columns tables need
(comm_overhead, load_imbalance) and what the report shows beside the split.

A result stores them nowhere else (docs/results.md): every reader (the cells table, report
sections, the profile trigger) calls `split_figures`, so a figure has one value.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.diagnosis import Diagnosis, Reason, StepSplit
from torchscale.contracts.wording.cell_reasons import coded


@dataclass(frozen=True)
class SplitFigures:
    """The synchronised step T and its communication, each None where not measured."""

    step_s: float | None = None  # T, the step the shares are of
    comm_overhead: float | None = None  # exposed transfer / T
    load_imbalance: float | None = None  # wait for peers / T
    exposed_comm_s: float | None = None
    load_imbalance_s: float | None = None
    no_sync_step_s: float | None = None  # the pooled median step under no_sync()


def split_figures(result: CellResult) -> SplitFigures:
    """The figures of `result`'s diagnosis (none for one rank, or without a diagnosis)."""
    diagnosis = result.diagnosis
    if diagnosis is None:
        return SplitFigures()
    no_sync = diagnosis.no_sync.step_s if diagnosis.no_sync is not None else None
    if diagnosis.ranks < 2:
        return SplitFigures(no_sync_step_s=no_sync)
    transfer, wait = diagnosis.part("exposed_transfer"), diagnosis.part("wait_for_peers")
    return SplitFigures(
        step_s=diagnosis.step_s.value,
        no_sync_step_s=no_sync,
        comm_overhead=transfer.share.value if transfer else None,
        load_imbalance=wait.share.value if wait else None,
        exposed_comm_s=transfer.seconds.value if transfer else None,
        load_imbalance_s=wait.seconds.value if wait else None,
    )


def split_unavailable(model: StepSplit) -> dict[str, Reason]:
    """Why a share of the split is null (not measurable above noise), for `unavailable`."""
    unavailable: dict[str, Reason] = {}
    for key, name in (("comm_overhead", "exposed_transfer"), ("load_imbalance", "wait_for_peers")):
        part = next(p for p in model.parts if p.name == name)
        if part.share.value is None:
            unavailable[key] = part.share.reason or coded("unavailable.not_measurable")
    return unavailable


# the keys of `unavailable` that the split and its verdict decide (`split_reasons`)
SPLIT_KEYS = ("diagnosis", "straggler", "comm_overhead", "load_imbalance")


def split_reasons(diagnosis: Diagnosis | None, world: int, why_not: Reason) -> dict[str, Reason]:
    """Why the split's shares and the straggler are null, for `unavailable` (the SPLIT_KEYS):
    the one writer of them, for the ranks' result (rank/worker/aggregate.py) and for a result
    a profiled run's diagnosis replaces (`with_split_reasons`); `why_not`: why there is no
    diagnosis, where there is none. A verdict that names nobody says why itself, once."""
    if diagnosis is not None and world > 1:
        return split_unavailable(diagnosis)
    one_rank = world == 1
    straggler = coded("unavailable.one_rank_straggler") if one_rank else why_not
    comm = coded("unavailable.one_rank_communication") if one_rank else why_not
    reasons: dict[str, Reason] = {"straggler": straggler}
    reasons |= dict.fromkeys(("comm_overhead", "load_imbalance"), comm)
    return reasons | ({"diagnosis": why_not} if diagnosis is None else {})


def with_split_reasons(result: CellResult, diagnosis: Diagnosis) -> dict[str, Reason]:
    """`result`'s unavailable once `diagnosis` replaces its diagnosis (a profiled run's)."""
    kept = {k: v for k, v in result.unavailable.items() if k not in SPLIT_KEYS}
    return kept | split_reasons(diagnosis, diagnosis.ranks, coded("unavailable.not_measurable"))
