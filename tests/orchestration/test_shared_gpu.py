"""Several ranks on one GPU (launcher.ranks_per_gpu) on CPU: the plan, the launch's argv and
environment, the rank's device, the backend, the mark a result stores, and the rule that a
shared cell is never ranked, scaled or forecast with cells that had a GPU per rank. The run
itself needs a GPU: tests/e2e/test_shared_gpu_cuda.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch
from pydantic import ValidationError

from tests.orchestration.test_launch import make_config
from torchscale.contracts.cell import Status
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellError, CellResult
from torchscale.contracts.shared_gpu import (
    GLOO_CUDA_P2P,
    NCCL_SHARED_GPU,
    RANKS_PER_GPU_ENV,
    SHARED_GPU,
    gpu_index,
    gpus_for,
    ranks_per_gpu_from,
)
from torchscale.contracts.wording import say
from torchscale.contracts.wording.cell_warnings import warning_words
from torchscale.offline.analysis.compile_gain import compile_gain
from torchscale.offline.analysis.prediction.forecast import measured_groups
from torchscale.offline.analysis.ranking import comparable, left_out, left_out_findings
from torchscale.offline.analysis.scaling_efficiency import (
    SHARED_GPU as NOT_SCALING,
)
from torchscale.offline.analysis.scaling_efficiency import (
    add_scaling_efficiency,
    scaling_table,
)
from torchscale.offline.results.frame import cell_row
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.orchestration.plan.planned import PlannedCell
from torchscale.orchestration.sweep import unmeasured_result
from torchscale.rank.worker import harness

ONE_GPU = Machine(gpu_count=1, cpu_cores=16)
TWO_GPUS = Machine(gpu_count=2, cpu_cores=16)


def config(**overrides: Any) -> BenchConfig:
    """test_launch's config on CUDA with four ranks per GPU (`overrides` on top)."""
    shared: dict[str, Any] = {
        "experiment_name": "shared",
        "device": "cuda",
        "launcher": {"ranks_per_gpu": 4},
    }
    return make_config(**(shared | overrides))


def by_world(cfg: BenchConfig, machine: Machine = ONE_GPU) -> dict[int, PlannedCell]:
    return {p.cell.world_size: p for p in build_plan(cfg, machine)}


def codes(planned: PlannedCell) -> list[str]:
    return [w.finding.code for w in planned.cell_warnings if w.finding is not None]


def test_one_gpu_plans_two_and_four_ranks_on_device_0_over_gloo() -> None:
    cells = by_world(config())
    assert [cells[w].skip for w in (1, 2, 4)] == [None, None, None]
    one, two, four = cells[1], cells[2], cells[4]
    # a cell that has a GPU per rank stays a real one: NCCL, no mark
    assert (one.cell.ranks_per_gpu, one.cell.backend) == (1, "nccl")
    assert SHARED_GPU not in codes(one)
    assert (two.cell.ranks_per_gpu, two.cell.backend) == (2, "gloo")
    assert (four.cell.ranks_per_gpu, four.cell.backend) == (4, "gloo")
    assert SHARED_GPU in codes(two) and SHARED_GPU in codes(four)
    assert "(2 ranks per GPU)" in two.cell.shape_label
    [mark] = [w for w in two.cell_warnings if w.finding and w.finding.code == SHARED_GPU]
    assert "not a multi-GPU job" in warning_words(mark)


def test_without_the_setting_a_cell_larger_than_the_node_is_skipped_as_before() -> None:
    cells = by_world(config(launcher={}))
    assert cells[1].skip is None
    assert cells[2].skip is not None and cells[2].skip.code == "plan.needs_gpus"
    assert cells[2].cell.ranks_per_gpu == 1 and cells[2].cell.backend == "nccl"


def test_more_ranks_than_the_setting_allows_are_skipped_for_want_of_gpus() -> None:
    cells = by_world(config(launcher={"ranks_per_gpu": 2}))
    assert cells[2].skip is None and cells[2].cell.ranks_per_gpu == 2
    skip = cells[4].skip
    assert skip is not None and skip.code == "plan.needs_gpus"
    assert skip.figures["have"] == 1 and skip.figures["gpus"] == 4


