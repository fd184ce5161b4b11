"""Words and figures of a collective-bandwidth run (`torchscale comm`, an imported nccl-tests
output): the table's numbers as nccl-tests prints them, a bandwidth in a sentence, the
`--min-busbw` gate's verdict (figures: minimum_gbps, and busbw: op -> average GB/s of the ops
judged, or ops: the ops with nothing to judge), the sizes left out (op, sizes, below_bytes,
dtype) and why the pairs or the node count are missing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchscale.contracts.schema.comm_result import CommResult


def column(value: float) -> str:
    """A table figure as nccl-tests prints it, 2 decimals; a tiny CPU bandwidth keeps 3
    significant digits instead of reading 0.00."""
    return f"{value:.2f}" if abs(value) >= 0.1 or value == 0 else f"{value:.3g}"


def printed(value: float, unit: str = "") -> str:
    """A figure as nccl-tests printed it, no digit added: '12.3', '12.3 GB/s'."""
    return f"{value:g} {unit}" if unit else f"{value:g}"


def derived(value: float, digits: int = 4) -> str:
    """A figure computed from printed ones, to `digits` significant digits: '12.35'."""
    return f"{value:.{digits}g}"


def gbps(value: float) -> str:
    """A bandwidth in a sentence: '12.35 GB/s'."""
    return f"{derived(value)} GB/s"


def _busbw(figures: Mapping[str, Any]) -> str:
    return ", ".join(f"{op} {column(value)}" for op, value in figures["busbw"].items())


def _minimum(figures: Mapping[str, Any]) -> str:
    return f"{printed(figures['minimum_gbps'])} GB/s"


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
