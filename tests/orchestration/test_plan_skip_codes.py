"""Every reason the plan skips a cell, and every warning it gives, is a code and its figures
(contracts/finding.py), worded once by contracts/wording/plan.py: the
data source, the nodes, the mesh, compile and the model's layout each answer with their own
code, never a sentence (the retired `plan.infeasible` quoted one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchscale.contracts.cell import ParallelShape
from torchscale.contracts.cell_settings import ModelSpec
from torchscale.contracts.finding import Finding
from torchscale.contracts.model_tasks import unsupported
from torchscale.contracts.parallel_shapes import compile_problem, node_problem, world_problem
from torchscale.contracts.wording import say
from torchscale.interfaces.console.dry_run import plan_lines
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine, cell_shapes
from torchscale.rank.strategy_layouts import model_problem

CPU_BOX = Machine(gpu_count=0, cpu_cores=64)


def config(**overrides: Any) -> BenchConfig:
    base = {"experiment_name": "codes", "models": ["tiny-gpt2"], "batch_sizes": [8]}
    return BenchConfig.model_validate({**base, "gpu_counts": [2], **overrides})


def test_a_partial_node_is_a_code() -> None:
    slurm = {"kind": "slurm", "slurm": {"gpus_per_node": 8}}
    (shape,) = cell_shapes(config(gpu_counts=[12], launcher=slurm))
    assert shape.problem == Finding(code="plan.partial_nodes", figures={"world": 12, "per_node": 8})
    assert say(shape.problem) == (
        "12 GPUs do not fill whole nodes of 8 (launcher gpus_per_node); give launcher.nodes "
        "to choose the split"
    )


def test_the_data_source_answers_with_a_code() -> None:
    plan = build_plan(
        config(models=["tiny-cnn", "tiny-gpt2"], data={"source": "cifar100", "dir": "/d"}),
        CPU_BOX,
    )
    skips = {p.cell.model: p.skip for p in plan}
    assert skips["tiny-cnn"] is None
    skip = skips["tiny-gpt2"]
    assert skip is not None and skip.code == "plan.data_images_only"
    assert skip.figures["source"] == "cifar100" and "tiny-cnn" in skip.figures["models"]
    assert say(skip).startswith("data.source 'cifar100' holds RGB images: it feeds image models")
    assert unsupported("disk", "pkg.mod:factory") == Finding(
        code="plan.data_synthetic_only", figures={"source": "disk"}
    )


def test_the_mesh_checks_answer_with_codes() -> None:
    tp2 = ParallelShape(dp=1, tp=2, pp=1)
    assert world_problem("tp", tp2, 4) == Finding(
        code="plan.tp_not_world", figures={"tp": 2, "world": 4}
    )
    pp2 = ParallelShape(dp=1, tp=1, pp=2, microbatches=2, schedule="gpipe")
    assert world_problem("pp", pp2, 4) == Finding(
        code="plan.pp_not_world", figures={"pp": 2, "world": 4}
    )
    hybrid = ParallelShape(dp=1, tp=2, pp=1, hybrid="fsdp_tp")
    indivisible = world_problem("hybrid", hybrid, 3)
    assert indivisible == Finding(code="plan.mesh_indivisible", figures={"world": 3, "tp": 2})
    assert say(indivisible) == "world size 3 is not divisible by the mesh (tp 2)"
    spans = node_problem(ParallelShape(dp=1, tp=4, pp=1), 2, 2, across_nodes=False)
    assert spans == Finding(
        code="plan.tp_spans_nodes", figures={"tp": 4, "nodes": 2, "per_node": 2}
    )
    assert say(spans).startswith("tensor-parallel groups of 4 ranks would span nodes (2 nodes x")
    assert compile_problem(pp2, True) == Finding(code="plan.compiled_pipeline")
    assert compile_problem(pp2, False) is None


def test_the_model_layout_answers_with_a_code_and_the_plan_keeps_it() -> None:
    shape = ParallelShape(dp=1, tp=8, pp=1)
    problem = model_problem("tp", shape, 8, ModelSpec(name="tiny-gpt2"), 8, "fp32", 1, 64, None)
    assert problem is not None and problem.code == "layout.heads"
    assert problem.figures == {"block": 0, "heads": 4, "tp": 8}
    plan = build_plan(config(gpu_counts=[8], training={"strategy": ["tp"]}), CPU_BOX)
    (cell,) = plan.cells
    assert cell.skip == problem
    assert cell.skip_reason == "block 0: 4 attention heads are not divisible by tp=8"


def test_no_check_quotes_a_sentence_any_more() -> None:
    """Across plans that hit every planner check, no skip is `plan.infeasible`."""
    plans = [
        config(gpu_counts=[8], training={"strategy": ["tp"]}),
        config(gpu_counts=[2], training={"strategy": ["pp"], "compile": True}),
        config(models=["tiny-gpt2"], data={"source": "cifar100", "dir": "/d"}),
        config(gpu_counts=[12], launcher={"kind": "slurm", "slurm": {"gpus_per_node": 8}}),
    ]
    skips = [p.skip for c in plans for p in build_plan(c, CPU_BOX) if p.skip is not None]
    assert len(skips) == 4
    assert {s.code for s in skips} == {
        "layout.heads",
        "plan.compiled_pipeline",
        "plan.data_images_only",
        "plan.partial_nodes",
    }
    assert all(isinstance(v, (int, str, list)) for s in skips for v in s.figures.values())


def test_the_dry_run_words_the_codes_as_before(tmp_path: Path) -> None:
    """--dry-run's lines word each cell's skip and warnings from their codes, in the words
    the checks used to return."""
    box = Machine(gpu_count=0, cpu_cores=2)
    cfg = config(gpu_counts=[4, 8], training={"strategy": ["ddp", "tp"], "precision": ["amp"]})
    plan = build_plan(cfg, box)
    by_id = {(p.cell.strategy, p.cell.world_size): p for p in plan}
    warned, skipped = by_id["ddp", 4], by_id["tp", 8]
    assert [(w.kind, w.finding) for w in warned.warnings] == [
        ("other", Finding(code="warning.cpu_amp")),
        (
            "contention",
            Finding(code="warning.cpu_oversubscribed", figures={"ranks": 4, "cores": 2}),
        ),
    ]
    assert skipped.skip == Finding(code="layout.fp16_scaler")
    texts = [line.text for line in plan_lines(plan, ResultStore(tmp_path), {})]
    assert "   warn: amp (fp16 autocast) on CPU is slow and not representative of GPUs" in texts
    assert "   warn: 4 CPU ranks on 2 core(s): oversubscribed, timings include contention" in texts
    assert (
        "   skip: fp16 needs GradScaler, whose inf/NaN check sees only this rank's gradient "
        "shards or stages, so ranks could disagree on skipping a step; use bf16 or fp32" in texts
    )


def test_a_skipped_cells_result_stores_the_code_not_its_words(tmp_path: Path) -> None:
    """A skipped cell's `error.why` is the plan's finding, worded when shown; the result
    reads back with it."""
    from torchscale.orchestration.sweep import run_sweep

    plan = build_plan(config(gpu_counts=[8], training={"strategy": ["tp"]}), CPU_BOX)
    store = ResultStore(tmp_path / "skips")
    run_sweep(plan, store, {})
    result = store.read_cell(plan[0].cell.id)
    assert result is not None and result.error is not None
    figures = {"block": 0, "heads": 4, "tp": 8}
    assert result.error.why == Finding(code="layout.heads", figures=figures)
    assert say(result.error.finding) == "block 0: 4 attention heads are not divisible by tp=8"


def test_a_skip_is_shown_by_todays_words_for_its_code() -> None:
    """A result stores the skip's code; its words are made when shown."""
    from torchscale.contracts.cell import Status
    from torchscale.contracts.schema.cell_result import CellError, CellResult
    from torchscale.interfaces.console.cells import cell_lines

    cell = build_plan(config(), CPU_BOX)[0].cell
    skip = Finding(code="plan.needs_gpus", figures={"gpus": 2, "have": 1, "nodes": 1})
    coded = CellError(why=skip)
    shown = cell_lines(CellResult(cell=cell, status=Status.SKIPPED, error=coded))[0].text
    assert shown == "> [SKIP] skipped: needs 2 GPUs; this node has 1"
