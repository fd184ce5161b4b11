"""A new model needs only its own module and a registry entry: the ParallelPlan it declares
(torchscale/rank/models/parallel_plan.py) is all torchscale/rank/parallel/ reads, whether the model
is registered as a built-in or loaded as a plug-in (no torchrun here)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch

from tests.added_model import TINY_DECODER
from tests.conftest import REPO_ROOT
from tests.plugin_models import TinyDecoder
from torchscale.contracts.cell_settings import ModelSpec
from torchscale.contracts.model_specs.registry import BUILTIN
from torchscale.contracts.wording import say
from torchscale.rank.models import build_model
from torchscale.rank.models.parallel_plan import plan_of
from torchscale.rank.parallel import ParallelLayout, infeasible
from torchscale.rank.parallel.pieces import split_at_blocks
from torchscale.rank.strategy_layouts import supported_strategies

PLUGIN = "tests.plugin_models:decoder"


@pytest.fixture()
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """TinyDecoder as a built-in: its spec (tests/added_model.py) and one registry entry."""
    monkeypatch.setitem(BUILTIN, TINY_DECODER.name, TINY_DECODER)
    yield TINY_DECODER.name


def tp(world: int, sp: bool = False) -> ParallelLayout:
    return ParallelLayout.build("tp", world, tp=world, sequence_parallel=sp)


def pp(world: int, schedule: Any = "gpipe", microbatches: int = 2) -> ParallelLayout:
    return ParallelLayout.build("pp", world, pp=world, schedule=schedule, microbatches=microbatches)


def test_a_registered_model_is_judged_by_its_own_plan(registered: str) -> None:
    with torch.device("meta"):
        model = build_model(registered).model
    assert infeasible(model, tp(2, sp=True), 8, seq_len=16) is None
    assert infeasible(model, pp(2), 8) is None
    assert "block 0: 4 attention heads are not divisible by tp=8" in say(
        infeasible(model, tp(8), 8)  # type: ignore[arg-type]
    )
    assert "sequence length 15 is not divisible by tp=2" in say(
        infeasible(model, tp(2, sp=True), 8, seq_len=15)  # type: ignore[arg-type]
    )
    assert "TinyDecoder has 2 blocks, fewer than the 4 stage modules" in say(
        infeasible(model, pp(2, "interleaved_1f1b", 4), 8)  # type: ignore[arg-type]
    )


def test_its_stages_compute_the_model(registered: str) -> None:
    """The pipeline cut of the parts it declares, run in order, is the unsplit model."""
    torch.manual_seed(0)
    bundle = build_model(registered, {"seq_len": 8})
    inputs, _ = bundle.make_batch(3, torch.device("cpu"))
    split = split_at_blocks(bundle.model, 2)
    assert split.holds == ["input part + block 0", "block 1 + output part"]
    x = inputs
    with torch.no_grad():
        for stage in split.stages:
            x = stage(x)
        torch.testing.assert_close(x, bundle.model(inputs), rtol=0, atol=0)


def test_a_plugin_may_declare_the_whole_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its bundle gives no tp_plan / pp_split, yet its model's plan opens tp, pp and hybrid."""
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    with torch.device("meta"):
        bundle = build_model(PLUGIN)
    assert bundle.tp_plan is None and bundle.pp_split is None
    assert isinstance(bundle.model, TinyDecoder) and plan_of(bundle.model) is not None
    assert infeasible(bundle.model, tp(2), 8) is None
    assert infeasible(bundle.model, pp(2), 8) is None
    assert supported_strategies(ModelSpec(name=PLUGIN)) == ["ddp", "fsdp", "tp", "pp", "hybrid"]
    one_block = ModelSpec(name=PLUGIN, options={"layers": 1})
    assert supported_strategies(one_block) == ["ddp", "fsdp", "tp", "hybrid"]


def test_a_plan_that_answers_in_words_is_quoted_not_a_crash(
    registered: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plug-in's plan written to the older contract (tp_problem returning a string) is
    quoted as its evidence; wording it raised AttributeError."""
    with torch.device("meta"):
        model = build_model(registered).model
    plan = plan_of(model)
    assert plan is not None
    monkeypatch.setattr(type(plan), "tp_problem", lambda self, tp: "my heads do not split")
    problem = infeasible(model, tp(2), 8)
    assert problem is not None and problem.code == "layout.model_said"
    assert say(problem) == "the model's parallel plan: my heads do not split"
