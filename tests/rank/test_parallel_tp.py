"""Tensor parallelism trains exactly as the unsplit model: 2 real gloo ranks vs one process.

Losses of 3 AdamW steps agree within RTOL (fp32; the differences seen are below 1e-7 relative,
float summation order). A missing gradient reduction shows at the second step as a relative
error of about 1e-3 (the tied-weight control in test_parallel_pp.py), far outside RTOL.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.parallel_ranks import launch, reference_losses
from torchscale.rank.models.layers import SelfAttention

RTOL = 1e-5

CASES: list[dict[str, Any]] = [
    {"name": "gpt2", "model": "gpt2", "strategy": "tp", "tp": 2},
    {"name": "gpt2_sp", "model": "gpt2", "strategy": "tp", "tp": 2, "sp": True},
    {"name": "bert_sp", "model": "bert", "strategy": "tp", "tp": 2, "sp": True},
    {"name": "vit", "model": "vit", "strategy": "tp", "tp": 2},
    {"name": "mlp", "model": "mlp", "strategy": "tp", "tp": 2},
    {"name": "plugin", "model": "plugin", "strategy": "tp", "tp": 2},
]
for _case in CASES:
    _case.update(dp=1, batch=4)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return launch(CASES, 2, tmp_path_factory.mktemp("tp"))


@pytest.mark.slow  # real multi-rank training runs
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_tp_losses_match_single_process(results: Any, case: dict[str, Any]) -> None:
    assert results[case["name"]]["losses"] == pytest.approx(reference_losses(case), rel=RTOL)


@pytest.mark.slow  # real multi-rank training runs
def test_tp_settings_say_what_is_sharded(results: Any) -> None:
    ranks = [r["settings"] for r in results["gpt2_sp"]["ranks"]]
    assert [s["data_rank"] for s in ranks] == [0, 0]  # one TP group reads one batch
    first = ranks[0]
    assert first["parallel"]["mesh_shape"] == [2] and first["parallel"]["mesh_dim_names"] == ["tp"]
    assert first["tp_plan"] == "transformer_blocks_sequence_parallel"
    assert first["tp_sharded_parameters"] > 0
    assert "wte.weight" in first["tp_replicated"]  # tied LM head stays replicated
    assert "blocks.*.attn.qkv.weight" not in first["tp_replicated"]


def test_fused_qkv_is_standard_multi_head_attention() -> None:
    """The per-head row order of the fused q/k/v weight is only a relabelling: copied into
    torch's own nn.MultiheadAttention (rows regrouped q, k, v) it gives the same output."""
    torch.manual_seed(0)
    dim, heads = 16, 4
    attn = SelfAttention(dim, heads, attn_dropout=0.0, dropout=0.0, causal=False)
    mha = nn.MultiheadAttention(dim, heads, batch_first=True)
    per_head = attn.qkv.weight.detach().view(heads, 3, dim // heads, dim)
    bias = attn.qkv.bias.detach().view(heads, 3, dim // heads)
    with torch.no_grad():
        mha.in_proj_weight.copy_(per_head.transpose(0, 1).reshape(3 * dim, dim))
        mha.in_proj_bias.copy_(bias.transpose(0, 1).reshape(3 * dim))
        mha.out_proj.weight.copy_(attn.proj.weight)
        mha.out_proj.bias.copy_(attn.proj.bias)
    x = torch.randn(2, 5, dim)
    expected, _ = mha(x, x, x, need_weights=False)
    assert F.mse_loss(attn(x), expected).item() < 1e-12
