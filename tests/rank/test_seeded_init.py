"""A pipeline rank builds only its own stages, with the values the unsplit model has
(torchscale/rank/models/seeded_init.py; the 2-rank pipelines then train exactly as one process:
tests/rank/test_parallel_pp.py)."""

from __future__ import annotations

import contextlib

import pytest
import torch

from tests.parallel_ranks import construct
from torchscale.rank.models import build_model
from torchscale.rank.models.seeded_init import SeededBuild, ordinals_of, tensors_of
from torchscale.rank.parallel import pieces
from torchscale.rank.parallel.pp_setup import own_stages

CPU = torch.device("cpu")


def _stage_alone(build: SeededBuild, stages: int, index: int) -> tuple[dict, int]:
    """Stage `index`'s state built alone (its ordinals kept), and the elements built for real."""
    meta, ordinals = build.sizing()
    split = pieces.split_at_blocks(meta, stages)
    mine = [split.stages[index]]
    held = {id(t) for t in tensors_of(mine)}
    sources = [tie.first for tie in split.tied if id(tie.last) in held]
    part = build.part(ordinals_of(tensors_of(mine) + sources, ordinals))
    real = sum(t.numel() for t in tensors_of([part]) if t.device.type != "meta")
    return pieces.split_at_blocks(part, stages).stages[index].state_dict(), real


# GPT-2 (tied LM head), BERT (post-LN, tied decoder), a ResNet (BatchNorm buffers made by
# torch.tensor, which no dispatch mode sees) and a ViT, whose trunc_normal_ redraws rejected
# values a data-dependent number of times (the draws of the tensors after it must not move)
MODELS = {
    "tiny-gpt2": lambda: build_model("tiny-gpt2").model,
    "tiny-bert": lambda: build_model("tiny-bert").model,
    "tiny-cnn": lambda: build_model("tiny-cnn").model,
    "vit": lambda: construct("vit"),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_a_stage_built_alone_equals_that_stage_of_the_whole_model(name: str) -> None:
    build = SeededBuild(MODELS[name], seed=5)
    whole = build.whole()
    total = sum(t.numel() for t in tensors_of([whole]))
    for index in (0, 1):
        alone, real = _stage_alone(build, 2, index)
        expected = pieces.split_at_blocks(whole, 2).stages[index].state_dict()
        assert alone.keys() == expected.keys()
        for key, value in expected.items():
            assert torch.equal(alone[key], value), key
        assert real < total  # the other stage was never built
    other = SeededBuild(MODELS[name], seed=6).whole()
    assert any(
        not torch.equal(a, b) for a, b in zip(whole.parameters(), other.parameters(), strict=True)
    )


def test_the_whole_model_is_built_the_same_each_time() -> None:
    build = SeededBuild(MODELS["tiny-gpt2"], seed=5)
    first, second = build.whole().state_dict(), build.whole().state_dict()
    assert all(torch.equal(first[k], second[k]) for k in first)


def test_own_stages_builds_only_this_ranks_share_and_says_so() -> None:
    build = SeededBuild(MODELS["tiny-gpt2"], seed=5)
    example = torch.zeros(4, 16, dtype=torch.long)
    split, shapes, built = own_stages(build, 2, [1], CPU, example, contextlib.nullcontext, None)
    assert built["pp_built"] == "this rank's stages"
    last = split.stages[1]
    assert all(t.device == CPU for t in tensors_of([last]))
    assert all(t.device.type == "meta" for t in tensors_of([split.stages[0]]))
    # the last stage (block 1, ln_f, the LM head's copy) plus the embedding it copies from
    wte = 1024 * 64
    assert built["pp_built_parameters"] == sum(t.numel() for t in tensors_of([last])) + wte
    assert [tuple(i.shape) for i, _ in shapes] == [(4, 16), (4, 16, 64)]
    # stage metadata under bf16 autocast, sized on fake CPU tensors: the dtypes training sees
    bf16 = lambda: torch.autocast("cpu", dtype=torch.bfloat16)  # noqa: E731
    _, shapes, _ = own_stages(build, 2, [0], CPU, example, bf16, None)
    assert shapes[1][1].dtype == torch.bfloat16  # the LM head's logits


def test_a_model_whose_stages_cannot_be_built_alone_is_built_whole() -> None:
    # nn.Transformer deep-copies its layers: their tensors are copies, made by no factory op
    build = SeededBuild(lambda: build_model("tiny-transformer").model, seed=5)
    example = (torch.zeros(2, 32, dtype=torch.long), torch.zeros(2, 32, dtype=torch.long))
    split, _, built = own_stages(build, 2, [0], CPU, example, contextlib.nullcontext, None)
    assert built["pp_built"].startswith("whole model")
    assert all(t.device == CPU for t in tensors_of([split.stages[0]]))
    assert all(t.device.type == "meta" for t in tensors_of([split.stages[1]]))
