"""What each collective op is, declared once for every module that needs
to know: the comm sweep (how to call an op, what nccl-tests prints for it, its size and bus
bandwidth), the nccl-tests importer (which columns the op must show) and the trace analyses
(which ops end together on every rank, which must agree on their size).

`OPS` names every op a trace can carry, the ops torchscale runs (`catalog.COLLECTIVES`, the
ones with `sweep` facts) first and in the catalog's order. The spellings profilers and
libraries use for them (`allreduce`, `ncclDevKernel_AllReduce`, nccl-tests' `alltoall_perf`)
are mappings *to* these names, kept by their readers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

BusbwFactor = Literal["2(n-1)/n", "(n-1)/n", "1"]
ROOT_RANK = 0  # the root of a rooted op when torchscale runs it, as nccl-tests' default


@dataclass(frozen=True)
class SweepFacts:
    """How `torchscale comm` runs an op and measures it in nccl-tests' terms
    (nccl-tests doc/PERFORMANCE.md)."""

    nccl_tests_program: str  # nccl-tests' `<program>_perf` for the op
    ranks_in_size: bool  # S = count x n x itemsize (the whole gathered/scattered buffer)
    busbw_factor: BusbwFactor
    out_of_place: bool  # the torch call writes to a buffer of its own (all_reduce: in place)


@dataclass(frozen=True)
class OpFacts:
    """What one op does to the ranks that call it."""

    ends_together: bool  # no rank can leave before the last arrives: all end at one instant
    same_size: bool  # every rank passes the same element count
    reduces: bool = False  # combines the ranks' inputs (nccl-tests prints its redop)
    rooted: bool = False  # one rank is the source or the destination
    point_to_point: bool = False  # a sender and one receiver, whom a trace does not name
    sweep: SweepFacts | None = None  # the ops torchscale runs (catalog.COLLECTIVES) only

    @property
    def runnable(self) -> bool:
        """`torchscale comm` runs it (it is one of catalog.COLLECTIVES)."""
        return self.sweep is not None


OPS: dict[str, OpFacts] = {
    "all_reduce": OpFacts(
        ends_together=True,
        same_size=True,
        reduces=True,
        sweep=SweepFacts(
            "all_reduce", ranks_in_size=False, busbw_factor="2(n-1)/n", out_of_place=False
        ),
    ),
    "all_gather": OpFacts(
        ends_together=True,
        same_size=True,
        sweep=SweepFacts(
            "all_gather", ranks_in_size=True, busbw_factor="(n-1)/n", out_of_place=True
        ),
    ),
    "reduce_scatter": OpFacts(
        ends_together=True,
        same_size=True,
        reduces=True,
        sweep=SweepFacts(
            "reduce_scatter", ranks_in_size=True, busbw_factor="(n-1)/n", out_of_place=True
        ),
    ),
    # the root may leave as soon as its data is out
    "broadcast": OpFacts(
        ends_together=False,
        same_size=True,
        rooted=True,
        sweep=SweepFacts("broadcast", ranks_in_size=False, busbw_factor="1", out_of_place=False),
    ),
    # a non-root may leave as soon as its data is out
    "reduce": OpFacts(
        ends_together=False,
        same_size=True,
        reduces=True,
        rooted=True,
        sweep=SweepFacts("reduce", ranks_in_size=False, busbw_factor="1", out_of_place=False),
    ),
    # the chunks may be uneven (all_to_all_single's split sizes)
    "all_to_all": OpFacts(
        ends_together=True,
        same_size=False,
        sweep=SweepFacts("alltoall", ranks_in_size=True, busbw_factor="(n-1)/n", out_of_place=True),
    ),
    "send_recv": OpFacts(
        ends_together=False,
        same_size=False,
        point_to_point=True,
        sweep=SweepFacts("sendrecv", ranks_in_size=False, busbw_factor="1", out_of_place=True),
    ),
    # seen in traces only
    "send": OpFacts(ends_together=False, same_size=False, point_to_point=True),
    "recv": OpFacts(ends_together=False, same_size=False, point_to_point=True),
    "gather": OpFacts(ends_together=False, same_size=False, rooted=True),
    "scatter": OpFacts(ends_together=False, same_size=False, rooted=True),
    "barrier": OpFacts(ends_together=True, same_size=True),
}


def ops_where(test: Callable[[OpFacts], bool]) -> frozenset[str]:
    """The ops whose facts pass `test`, e.g. `ops_where(lambda op: op.reduces)`."""
    return frozenset(name for name, facts in OPS.items() if test(facts))


def sweep_facts(op: str) -> SweepFacts:
    """The sweep facts of an op torchscale runs; ValueError naming those ops for any other."""
    facts = OPS.get(op)
    if facts is None or facts.sweep is None:
        runnable = ", ".join(name for name, f in OPS.items() if f.runnable)
        raise ValueError(f"unknown collective {op!r}: one of {runnable}")
    return facts.sweep
