"""Fleet view: the outlier rule over a synthetic fleet."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from torchscale.contracts.errors import UsageError
from torchscale.offline.analysis.fleet import (
    VERDICT_FEW_NODES,
    VERDICT_OK,
    VERDICT_OUTLIER,
    fleet_outliers,
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
