"""Collective sizes and bandwidths exactly as NVIDIA's nccl-tests defines them (pure functions):
algbw = S / t in GB/s (1e9 bytes), busbw = algbw x factor(op, n), with S and the factors as
docs/comm.md, "What each number is", gives them. The nccl-tests definitions and names are kept
so that our table can be put beside an nccl-tests table and compared row for row; other tools
differ (DeepSpeed: 2x algbw for all_reduce, in Gbit/s), so never mix them without converting.
"""

from __future__ import annotations

from torchscale.contracts.collective_facts import OPS, SweepFacts, sweep_facts

GB = 1e9  # nccl-tests' GB/s: 1e9 bytes per second


def _shape(op: str, ranks: int) -> SweepFacts:
    facts = sweep_facts(op)
    if ranks < 1:
        raise ValueError(f"the number of ranks must be at least 1, got {ranks}")
    return facts


def busbw_factor(op: str, ranks: int) -> float:
    """nccl-tests' bus bandwidth factor of `op` over `ranks` ranks (0 for a ring of one rank
    where the factor has an (n-1) term: nothing crosses a link)."""
    factor = _shape(op, ranks).busbw_factor
    if factor == "2(n-1)/n":
        return 2.0 * (ranks - 1) / ranks
    if factor == "(n-1)/n":
        return (ranks - 1) / ranks
    return 1.0


def ring_steps(op: str, ranks: int) -> int:
    """The sequential steps of `op`'s ring algorithm over `ranks` ranks, each paying one
    link latency (Thakur, Rabenseifner and Gropp 2005): 2(n-1) for all_reduce (reduce-scatter
    then all-gather), n-1 for the others; 0 for one rank."""
    factor = _shape(op, ranks).busbw_factor
    return (2 if factor == "2(n-1)/n" else 1) * (ranks - 1)


def size_bytes(op: str, count: int, itemsize: int, ranks: int) -> int:
    """S in bytes: `count` elements of `itemsize` bytes per rank; times the ranks for the ops
    whose S is the whole gathered/scattered buffer (all_gather, reduce_scatter, all_to_all)."""
    shape = _shape(op, ranks)
    if count < 0 or itemsize <= 0:
        raise ValueError("the element count must be >= 0 and the item size > 0")
    return count * itemsize * (ranks if shape.ranks_in_size else 1)


def count_for_size(op: str, size: int, itemsize: int, ranks: int) -> int:
    """The per-rank element count whose S is `size` bytes (rounded down to whole elements, as
    nccl-tests does when it steps through sizes)."""
    shape = _shape(op, ranks)
    if size < 0 or itemsize <= 0:
        raise ValueError("the size must be >= 0 and the item size > 0")
    return size // (itemsize * (ranks if shape.ranks_in_size else 1))


def algbw_gbps(size: int, seconds: float) -> float:
    """Algorithm bandwidth S / t in GB/s (1 GB = 1e9 bytes)."""
    if not seconds > 0:
        raise ValueError(f"the time of one operation must be positive, got {seconds}")
    return size / seconds / GB


def factors_text() -> str:
    """Every op's busbw factor in words, the ops of one factor together and 1 last:
    '2(n-1)/n for all_reduce, (n-1)/n for all_gather, ... and all_to_all, 1 otherwise'."""
    by_factor: dict[str, list[str]] = {}
    for op, facts in OPS.items():
        if facts.sweep is not None and facts.sweep.busbw_factor != "1":
            by_factor.setdefault(facts.sweep.busbw_factor, []).append(op)
    parts = [f"{factor} for {_and(ops)}" for factor, ops in by_factor.items()]
    return ", ".join([*parts, "1 otherwise"])


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
