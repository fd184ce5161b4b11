"""Fleet view: the outlier rule over a synthetic fleet, and the slow-link
group search over a synthetic fabric with a planted slow link or slow node in every position."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import pytest

from torchscale.contracts.errors import UsageError
from torchscale.offline.analysis.fleet import (
    VERDICT_FEW_NODES,
    VERDICT_OK,
    VERDICT_OUTLIER,
    find_slow_link,
    fleet_outliers,
    max_slow_link_measurements,
)

CHECKS = {  # check -> (typical value, higher_is_better, per GPU)
    "matmul_bf16_tflops": (780.0, True, True),
    "h2d_gbps": (52.0, True, True),
    "nccl_all_reduce_busbw_gbps": (360.0, True, False),
    "ecc_errors": (100.0, False, False),
}


def synthetic_fleet(
    n_nodes: int = 16,
    gpus: int = 8,
    noise: float = 0.01,
    seed: int = 0,
    slow_gpu: tuple[str, int, str, float] | None = None,
    slow_node: tuple[str, float] | None = None,
) -> pd.DataFrame:
    """A long table: per-GPU checks have a row per GPU, node checks one with gpu None.
    slow_gpu = (node, gpu, check, factor); slow_node = (node, factor) makes every check of the
    node worse by `factor` (divided when higher is better, multiplied otherwise)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_nodes):
        node = f"node{i}"
        for check, (typical, higher, per_gpu) in CHECKS.items():
            for gpu in range(gpus) if per_gpu else [None]:
                value = typical * (1 + noise * rng.standard_normal())
                if slow_gpu and (node, gpu, check) == slow_gpu[:3]:
                    value *= slow_gpu[3]
                if slow_node and node == slow_node[0]:
                    value = value * slow_node[1] if higher else value / slow_node[1]
                rows.append((node, gpu, check, value, higher))
    return pd.DataFrame(rows, columns=["node", "gpu", "check", "value", "higher_is_better"])


def test_planted_slow_gpu_is_the_only_outlier_with_evidence() -> None:
    table = synthetic_fleet(slow_gpu=("node7", 3, "matmul_bf16_tflops", 612 / 780))
    result = fleet_outliers(table)
    assert len(result) == len(table)
    outliers = result[result["verdict"] == VERDICT_OUTLIER]
    assert len(outliers) == 1
    row = outliers.iloc[0]
    assert (row["node"], row["gpu"], row["check"]) == ("node7", 3, "matmul_bf16_tflops")
    assert row["relative_gap"] == pytest.approx(-0.215, abs=0.02)
    assert row["robust_z"] < -3.5
    evidence = row["evidence"]
    assert evidence.startswith("node7 GPU 3: matmul_bf16_tflops 6")
    assert "vs fleet median 7" in evidence and "robust z -" in evidence and "%" in evidence


def test_planted_slow_node_is_flagged_in_every_check() -> None:
    result = fleet_outliers(synthetic_fleet(slow_node=("node11", 0.8)))
    outliers = result[result["verdict"] == VERDICT_OUTLIER]
    assert set(outliers["node"]) == {"node11"}
    flagged = outliers.groupby("check").size().to_dict()
    assert flagged == {"matmul_bf16_tflops": 8, "h2d_gbps": 8, "nccl_all_reduce_busbw_gbps": 1,
                       "ecc_errors": 1}  # fmt: skip
    # lower is better for ecc_errors: the node is above the median there
    ecc = outliers[outliers["check"] == "ecc_errors"].iloc[0]
    assert ecc["robust_z"] > 3.5 and ecc["evidence"].startswith("node11: ecc_errors")


def test_better_than_the_median_is_not_an_outlier() -> None:
    result = fleet_outliers(synthetic_fleet(slow_node=("node2", 1.5)))  # node2 is faster
    assert (result["verdict"] == VERDICT_OK).all()


@pytest.mark.parametrize("seed", range(5))
def test_uniform_fleet_with_tiny_noise_flags_nothing(seed: int) -> None:
    # 0.1 % noise: the MAD is tiny, so robust z alone would flag ~0.3 % gaps; the 5 % floor
    # keeps them "ok"
    table = synthetic_fleet(noise=0.001, seed=seed)
    table.loc[0, "value"] *= 0.99  # 1 % slower: many robust sds, still not an outlier
    result = fleet_outliers(table)
    assert (result["verdict"] == VERDICT_OK).all()
    assert abs(result.loc[0, "robust_z"]) > 3.5
    # without the floor the same fleet would be flagged: the floor is what protects it
    assert (fleet_outliers(table, min_relative=0)["verdict"] == VERDICT_OUTLIER).any()


def test_identical_values_give_mad_zero_without_dividing_by_zero() -> None:
    table = synthetic_fleet(n_nodes=5, noise=0.0)
    table.loc[0, "value"] = 0.5 * table.loc[0, "value"]
    result = fleet_outliers(table)
    assert list(result.index[result["verdict"] == VERDICT_OUTLIER]) == [0]
    assert result.loc[0, "robust_z"] == -math.inf and "MAD 0" in result.loc[0, "evidence"]


@pytest.mark.parametrize("n_nodes", [1, 2])
def test_fewer_than_3_nodes_are_not_judged(n_nodes: int) -> None:
    # 2 nodes x 8 GPUs = 16 values, still only 2 nodes: no fleet majority
    table = synthetic_fleet(n_nodes=n_nodes, slow_node=("node0", 0.5))
    result = fleet_outliers(table)
    assert (result["verdict"] == VERDICT_FEW_NODES).all()
    assert result["evidence"].str.contains("node").all()


