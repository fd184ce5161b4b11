"""The many-rank plans on torch's fake process group (benchmarks/plan_check.py).

The fake backend lives in torch.testing._internal: the behaviour the checker relies on is
pinned first, so a torch that changes it fails here rather than in a wrong table. Then the tiny
model's plans at 8 ranks and one compiled step (CI), and the zoo's at 8, 16 and 64 (slow).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
try:  # the checker is the benchmark's: a tool over the package, not part of it
    import plan_check
    from plan_check import check_plan, fake_world, zoo_plans
finally:
    sys.path.pop(0)

WORLD = 8


def test_fake_backend_gives_any_rank_of_any_world_and_moves_nothing() -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    with fake_world(64, 37):
        assert (dist.get_backend(), dist.get_rank(), dist.get_world_size()) == ("fake", 37, 64)
        x = torch.full((4,), 3.0)
        dist.all_reduce(x)  # returns at once; a real sum over 64 ranks would be 192
        assert x.tolist() == [3.0] * 4
        # FSDP2 shards a meta-device model over a CPU mesh of the fake world: dim 0 in chunks
        with torch.device("meta"):
            layer = torch.nn.Linear(100, 3)
        fully_shard(layer, mesh=init_device_mesh("cpu", (64,)))
        weight = layer.weight
        assert weight.device.type == "meta" and tuple(weight.shape) == (3, 100)
        assert tuple(weight.to_local().shape) == (0, 100)  # 3 rows: ranks 3.. hold none
    with fake_world(WORLD, 0):  # the group can be made again as another rank
        assert dist.get_rank() == 0


def test_ddp_on_meta_needs_init_sync_off_and_cannot_step_on_the_fake_backend() -> None:
    # why plan_check turns DDP's init_sync off, and why its compiled step is FSDP's
    with fake_world(WORLD, 1):
        with torch.device("meta"):
            layer = torch.nn.Linear(4, 4)
        with pytest.raises(RuntimeError, match="meta"):
            DistributedDataParallel(layer)
        DistributedDataParallel(layer, init_sync=False)
        ddp = DistributedDataParallel(torch.nn.Linear(4, 4))
        with pytest.raises(RuntimeError, match="hook result"):
            ddp(torch.ones(2, 4)).sum().backward()


@pytest.fixture(scope="module")
def tiny_plans() -> dict[str, plan_check.PlanCheck]:
    checks = [check_plan("tiny-gpt2", s, shape, WORLD, 16) for s, shape in zoo_plans(WORLD)]
    return {c.layout: c for c in checks}


@pytest.mark.slow  # over 2 s on 2 cores
def test_tiny_gpt2_plans_at_8_ranks_add_up_to_the_model(
    tiny_plans: dict[str, plan_check.PlanCheck],
) -> None:
    verdicts = {name: c.verdict() for name, c in tiny_plans.items()}
    assert verdicts == {
        "ddp": "ok",
        "fsdp": "ok",
        "tp8": "skipped",
        "pp8 1f1b m4": "skipped",
        "pp8 1f1b m8": "skipped",
        "fsdp_tp dp4 tp2": "ok",
        "ddp_pp dp4 pp2 1f1b m4": "ok",
        "ddp_pp dp4 pp2 1f1b m8": "ok",
    }
    assert tiny_plans["tp8"].skipped is not None
    assert tiny_plans["tp8"].skipped.code == "layout.heads"  # 4 heads over 8 ranks
    assert tiny_plans["pp8 1f1b m4"].skipped is not None
    assert tiny_plans["pp8 1f1b m4"].skipped.code == "layout.1f1b_microbatches"
    assert tiny_plans["pp8 1f1b m8"].skipped is not None
    assert tiny_plans["pp8 1f1b m8"].skipped.code == "layout.too_few_blocks"  # 2 blocks
    total = tiny_plans["ddp"].model_parameters
    assert [r.parameters for r in tiny_plans["ddp"].ranks] == [total] * WORLD
    fsdp = tiny_plans["fsdp"].ranks
    assert sum(r.parameters for r in fsdp) == total
    assert max(r.parameters for r in fsdp) < total / WORLD * 1.2
    # FSDP2 shards dim 0 of the token embedding (1,024 x 64) in eighths
    assert {r.shards["wte.weight"] for r in fsdp} == {(128, 64)}
    hybrid = tiny_plans["fsdp_tp dp4 tp2"].ranks
    assert hybrid[0].shards["blocks.0.attn.qkv.weight"] == (24, 64)  # 192 rows / tp 2 / dp 4
    pipe = tiny_plans["ddp_pp dp4 pp2 1f1b m4"]
    first, last = pipe.ranks[0].pipeline, pipe.ranks[1].pipeline
    assert first["pp_microbatch_size"] == 4 and first["pp_stage_indices"] == [0]
    assert last["pp_stage_indices"] == [1]
    assert tiny_plans["ddp_pp dp4 pp2 1f1b m8"].ranks[0].pipeline["pp_microbatch_size"] == 2
    assert pipe.tied_parameters == 1024 * 64  # the LM head's copy on the last stage
    assert sum(r.parameters for r in pipe.ranks[:2]) == total + pipe.tied_parameters
    # each rank builds only its stages (the last also the embedding its head copies), never
    # the whole model; the stages are balanced by forward FLOPs, counted per stage
    assert first["pp_built"] == "this rank's stages" and first["pp_split"].startswith("balanced")
    assert first["pp_built_parameters"] == pipe.ranks[0].parameters < total
    assert last["pp_built_parameters"] == pipe.ranks[1].parameters + pipe.tied_parameters
    assert all(s["forward_flops_per_sample"] > 0 for s in first["pp_stages"])


@pytest.mark.slow  # over 2 s on 2 cores
def test_a_missing_or_doubled_shard_is_not_ok(tiny_plans: dict[str, plan_check.PlanCheck]) -> None:
    check = tiny_plans["fsdp"]
    partial = plan_check.PlanCheck(**{**check.__dict__, "ranks": check.ranks[:-1]})
    assert partial.verdict() == "sampled"
    doubled = plan_check.PlanCheck(**{**check.__dict__, "ranks": [*check.ranks]})
    doubled.ranks[0] = plan_check.RankShare(**{**check.ranks[0].__dict__, "unique": 2 * 22752})
    assert doubled.verdict() == "mismatch"


@pytest.mark.slow  # starts a child process
def test_one_compiled_fsdp_step_at_8_ranks_through_the_trainer() -> None:
    assert plan_check.compiled_step("tiny-mlp", "fsdp", WORLD, 3, 16) >= 1


ZOO = ("gpt2", "bert-base", "vit-b16")


@pytest.mark.slow
@pytest.mark.parametrize("world", [8, 16, 64])
def test_the_zoo_plans_at_many_ranks(world: int) -> None:
    # ranks 0, 1 and the last: shard shapes and the pipeline split on each (whole-world sums:
    # benchmarks/fake_pg_plans.py); every layout either builds or is skipped with its code
    for model in ZOO:
        for strategy, shape in zoo_plans(world):
            check = check_plan(model, strategy, shape, world, 16, ranks=[0, 1, world - 1])
            if check.skipped is not None:
                assert check.skipped.code.startswith(("layout.", "plan."))
                continue
            assert check.verdict() == "sampled"
            for share in check.ranks:
                assert 0 < share.parameters <= check.expected_unique
                assert share.parameter_bytes == 4 * share.parameters  # fp32
                if share.pipeline:  # its stages and a tied weight's source, not the model
                    built = share.pipeline["pp_built_parameters"]
                    assert built <= share.parameters + check.tied_parameters
                    assert built < check.model_parameters
