"""Words of a collective-bandwidth run (`torchscale comm`, an imported nccl-tests output): the
`--min-busbw` gate's verdict (figures: minimum_gbps, and busbw: op -> average GB/s of the ops
judged, or ops: the ops with nothing to judge), the sizes left out (op, sizes, below_bytes,
dtype) and why the pairs or the node count are missing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from torchscale.contracts.wording import Phrases, render, say
from torchscale.contracts.wording.spell import nccl_column

if TYPE_CHECKING:
    from torchscale.contracts.schema.comm_result import CommResult


def _busbw(figures: Mapping[str, Any]) -> str:
    return ", ".join(f"{op} {nccl_column(value)}" for op, value in figures["busbw"].items())


_MINIMUM = "{minimum_gbps:set} GB/s"


ONE_RANK = (
    "one rank: no data crosses a link, so the times are each call's fixed cost (NCCL copies "
    "nothing for an in-place op on one rank) and algbw/busbw are not link bandwidths"
)


PHRASES: Phrases = {
    "comm.gate.one_rank": ("cannot check " + _MINIMUM + ": " + ONE_RANK),
    "comm.gate.nothing_judged": lambda f: (
        f"no bus bandwidth to compare with {render(_MINIMUM, f)} "
        f"({', '.join(f['ops']) or 'no op'}: busbw is 0 by definition on one rank, or no row "
        "finished)"
    ),
    "comm.gate.below": lambda f: f"average busbw below {render(_MINIMUM, f)}: {_busbw(f)} GB/s",
    "comm.gate.passed": lambda f: f"average busbw at least {render(_MINIMUM, f)}: {_busbw(f)} GB/s",
    "comm.sizes_left_out": (
        "{op}: {sizes} size(s) below {below_bytes} B (one {dtype} element per rank) left out"
    ),
    "comm.pairs.one_rank": "needs at least 2 ranks",
    "comm.pairs.stopped": "the launch stopped before the pairs were measured (see its error)",
    "comm.nodes.no_hosts": "the output lists no hosts (no '#  Rank' lines): nodes is not known",
}


def gate_words(result: CommResult) -> str:
    """Why the gate said what it said, in today's words."""
    finding = result.gate_finding
    return "no reason recorded" if finding is None else say(finding)
