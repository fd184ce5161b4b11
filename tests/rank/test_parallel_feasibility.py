"""`infeasible` names the reason a layout cannot run a model, before any process starts, as a
code and its figures (worded in contracts/wording/plan.py); the pipeline pieces of every
split model compute what the whole model does (no torchrun here)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from tests.parallel_ranks import batch, build, forward
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import say
from torchscale.rank.models import build_model
from torchscale.rank.models.bert import BertConfig, BertForMaskedLM
from torchscale.rank.parallel import ParallelLayout, infeasible, layout_problem
from torchscale.rank.parallel.pieces import block_ranges, split_at_blocks
from torchscale.rank.parallel.rank_layout import theoretical_bubble


def said(problem: Finding | None, code: str, **figures: Any) -> str:
    """The problem's words, once its code and the figures named here are checked."""
    assert problem is not None and problem.code == f"layout.{code}", problem
    assert {name: problem.figures[name] for name in figures} == figures
    return say(problem)


def meta_model(name: str, **options: Any) -> nn.Module:
    with torch.device("meta"):
        return build_model(name, options).model


def tp(world: int = 2, sp: bool = False) -> ParallelLayout:
    return ParallelLayout.build("tp", world, tp=world, sequence_parallel=sp)


def pp(world: int = 2, schedule: Any = "gpipe", microbatches: int = 2) -> ParallelLayout:
    return ParallelLayout.build("pp", world, pp=world, schedule=schedule, microbatches=microbatches)


def test_build_derives_dp_and_mesh() -> None:
    layout = ParallelLayout.build("hybrid", 8, tp=2, hybrid="fsdp_tp")
    assert layout.dp == 4 and layout.mesh_shape() == ((4, 2), ("dp", "tp"))
    assert [layout.replica_of(r) for r in range(4)] == [0, 0, 1, 1]
    interleaved = ParallelLayout.build(
        "hybrid", 4, pp=2, hybrid="ddp_pp", schedule="interleaved_1f1b", microbatches=4
    )
    assert interleaved.stage_modules == 4 and interleaved.describe()["mesh_dim_names"] == [
        "dp",
        "pp",
    ]


@pytest.mark.parametrize(
    ("layout", "code", "reason"),
    [
        (ParallelLayout("tp", 4, 2, 1, 1, 1, None, False, None), "not_product", "is not dp x tp"),
        (ParallelLayout.build("tp", 4, tp=2), "tp_whole_world", "use hybrid fsdp_tp"),
        (ParallelLayout.build("pp", 4, pp=2, schedule="gpipe"), "pp_whole_world", "ddp_pp"),
        (ParallelLayout.build("pp", 2, pp=2, schedule=None), "unknown_schedule", "is not gpipe"),
        (
            ParallelLayout.build("pp", 2, pp=2, schedule="gpipe", sequence_parallel=True),
            "sp_without_tp",
            "tensor",
        ),
        (pp(4, "1f1b", 2), "1f1b_microbatches", "micro-batches as stages (2 < 4)"),
        (pp(2, "interleaved_1f1b", 5), "interleaved_microbatches", "microbatches // pp) = 2"),
        (
            ParallelLayout.build("tp", 2, tp=2, microbatches=2),
            "microbatches_without_pp",
            "pipeline layouts only",
        ),
        (ParallelLayout.build("hybrid", 4, tp=2, hybrid=None), "unknown", "is not a layout"),
    ],
)
def test_layout_problems(layout: ParallelLayout, code: str, reason: str) -> None:
    assert reason in said(layout_problem(layout), code)


@pytest.mark.parametrize(
    ("model", "layout", "batch_size", "code", "reason"),
    [
        ("gpt2", tp(8), 8, "heads", "block 0: 12 attention heads are not divisible by tp=8"),
        ("resnet50", tp(), 8, "resnet_no_tp", "no tensor-parallel plan for ResNet"),
        (
            "tiny-transformer",
            tp(sp=True),
            8,
            "seq2seq_no_sp",
            "no sequence-parallel plan for the encoder-decoder",
        ),
        (
            "tiny-transformer",
            pp(4, "interleaved_1f1b", 8),
            8,
            "too_few_blocks",
            "4 blocks, fewer than the 8 stage modules of 4 pipeline ranks x 2 virtual stages",
        ),
        ("vit-b16", tp(sp=True), 8, "sequence_split", "sequence length 197 is not divisible by"),
        ("tiny-mlp", tp(sp=True), 8, "mlp_no_sequence", "needs a sequence dimension"),
        ("tiny-cnn", pp(2, "interleaved_1f1b", 2), 8, "too_few_blocks", "3 blocks, fewer than"),
        (
            "tiny-gpt2",
            pp(2, "gpipe", 4),
            6,
            "microbatches_split",
            "4 micro-batches do not divide the per-replica batch 6",
        ),
        (  # 1F1B over 8 stages needs 8 micro-batches: at batch 8 they hold a sample each
            "gpt2",
            pp(8, "1f1b", 8),
            8,
            "microbatch_samples",
            "hold 1 sample each, fewer than the 2",
        ),
    ],
)
def test_model_reasons(
    model: str, layout: ParallelLayout, batch_size: int, code: str, reason: str
) -> None:
    assert reason in said(infeasible(meta_model(model), layout, batch_size), code)


