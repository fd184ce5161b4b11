"""The `--min-busbw` gate over a comm run's per-op footer: every op with a bandwidth to judge
must average at least the minimum of busbw. Nothing is judged on one rank: nccl-tests' busbw
factor of broadcast and reduce is 1 for any rank count, so a one-rank 'bandwidth' (a no-op's
launch time) would pass any minimum.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from torchscale.contracts.finding import Finding

GateVerdict = Literal["passed", "failed", "unavailable"]

VERDICTS: dict[str, GateVerdict] = {
    "comm.gate.passed": "passed",
    "comm.gate.below": "failed",
    "comm.gate.one_rank": "unavailable",
    "comm.gate.nothing_judged": "unavailable",
}


class OpSummary(Protocol):
    """What the gate reads of an op's footer (contracts/schema/comm_result.py's OpSummary)."""

    @property
    def op(self) -> str: ...
    @property
    def busbw_factor(self) -> float: ...
    @property
    def avg_busbw_gbps(self) -> float | None: ...


def gate(summaries: Sequence[OpSummary], minimum_gbps: float, world_size: int) -> Finding:
    """The gate's finding; its verdict is `VERDICTS[finding.code]`."""
    figures: dict[str, object] = {"minimum_gbps": minimum_gbps}
    if world_size < 2:
        return Finding(code="comm.gate.one_rank", figures=figures)
    judged = {
        s.op: s.avg_busbw_gbps
        for s in summaries
        if s.busbw_factor > 0 and s.avg_busbw_gbps is not None
    }
    if not judged:
        ops = [s.op for s in summaries]
        return Finding(code="comm.gate.nothing_judged", figures={**figures, "ops": ops})
    below = {op: busbw for op, busbw in judged.items() if busbw < minimum_gbps}
    code = "comm.gate.below" if below else "comm.gate.passed"
    return Finding(code=code, figures={**figures, "busbw": below or judged})
