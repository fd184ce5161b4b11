"""The findings of a diagnosis read from point figures (`point_figures`), by the rule those
figures were judged by when they were measured.

Point figures have no interval, so the diagnosis' rule (a cost measurable above noise) cannot
judge them; instead a figure is a finding where it is a share the step can have, in [0, 1],
and at least its threshold: the others wait for the slowest rank `STRAGGLER_MIN` of the step,
communication is exposed `EXPOSED_COMM_MIN`, the input pipeline is waited for
`DATA_WAIT_MIN`. Each finding names its cell in its title and says it has no interval.
"""

from __future__ import annotations

from typing import Any

from torchscale.contracts.cell import CellIdentity
from torchscale.contracts.finding import Finding as Code
from torchscale.contracts.schema.cell_result import CellResult, Estimate, Problem
from torchscale.contracts.wording import problems
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.results.upgrades.older_blocks import OlderBlocks

STRAGGLER_MIN = 0.05  # the others' wait for the slowest rank, as a share of the step
EXPOSED_COMM_MIN = 0.10  # communication not hidden behind compute
DATA_WAIT_MIN = 0.10  # waiting for the next batch (input pipeline)
NO_INTERVAL = "point figure, no interval"
# each phase's advice is worded in contracts/wording/problems.py (PHASE_ADVICE)
PHASE_ADVICE = problems.PHASE_ADVICE


def _cell(cell: CellIdentity) -> dict[str, Any]:
    """The cell a point-figure finding is about (its title names it), by its identity."""
    return {
        "label": cell.label,
        "batch_size": cell.batch_size,
        "world_size": cell.world_size,
        "nodes": cell.nodes,
        "precision": cell.precision,
        "strategy": cell.strategy,
    }


def cell_words(cell: CellIdentity) -> str:
    """'tiny-mlp b8 x2 fp32 ddp': the cell as a point-figure finding's title names it."""
    return problems.cell_words(_cell(cell))


def _finding(code: str, category: str, cost: float, **figures: Any) -> Problem:
    return Problem(
        finding=Code(code=code, figures=figures),
        category=category,
        cost_share=Estimate(
            value=cost, low=None, high=None, n=1, method=NO_INTERVAL, measurable=True
        ),
    )


def straggler_finding(result: CellResult, older: OlderBlocks) -> Problem | None:
    """The slowest rank by compute, where the others wait for it at least `STRAGGLER_MIN` of
    the step (and a share it can have). No injected-delay note: the report marks a straggler
    the run delayed on purpose, for every diagnosis alike."""
    straggler, comm = older.straggler, older.communication
    imbalance = finite(comm.load_imbalance) if comm else None
    if straggler is None or imbalance is None or not STRAGGLER_MIN <= imbalance <= 1.0:
        return None
    waits = [
        [r.rank, r.phases.grad_sync_wait]
        for r in result.ranks
        if r.phases is not None and r.phases.grad_sync_wait is not None
    ]
    return _finding(
        "problem.point.straggler",
        "straggler",
        imbalance,
        cell=_cell(result.cell),
        rank=straggler.rank,
        basis=straggler.basis,
        compute_s=straggler.compute_s,
        others_compute_s=straggler.others_compute_s,
        phase=straggler.phase,
        gap_s=straggler.gap_s if straggler.phase is not None else None,
        waits=waits,
        share=imbalance,
    )


def exposed_comm_finding(result: CellResult, older: OlderBlocks) -> Problem | None:
    """Communication not hidden behind the slowest rank's compute, at least
    `EXPOSED_COMM_MIN` of the step (and a share it can have)."""
    comm = older.communication
    share = finite(comm.comm_overhead) if comm else None
    if comm is None or share is None:
        return profiled_comm_finding(result)
    if not EXPOSED_COMM_MIN <= share <= 1.0:
        return None
    imbalance = finite(comm.load_imbalance)
    return _finding(
        "problem.point.exposed_comm",
        "exposed_comm",
        share,
        cell=_cell(result.cell),
        share=share,
        step_s=comm.step_time_s,
        compute_s=comm.slowest_compute_s,
        exposed_s=comm.exposed_comm_s,
        imbalance=imbalance if imbalance is not None and 0.0 <= imbalance <= 1.0 else None,
        gloo=result.cell.backend == "gloo",
        nodes=result.cell.nodes,
    )


def profiled_comm_finding(result: CellResult) -> Problem | None:
    """A tensor-parallel cell's exposed transfer in its profiled steps (no no_sync window),
    at least `EXPOSED_COMM_MIN` of the step (and a share it can have)."""
    profiled = result.parallel.profiled_comm if result.parallel is not None else None
    share = finite(profiled.exposed_transfer) if profiled is not None else None
    if profiled is None or share is None or not EXPOSED_COMM_MIN <= share <= 1.0:
        return None
    return _finding(
        "problem.point.profiled_comm",
        "exposed_comm",
        share,
        cell=_cell(result.cell),
        share=share,
        steps=profiled.steps,
        scope=profiled.scope,
    )


def data_wait_finding(result: CellResult) -> Problem | None:
    """The step waits for its batch at least `DATA_WAIT_MIN` of the step: the DataLoader or
    the storage under it (never for synthetic data, made on the device once)."""
    data = result.data
    share = finite(data.share) if data else None
    if data is None or data.source == "synthetic" or share is None:
        return None
    if not DATA_WAIT_MIN <= share <= 1.0:
        return None
    return _finding(
        "problem.point.data_wait",
        "data_wait",
        share,
        cell=_cell(result.cell),
        share=share,
        source=data.source,
        wait_s=data.wait_s,
        read_bytes_per_s=data.read_bytes_per_s,
        workers=data.num_workers,
    )


def point_figure_findings(result: CellResult, older: OlderBlocks) -> list[Problem]:
    """The findings of a result judged by its point figures, most expensive first: the data
    wait, and with two ranks or more the straggler and exposed communication."""
    found = [data_wait_finding(result)]
    if result.cell.world_size >= 2:
        found += [straggler_finding(result, older), exposed_comm_finding(result, older)]
    return sorted((f for f in found if f is not None), key=lambda f: -f.cost_pct)
