"""The config's `comm:` section: the collective sweep `torchscale benchmark` runs after its cells.

One comm run per world size of the sweep (`gpu_counts`) that this node can launch, on the
device and backend the cells used, with the sizes, ops and checks of the section. The runs are
the same launches as `torchscale comm` (torchscale/orchestration/comm/sweep_launch.py) and are
stored beside it, in `<experiment>/comm/`, where the report finds them.
"""

from __future__ import annotations

from torchscale.contracts.schema.comm_result import CommResult
from torchscale.orchestration.comm.sweep_launch import CommRequest
from torchscale.orchestration.config.schema import CommConfig
from torchscale.orchestration.plan.planned import Plan, PlannedCell


def section_request(section: CommConfig, planned: PlannedCell, ranks: int) -> CommRequest:
    """The sweep of `section` on `ranks` ranks, launched as `planned` is (device, backend,
    threads, timeout)."""
    return CommRequest(
        ops=tuple(section.collectives),
        min_bytes=section.min_bytes,
        max_bytes=section.max_bytes,
        step_factor=section.step_factor,
        dtype=section.dtype,
        warmup_iters=section.warmup_iters,
        iters=section.iters,
        check=section.check,
        ranks=ranks,
        device=planned.cell.device,
        backend=planned.cell.backend,
        omp_num_threads=planned.launch.omp_num_threads,
        timeout_s=planned.launch.timeout_s,
        min_busbw_gbps=section.min_busbw_gbps,
    )


def comm_requests(plan: Plan) -> list[CommRequest]:
    """One request per world size that has a runnable cell (a world size the node cannot give
    is skipped for the cells with the reason, and so here). Empty when the section is off."""
    section = plan.comm
    if not section.enabled:
        return []
    requests: dict[int, CommRequest] = {}
    for planned in plan.runnable:
        world = planned.cell.world_size
        if world in requests or planned.cell.nodes != 1:
            continue
        requests[world] = section_request(section, planned, world)
    return [requests[w] for w in sorted(requests)]


def comm_failed(result: CommResult) -> bool:
    """A run that should fail the command: it did not finish, a row failed or computed wrong
    elements, or the bandwidth gate failed or could not be judged (one rank moves no data)."""
    return (
        result.status != "ok"
        or any(r.status == "failed" for r in result.rows)
        or (result.wrong_total or 0) > 0
        or result.gate in ("failed", "unavailable")
    )