def test_mlp_width_and_sequence_length_reasons() -> None:
    with torch.device("meta"):
        bert = BertForMaskedLM(BertConfig(hidden=32, layers=1, heads=4, intermediate=66))
    problem = infeasible(bert, tp(4), 4)
    words = said(problem, "mlp_width", block=0, width=66, tp=4)
    assert words == "block 0: MLP width 66 is not divisible by tp=4"
    gpt2 = meta_model("tiny-gpt2")
    sequence = said(infeasible(gpt2, tp(sp=True), 4, seq_len=63), "sequence_split", seq_len=63)
    assert sequence == "sequence length 63 is not divisible by tp=2 (sequence parallelism)"
    assert said(infeasible(meta_model("tiny-mlp"), tp(3), 4), "mlp_width", tp=3).startswith(
        "MLP hidden width "
    )
    assert infeasible(gpt2, tp(sp=True), 4, seq_len=64) is None


def test_seq2seq_divisibility_reasons() -> None:
    """The seq2seq plan splits feed-forward widths and vocabulary rows, never attention heads."""
    wide = meta_model("tiny-transformer", dim_feedforward=66)
    assert "layer 0: feed-forward width 66 is not divisible by tp=4" in said(
        infeasible(wide, tp(4), 4), "ffn_width", layer=0, width=66, tp=4
    )
    odd_vocab = meta_model("tiny-transformer", vocab_size=1001)
    assert "vocabulary 1001 (embedding and output projection rows)" in said(
        infeasible(odd_vocab, tp(2), 4), "vocab", vocab=1001, tp=2
    )
    two_heads = meta_model("tiny-transformer", nhead=2)
    assert infeasible(two_heads, tp(4), 4) is None  # attention is replicated: heads need not split


def test_precision_and_accumulation_reasons() -> None:
    gpt2 = meta_model("tiny-gpt2")
    assert "GradScaler" in said(infeasible(gpt2, tp(), 4, precision="fp16"), "fp16_scaler")
    assert infeasible(gpt2, tp(), 4, precision="bf16") is None
    accumulated = infeasible(gpt2, pp(), 4, grad_accum_steps=2)
    assert "raise microbatches" in said(accumulated, "pipeline_grad_accum")
    channels_last = infeasible(meta_model("tiny-cnn"), pp(), 4, channels_last=True)
    assert "contiguous" in said(channels_last, "channels_last_pipeline")


def test_plugins_need_their_own_plan() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    no_tp = said(infeasible(model, tp(), 4), "no_tp_plan", model_class="Sequential")
    assert no_tp.endswith("model class Sequential (its ModelBundle declares no tp_plan)")
    assert "declares no pp_split" in said(infeasible(model, pp(), 4), "no_pp_split")
    assert infeasible(model, tp(), 4, plugin_tp_plan=lambda m, mesh, sp: None) is None
    assert infeasible(model, pp(), 4, plugin_pp_split=lambda m, n: [m[:2], m[2:]]) is None


@pytest.mark.parametrize(
    ("model", "layout"),
    [
        ("gpt2", tp(4, sp=True)),
        ("bert-base", tp(4, sp=True)),
        ("vit-b16", tp(4)),
        ("tiny-mlp", tp(2)),
        ("gpt2", pp(4, "interleaved_1f1b", 8)),
        ("resnet50", pp(4, "1f1b", 4)),
        ("tiny-bert", pp(2, "1f1b", 2)),
        ("transformer", tp(4)),
        ("transformer", pp(2, "interleaved_1f1b", 8)),
        ("tiny-transformer", pp(2, "gpipe", 2)),
    ],
)
def test_feasible_layouts(model: str, layout: ParallelLayout) -> None:
    # batch 16: 8 micro-batches of 2 samples
    assert infeasible(meta_model(model), layout, 16, seq_len=128) is None


def test_block_ranges_put_longer_runs_first() -> None:
    assert block_ranges(12, 4) == [range(0, 3), range(3, 6), range(6, 9), range(9, 12)]
    assert block_ranges(3, 2) == [range(0, 2), range(2, 3)]


@pytest.mark.parametrize("name", ["gpt2", "bert", "vit", "cnn", "mlp", "seq2seq"])
def test_stage_chain_is_the_model(name: str) -> None:
    """The stage modules, run in order, compute the unsplit model's output (eval mode); a tuple
    (the encoder-decoder's ids, then its pair) goes in as separate arguments, as in a pipeline."""
    model, _ = build(name)
    model.eval()
    inputs, _ = batch(name, 0, 3)
    split = split_at_blocks(model, 2 if name == "cnn" else 4)
    x = inputs
    with torch.no_grad():
        for stage in split.stages:
            x = forward(stage, x)
        torch.testing.assert_close(x, forward(model, inputs), rtol=0, atol=0)
    assert all(t.first is not t.last for t in split.tied)
    assert bool(split.tied) == (name in ("gpt2", "bert"))


def test_theoretical_bubble() -> None:
    assert theoretical_bubble(pp(4, "gpipe", 8)) == pytest.approx(3 / 11)
    assert theoretical_bubble(pp(4, "1f1b", 8)) == pytest.approx(3 / 11)
    assert theoretical_bubble(pp(4, "interleaved_1f1b", 8)) == pytest.approx(3 / 19)
