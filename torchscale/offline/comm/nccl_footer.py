"""nccl-tests' footer over a run's rows (pure functions): average bus bandwidth, the check, the
`--min-busbw` gate.

nccl-tests prints, after its table, `Out of bounds values : N OK|FAILED` and `Avg bus bandwidth`,
the mean busbw of every row it timed (out-of-place and in-place both count). We do the same per
op and over the whole run. The gate (contracts/comm_gate.py) compares each op's average with the
minimum: averaging an all_reduce with a broadcast would mean nothing. On one rank nothing
crosses a link, and the gate says it cannot judge rather than pass a launch time as a bandwidth.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from torchscale.contracts.schema.comm_result import CommResult, CommRow, OpSummary
from torchscale.offline.analysis.nccl_bandwidth import busbw_factor
from torchscale.offline.comm.gate import VERDICTS, gate


def summarize(rows: Sequence[CommRow], world_size: int) -> list[OpSummary]:
    """One summary per op, in the order the ops first appear."""
    summaries = []
    for op in dict.fromkeys(row.op for row in rows):
        mine = [r for r in rows if r.op == op]
        summaries.append(
            OpSummary(
                op=op,
                rows=len(mine),
                avg_busbw_gbps=average_busbw(mine),
                wrong=wrong_total(mine),
                busbw_factor=busbw_factor(op, world_size),
            )
        )
    return summaries


def average_busbw(rows: Sequence[CommRow]) -> float | None:
    """nccl-tests' 'Avg bus bandwidth': the mean busbw of every ok row."""
    values = [r.busbw_gbps for r in rows if r.status == "ok" and r.busbw_gbps is not None]
    return statistics.fmean(values) if values else None


def wrong_total(rows: Sequence[CommRow]) -> int | None:
    """Wrong elements over every checked row; None when no row was checked."""
    checked = [r.wrong for r in rows if r.wrong is not None]
    return sum(checked) if checked else None


def add_footer(result: CommResult) -> CommResult:
    """Fill the run's footer fields (per-op summaries, average busbw, #wrong) from its rows."""
    result.summaries = summarize(result.rows, result.world_size)
    result.avg_busbw_gbps = average_busbw(result.rows)
    result.wrong_total = wrong_total(result.rows)
    return result


def apply_gate(result: CommResult, minimum_gbps: float) -> CommResult:
    """Judge a run whose footer is filled against `--min-busbw` and record the verdict."""
    finding = gate(result.summaries, minimum_gbps, result.world_size)
    result.min_busbw_gbps = minimum_gbps
    result.gate = VERDICTS[finding.code]
    result.gate_finding = finding
    return result


# jitter between neighbouring small sizes is a few % on real GPUs (nccl-tests' own outputs in
# tests/fixtures/nccl_tests invert by under 10 %); beyond this a time is not the link's
NOISE_MARGIN = 0.2


def inside_noise(rows: Sequence[CommRow]) -> list[CommRow]:
    """The ok rows whose time is inside the run's noise: a larger message of the same op and
    placement took less time, by more than NOISE_MARGIN. Moving more bytes cannot be faster,
    so such a time measures something else (a scheduler, another process); its bandwidth is
    not the link's."""
    noisy = []
    for row in rows:
        if row.status != "ok" or row.time_us is None:
            continue
        larger = [
            other.time_us
            for other in rows
            if other.op == row.op
            and other.placement == row.placement
            and other.status == "ok"
            and other.time_us is not None
            and other.size_bytes > row.size_bytes
        ]
        if larger and min(larger) * (1 + NOISE_MARGIN) < row.time_us:
            noisy.append(row)
    return noisy
