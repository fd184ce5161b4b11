"""nccl-tests' size and bandwidth conventions (torchscale.offline.analysis.nccl_bandwidth), checked
against ../shared/reference/nccl_busbw.md: S per op, busbw factor per op and rank count."""

from __future__ import annotations

import math

import pytest

from torchscale.contracts.catalog import COLLECTIVES
from torchscale.offline.analysis.nccl_bandwidth import (
    algbw_gbps,
    busbw_factor,
    count_for_size,
    size_bytes,
)

# op -> (S is count x n x itemsize, factor as a function of n): the reference table
REFERENCE = {
    "all_reduce": (False, lambda n: 2 * (n - 1) / n),
    "reduce_scatter": (True, lambda n: (n - 1) / n),
    "all_gather": (True, lambda n: (n - 1) / n),
    "all_to_all": (True, lambda n: (n - 1) / n),
    "broadcast": (False, lambda n: 1.0),
    "reduce": (False, lambda n: 1.0),
    "send_recv": (False, lambda n: 1.0),
}


def test_the_reference_covers_every_op_of_the_catalog() -> None:
    assert set(REFERENCE) == set(COLLECTIVES)


@pytest.mark.parametrize("op", sorted(REFERENCE))
@pytest.mark.parametrize("ranks", [1, 2, 3, 8, 64])
def test_factor_and_size_per_op(op: str, ranks: int) -> None:
    gathered, factor = REFERENCE[op]
    assert busbw_factor(op, ranks) == pytest.approx(factor(ranks))
    expected = 1000 * 4 * (ranks if gathered else 1)
    assert size_bytes(op, count=1000, itemsize=4, ranks=ranks) == expected
    assert count_for_size(op, expected, itemsize=4, ranks=ranks) == 1000


def test_all_reduce_on_eight_ranks() -> None:
    # 1 GiB in 10 ms: algbw 107.37 GB/s (1 GB = 1e9 B), busbw x 2*7/8 = 187.90 GB/s
    size = 2**30
    assert algbw_gbps(size, 0.01) == pytest.approx(107.374182, rel=1e-6)
    assert algbw_gbps(size, 0.01) * busbw_factor("all_reduce", 8) == pytest.approx(
        187.904819, rel=1e-6
    )


def test_one_rank_moves_nothing_over_a_link() -> None:
    assert algbw_gbps(1 << 20, 1e-3) * busbw_factor("all_reduce", 1) == 0.0
    assert algbw_gbps(1 << 20, 1e-3) * busbw_factor("broadcast", 1) == pytest.approx(1.048576)


def test_count_rounds_down_to_whole_elements() -> None:
    assert count_for_size("all_gather", size=100, itemsize=4, ranks=3) == 8  # 96 bytes fit


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: busbw_factor("all_reduce", 0), "at least 1"),
        (lambda: busbw_factor("allreduce", 2), "unknown collective 'allreduce'"),
        (lambda: algbw_gbps(8, 0.0), "positive"),
        (lambda: algbw_gbps(8, math.nan), "positive"),
        (lambda: size_bytes("reduce", count=-1, itemsize=4, ranks=2), ">= 0"),
        (lambda: count_for_size("reduce", size=8, itemsize=0, ranks=2), "item size"),
    ],
)
def test_bad_arguments_are_refused(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]