def test_ranks_spread_evenly_over_the_nodes_gpus(tmp_path: Path) -> None:
    four = by_world(config(), TWO_GPUS)[4]
    assert four.cell.ranks_per_gpu == 2 and four.skip is None
    command = four.command(tmp_path / "spec.json", tmp_path, {})
    assert command.env["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert command.env[RANKS_PER_GPU_ENV] == "2"
    assert "--nproc-per-node=4" in command.argv
    assert [gpu_index(rank, 2) for rank in range(4)] == [0, 0, 1, 1]


def test_the_launch_gives_the_ranks_one_gpu_of_those_this_process_may_use(
    tmp_path: Path,
) -> None:
    cells = by_world(config())
    two = cells[2].command(tmp_path / "spec.json", tmp_path, {"CUDA_VISIBLE_DEVICES": "3,5"})
    assert two.env["CUDA_VISIBLE_DEVICES"] == "3" and two.env[RANKS_PER_GPU_ENV] == "2"
    assert "--nproc-per-node=2" in two.argv
    one = cells[1].command(tmp_path / "spec.json", tmp_path, {})
    assert RANKS_PER_GPU_ENV not in one.env and one.env["CUDA_VISIBLE_DEVICES"] == "0"


def test_a_shared_cells_ranks_pick_the_gpu_they_share(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen: list[torch.device] = []
    monkeypatch.setattr(torch.cuda, "set_device", chosen.append)
    monkeypatch.setenv(RANKS_PER_GPU_ENV, "2")
    for local_rank, index in ((0, 0), (1, 0), (2, 1), (3, 1)):
        monkeypatch.setenv("LOCAL_RANK", str(local_rank))
        assert harness.rank_device("cuda") == torch.device("cuda", index)
    monkeypatch.delenv(RANKS_PER_GPU_ENV)
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert harness.rank_device("cuda") == torch.device("cuda", 3)  # a GPU a rank, as before
    assert chosen == [torch.device("cuda", i) for i in (0, 0, 1, 1, 3)]


@pytest.mark.parametrize(("text", "ranks"), [("2", 2), ("", 1), ("x", 1), ("0", 1)])
def test_the_ranks_per_gpu_a_rank_reads(text: str, ranks: int) -> None:
    assert ranks_per_gpu_from({RANKS_PER_GPU_ENV: text}) == ranks
    assert gpus_for(5, 2) == 3 and gpus_for(4, 4) == 1


def test_nccl_asked_for_on_a_shared_gpu_is_a_skip_with_its_reason() -> None:
    cells = by_world(config(backend="nccl"))
    assert cells[1].skip is None
    skip = cells[2].skip
    assert skip is not None and skip.code == NCCL_SHARED_GPU
    assert "NCCL refuses" in (cells[2].skip_reason or "")


def test_a_pipeline_on_gloo_cuda_is_skipped_its_collectives_layouts_are_not() -> None:
    pipelines = config(models=["tiny-gpt2"], gpu_counts=[2], training={"strategy": ["pp"]})
    [pp] = build_plan(pipelines, ONE_GPU)
    assert pp.skip is not None and pp.skip.code == GLOO_CUDA_P2P
    assert "send/recv" in (pp.skip_reason or "")
    layouts = config(
        models=["tiny-gpt2"], gpu_counts=[2], training={"strategy": ["ddp", "fsdp", "tp"]}
    )
    assert [p.skip for p in build_plan(layouts, ONE_GPU)] == [None, None, None]
    # gloo on CUDA asked for on GPUs enough: the same send/recv, the same skip
    [real] = build_plan(
        config(
            models=["tiny-gpt2"],
            gpu_counts=[2],
            backend="gloo",
            launcher={},
            **{"training": {"strategy": ["pp"]}},
        ),
        TWO_GPUS,
    )
    assert real.skip is not None and real.skip.code == GLOO_CUDA_P2P


def test_a_real_cells_definition_and_id_do_not_move_with_the_setting() -> None:
    shared, plain = by_world(config()), by_world(config(launcher={}))
    assert shared[1].cell.id == plain[1].cell.id
    assert json.loads(shared[2].definition)["ranks_per_gpu"] == 2
    assert "ranks_per_gpu" not in json.loads(shared[1].definition)


@pytest.mark.parametrize(
    ("launcher", "device", "words"),
    [({"kind": "slurm"}, "cuda", "launcher.kind 'local'"), ({}, "cpu", "device 'cpu'")],
)
def test_the_setting_is_refused_where_it_cannot_apply(
    launcher: dict[str, Any], device: str, words: str
) -> None:
    with pytest.raises(ValidationError, match=words):
        config(device=device, launcher={"ranks_per_gpu": 2, **launcher})


def test_the_stored_result_keeps_the_mark() -> None:
    planned = by_world(config())[2]
    result = unmeasured_result(
        planned, Status.FAILED, CellError(why=Finding(code="plan.no_gpu")), planned.cell_warnings
    )
    stored = CellResult.model_validate_json(result.model_dump_json())
    assert stored.cell.ranks_per_gpu == 2 and stored.cell.shares_gpu
    assert SHARED_GPU in [w.finding.code for w in stored.warnings if w.finding]
    assert cell_row(stored)["ranks_per_gpu"] == 2


def _row(world: int, shared: int, thr: float, **more: Any) -> dict[str, Any]:
    return {
        "cell_id": f"c{world}-{shared}",
        "status": "ok",
        "model_label": "m",
        "batch_size": 8,
        "precision": "fp32",
        "strategy": "ddp",
        "layout_family": "ddp",
        "device": "cuda",
        "world_size": world,
        "ranks_per_gpu": shared,
        "samples_per_s": thr,
        "samples_per_s_repeats": f"{thr};{thr * 1.01};{thr * 0.99}",
        "error": None,
        **more,
    }


def test_shared_cells_are_never_ranked_compared_or_scaled() -> None:
    table = pd.DataFrame(
        [_row(1, 1, 100.0), _row(2, 2, 150.0), _row(4, 4, 180.0), _row(2, 1, 190.0)]
    )
    ranked = comparable(table)
    assert list(ranked["cell_id"]) == ["c1-1", "c2-1"]
    [why] = left_out_findings(table)  # what the report's notes say of the two left out
    assert why.code == "ranking.shared_gpu" and why.figures == {"cells": 2}
    assert say(why).startswith("2 cells' ranks shared a GPU")
    scaled = add_scaling_efficiency(table).set_index("cell_id")
    assert scaled.loc["c2-2", "scaling_efficiency_reason"] == NOT_SCALING
    assert pd.isna(scaled.loc["c2-2", "scaling_efficiency"])
    assert pd.isna(scaled.loc["c4-4", "scaling_efficiency"])
    # the real two-rank cell scales against the real one-rank cell alone
    assert scaled.loc["c2-1", "scaling_efficiency"] == pytest.approx(190.0 / 200.0)
    assert set(scaling_table(table)["cell_id"]) == {"c1-1", "c2-1"}
    # a table written before the column: nothing shared, nothing left out for it
    assert len(comparable(table.drop(columns="ranks_per_gpu"))) == 4


def test_a_shared_cell_is_no_side_of_a_compile_gain() -> None:
    compiled = _row(2, 2, 150.0, strategy="ddp")
    eager = _row(2, 2, 100.0, strategy="ddp")
    gain = compile_gain(compiled, eager)
    assert left_out(compiled) and gain is not None and gain.code == "ranking.shared_gpu"
    assert "never ranked or compared" in say(gain)


def test_a_shared_cell_is_no_forecast_input() -> None:
    planned = by_world(config())[2]
    result = CellResult(cell=planned.cell, status=Status.OK)
    [[group]] = [list(g.values()) for g in measured_groups([result]).values()]
    assert group.cells == [] and "shared a GPU" in group.left_out[planned.cell.id]


@pytest.mark.slow  # starts a child command
def test_profile_ranks_per_gpu_runs_two_ranks_on_one_gpu_with_a_straggler() -> None:
    from torchscale.contracts.worker_spec import parse_delay
    from torchscale.orchestration.profiling.standalone import ProfileOptions, plan_profile

    shared = ProfileOptions(
        gpus=2,
        model="tiny-mlp",
        device="cuda",
        steps=10,
        ranks_per_gpu=2,
        inject_delay=(parse_delay("1:backward:30"),),
    )
    plan = plan_profile(shared, ONE_GPU)
    assert plan.world == 2 and plan.planned.skip is None
    assert (plan.planned.cell.ranks_per_gpu, plan.planned.cell.backend) == (2, "gloo")
    # without it, one GPU profiles one rank, as before
    alone = plan_profile(ProfileOptions(gpus=2, model="tiny-mlp", device="cuda"), ONE_GPU)
    assert alone.world == 1 and alone.planned.cell.ranks_per_gpu == 1


def test_the_reports_cell_label_says_the_ranks_shared_a_gpu() -> None:
    from torchscale.contracts.cell import shared_gpus

    assert shared_gpus(2) == "(2 ranks per GPU)"
    assert shared_gpus(1) == shared_gpus(None) == shared_gpus(float("nan")) == ""
