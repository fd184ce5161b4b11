"""Words of a collective-bandwidth run (`torchscale comm`, an imported nccl-tests output): the
`--min-busbw` gate's verdict (figures: minimum_gbps, and busbw: op -> average GB/s of the ops
judged, or ops: the ops with nothing to judge), the sizes left out (op, sizes, below_bytes,
dtype) and why the pairs or the node count are missing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from torchscale.contracts.wording.spell import as_set, nccl_column

if TYPE_CHECKING:
    from torchscale.contracts.schema.comm_result import CommResult


def _busbw(figures: Mapping[str, Any]) -> str:
    return ", ".join(f"{op} {nccl_column(value)}" for op, value in figures["busbw"].items())


def _minimum(figures: Mapping[str, Any]) -> str:
    return as_set(figures["minimum_gbps"], "GB/s")


ONE_RANK = (
    "one rank: no data crosses a link, so the times are each call's fixed cost (NCCL copies "
    "nothing for an in-place op on one rank) and algbw/busbw are not link bandwidths"
)


PHRASES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "comm.gate.one_rank": lambda f: f"cannot check {_minimum(f)}: {ONE_RANK}",
    "comm.gate.nothing_judged": lambda f: (
        f"no bus bandwidth to compare with {_minimum(f)} ({', '.join(f['ops']) or 'no op'}: "
        "busbw is 0 by definition on one rank, or no row finished)"
    ),
    "comm.gate.below": lambda f: f"average busbw below {_minimum(f)}: {_busbw(f)} GB/s",
    "comm.gate.passed": lambda f: f"average busbw at least {_minimum(f)}: {_busbw(f)} GB/s",
    "comm.sizes_left_out": lambda f: (
        f"{f['op']}: {f['sizes']} size(s) below {f['below_bytes']} B (one {f['dtype']} element "
        "per rank) left out"
    ),
    "comm.pairs.one_rank": lambda f: "needs at least 2 ranks",
    "comm.pairs.stopped": lambda f: (
        "the launch stopped before the pairs were measured (see its error)"
    ),
    "comm.nodes.no_hosts": lambda f: (
        "the output lists no hosts (no '#  Rank' lines): nodes is not known"
    ),
}


def gate_words(result: CommResult) -> str:
    """Why the gate said what it said, in today's words."""
    finding = result.gate_finding
    return "no reason recorded" if finding is None else PHRASES[finding.code](finding.figures)