def test_three_nodes_are_judged() -> None:
    result = fleet_outliers(synthetic_fleet(n_nodes=3, slow_node=("node0", 0.5)))
    assert set(result.loc[result["verdict"] == VERDICT_OUTLIER, "node"]) == {"node0"}


def test_bad_input_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="higher_is_better"):
        fleet_outliers(pd.DataFrame({"node": ["a"], "check": ["x"], "value": [1.0]}))
    mixed = synthetic_fleet(n_nodes=3)
    mixed.loc[0, "higher_is_better"] = False
    with pytest.raises(UsageError, match="differs"):
        fleet_outliers(mixed)


# --- slow-link search --------------------------------------------------------------------

HEALTHY, SLOW = 100.0, 30.0


class Fabric:
    """busbw of a group = min over its node pairs of a per-pair bandwidth: a slow link between
    a and b lowers only the groups that hold both; a slow node lowers every group holding it."""

    def __init__(
        self, n: int, link: tuple[str, str] | None = None, node: str | None = None
    ) -> None:
        self.nodes = [f"n{i:02d}" for i in range(n)]
        self.link = set(link) if link else None
        self.node = node
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, group: Sequence[str]) -> float:
        self.calls.append(tuple(group))
        assert len(group) >= 2, "a group of one node measures no link"
        bw = HEALTHY
        for a, b in itertools.combinations(group, 2):
            if (self.link and {a, b} == self.link) or self.node in (a, b):
                bw = SLOW
        return bw


def all_pairs(n: int) -> list[tuple[str, str]]:
    return list(itertools.combinations(Fabric(n).nodes, 2))


def check_link_found(n: int, link: tuple[str, str], reference: float | None) -> None:
    fabric = Fabric(n, link=link)
    result = find_slow_link(fabric.nodes, fabric, reference_busbw=reference)
    assert result.kind == "link" and set(result.suspect or ()) == set(link)
    assert result.measurements == len(fabric.calls) <= max_slow_link_measurements(n)
    assert [m.nodes for m in result.measured] == fabric.calls
    # the evidence: every group judged slow holds both ends, every other does not
    for m in result.measured:
        assert m.slow == (set(link) <= set(m.nodes))


@pytest.mark.parametrize("reference", [None, HEALTHY])
@pytest.mark.parametrize("link", all_pairs(8))
def test_slow_link_found_in_every_position_of_8_nodes(
    link: tuple[str, str], reference: float | None
) -> None:
    check_link_found(8, link, reference)


@pytest.mark.parametrize("n", [13, 16])
@pytest.mark.parametrize("reference", [None, HEALTHY])
def test_slow_link_found_in_every_position_of_13_and_16_nodes(
    n: int, reference: float | None
) -> None:
    for link in all_pairs(n):
        check_link_found(n, link, reference)


@pytest.mark.parametrize("n", [4, 5, 7, 8, 13, 16, 33])
def test_slow_node_found_as_that_node(n: int) -> None:
    for node in Fabric(n).nodes:
        for reference in (None, HEALTHY):
            fabric = Fabric(n, node=node)
            result = find_slow_link(fabric.nodes, fabric, reference_busbw=reference)
            assert (result.kind, result.suspect) == ("node", (node,))
            assert result.measurements <= max_slow_link_measurements(n)


def test_measurement_bound_is_the_documented_formula_and_tight() -> None:
    # 2 x ceil(log2 N) + 1, far below the N(N-1)/2 pairs
    assert [max_slow_link_measurements(n) for n in (2, 3, 4, 8, 13, 16, 32, 64)] == [
        3, 5, 5, 7, 9, 9, 11, 13,
    ]  # fmt: skip
    for n in (8, 16, 32):  # reached for some position: the bound is not loose
        worst = 0
        for link in all_pairs(n):
            fabric = Fabric(n, link=link)
            worst = max(worst, find_slow_link(fabric.nodes, fabric).measurements)
        assert worst == max_slow_link_measurements(n) < n * (n - 1) // 2


@pytest.mark.parametrize("n", [3, 4, 8, 13, 16])
def test_no_slow_link_returns_none_with_its_measurements(n: int) -> None:
    fabric = Fabric(n)
    result = find_slow_link(fabric.nodes, fabric)
    assert result.suspect is None and result.kind is None
    assert result.measurements == 3 and not any(m.slow for m in result.measured)
    with_reference = find_slow_link(fabric.nodes, Fabric(n), reference_busbw=HEALTHY)
    assert with_reference.suspect is None and with_reference.measurements == 1


def test_small_allocations() -> None:
    with pytest.raises(UsageError):
        find_slow_link(["a"], Fabric(1))
    with pytest.raises(UsageError, match="reference"):
        find_slow_link(["n00", "n01"], Fabric(2))
    fabric = Fabric(2, link=("n00", "n01"))
    result = find_slow_link(fabric.nodes, fabric, reference_busbw=HEALTHY)
    assert result.suspect == ("n00", "n01") and result.measurements == 1
    for link in all_pairs(3):
        check_link_found(3, link, None)
    fabric = Fabric(3, node="n01")
    assert find_slow_link(fabric.nodes, fabric).suspect == ("n01",)


def test_bad_arguments_are_usage_errors() -> None:
    measure: Callable[[Sequence[str]], float] = Fabric(4)
    with pytest.raises(UsageError, match="more than once"):
        find_slow_link(["a", "a", "b"], measure)
    with pytest.raises(UsageError, match="threshold"):
        find_slow_link(["a", "b", "c"], measure, threshold=1.5)
    with pytest.raises(UsageError, match="reference"):
        find_slow_link(["a", "b", "c"], measure, reference_busbw=-1.0)
