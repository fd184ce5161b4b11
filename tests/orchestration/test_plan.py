"""The benchmark plan: expansion order and count, cell ids, device/backend resolution, skips and
warnings. Pure functions over a validated config and a described machine: nothing is launched."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from torchscale.contracts.cell import Status
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellError
from torchscale.contracts.wording.cell_warnings import warning_words
from torchscale.offline.results.store import ResultStore
from torchscale.orchestration.config.loader import parse_config
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine, backend_for, device_for
from torchscale.orchestration.plan.planned import Plan, PlannedCell
from torchscale.orchestration.sweep import unmeasured_result

CPU_BOX = Machine(gpu_count=0, cpu_cores=2)
GPU_BOX = Machine(gpu_count=2, cpu_cores=32)
SAFE_ID = re.compile(r"^[A-Za-z0-9._-]+$")


def make_config(**overrides: Any) -> BenchConfig:
    data: dict[str, Any] = {
        "experiment_name": "plan",
        "models": ["tiny-mlp"],
        "batch_sizes": [8],
        "gpu_counts": [1, 2],
        "device": "cpu",
    }
    data.update(overrides)
    return BenchConfig.model_validate(data)


def ids(plan: Plan) -> list[str]:
    return [p.cell.id for p in plan]


def only_id(config: BenchConfig, machine: Machine = CPU_BOX) -> str:
    plan = build_plan(config, machine)
    assert len(plan) == 1
    return plan[0].cell.id


# ----------------------------------------------------------------------- expansion and order


def test_expansion_order_and_count() -> None:
    config = make_config(
        models=["tiny-mlp", "tiny-cnn"],
        training={"precision": ["fp32", "bf16"], "strategy": ["ddp", "fsdp"]},
        batch_sizes=[16, 8],
        gpu_counts=[4, 1, 2],
    )
    plan = build_plan(config, CPU_BOX)
    assert len(plan) == 2 * 2 * 2 * 2 * 3
    got = [
        (p.cell.model, p.cell.precision, p.cell.strategy, p.cell.batch_size, p.cell.world_size)
        for p in plan
    ]
    # model, precision, strategy, batch size (as written), world size (sorted, innermost)
    expected = list(
        itertools.product(
            ["tiny-mlp", "tiny-cnn"], ["fp32", "bf16"], ["ddp", "fsdp"], [16, 8], [1, 2, 4]
        )
    )
    assert got == expected
    assert len(set(ids(plan))) == len(plan)


def test_single_values_expand_to_one_cell() -> None:
    config = make_config(gpu_counts=[2], training={"precision": "bf16", "strategy": "fsdp"})
    plan = build_plan(config, CPU_BOX)
    assert len(plan) == 1
    cell = plan[0].cell
    assert (cell.precision, cell.strategy, cell.world_size, cell.batch_size) == (
        "bf16",
        "fsdp",
        2,
        8,
    )


def test_cell_id_is_readable() -> None:
    config = make_config(gpu_counts=[2], training={"precision": "bf16", "strategy": "fsdp"})
    cell_id = only_id(config)
    assert re.fullmatch(r"tiny-mlp__b8__w2__bf16__fsdp__[0-9a-f]{8}", cell_id), cell_id


# --------------------------------------------------------------------------------- cell ids


def test_cell_ids_stable_within_a_process() -> None:
    first = ids(build_plan(make_config(gpu_counts=[1, 2, 4]), CPU_BOX))
    second = ids(build_plan(make_config(gpu_counts=[4, 2, 1]), CPU_BOX))
    assert first == second


CONFIG_YAML = """\
experiment_name: ids
models:
  - {name: tiny-mlp, options: {hidden: 64, layers: 3}}
  - {name: tiny-gpt2, label: "GPT tiny / v1"}
batch_sizes: [8, 16]
gpu_counts: [1, 2]
device: cpu
training: {precision: [fp32, bf16]}
measurement: {steps: 7, repeats: 2}
"""

IDS_SCRIPT = """\
import json, sys
from torchscale.orchestration.config.loader import parse_config
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
config = parse_config(sys.stdin.read())
print(json.dumps([p.cell.id for p in build_plan(config, Machine(0, 2))]))
"""


@pytest.mark.slow  # starts a child process
def test_cell_ids_stable_across_processes() -> None:
    """Another interpreter (another hash seed) computes the same ids: resume depends on it."""
    here = ids(build_plan(parse_config(CONFIG_YAML), CPU_BOX))
    for seed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-c", IDS_SCRIPT],
            input=CONFIG_YAML,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=True,
        )
        assert json.loads(proc.stdout) == here


def test_option_order_does_not_change_the_id() -> None:
    a = make_config(models=[{"name": "tiny-mlp", "options": {"hidden": 64, "layers": 3}}])
    b = make_config(models=[{"name": "tiny-mlp", "options": {"layers": 3, "hidden": 64}}])
    assert ids(build_plan(a, CPU_BOX)) == ids(build_plan(b, CPU_BOX))


BASE = {"gpu_counts": [2]}


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"measurement": {"steps": 21}}, id="measurement.steps"),
        pytest.param({"measurement": {"repeats": 5}}, id="measurement.repeats"),
        pytest.param({"measurement": {"warmup_steps": 1}}, id="measurement.warmup_steps"),
        pytest.param({"measurement": {"duration_s": 2.0}}, id="measurement.duration_s"),
        pytest.param({"models": [{"name": "tiny-mlp", "options": {"hidden": 64}}]}, id="option"),
        pytest.param({"models": [{"name": "tiny-mlp", "label": "mlp"}]}, id="label"),
        pytest.param({"training": {"seed": 1}}, id="training.seed"),
        pytest.param({"training": {"grad_accum_steps": 2}}, id="training.grad_accum_steps"),
        pytest.param({"training": {"optimizer": "sgd"}}, id="training.optimizer"),
        pytest.param({"training": {"ddp": {"bucket_cap_mb": 50.0}}}, id="training.ddp"),
        pytest.param({"training": {"compile": True}}, id="training.compile"),
        pytest.param({"data": {"seq_len": 64}}, id="data.seq_len"),
    ],
)
def test_id_changes_with_the_definition(change: dict[str, Any]) -> None:
    base_id = only_id(make_config(**BASE))
    changed_id = only_id(make_config(**{**BASE, **change}))
    assert changed_id != base_id
    # same readable part for the same model/batch/world/precision/strategy: only the hash moved
    if "models" not in change:
        assert changed_id.rsplit("__", 1)[0] == base_id.rsplit("__", 1)[0]


def test_id_changes_with_the_resolved_device() -> None:
    cpu_id = only_id(make_config(gpu_counts=[1], device="auto"), CPU_BOX)
    cuda_id = only_id(make_config(gpu_counts=[1], device="auto"), GPU_BOX)
    assert cpu_id != cuda_id


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"experiment_name": "other"}, id="experiment_name"),
        pytest.param({"description": "words"}, id="description"),
        pytest.param({"launcher": {"cell_timeout_s": 30.0}}, id="launcher.cell_timeout_s"),
        pytest.param({"backend": "gloo"}, id="backend auto == resolved gloo"),
        pytest.param({"batch_sizes": [8, 32]}, id="another batch size"),
        pytest.param({"models": ["tiny-cnn", "tiny-mlp"]}, id="another model first"),
    ],
)
def test_id_unchanged_by_what_does_not_shape_the_result(change: dict[str, Any]) -> None:
    base = {p.cell.id for p in build_plan(make_config(**BASE), CPU_BOX)}
    changed = {p.cell.id for p in build_plan(make_config(**{**BASE, **change}), CPU_BOX)}
    assert base <= changed


def test_id_changes_with_omp_num_threads() -> None:
    base = make_config(**BASE)
    default_threads = build_plan(base, CPU_BOX)[0].launch.omp_num_threads
    changed = make_config(**BASE, launcher={"omp_num_threads": default_threads + 1})
    assert only_id(changed) != only_id(base)
    # the same effective thread count, spelled explicitly, is the same cell
    same = make_config(**BASE, launcher={"omp_num_threads": default_threads})
    assert only_id(same) == only_id(base)


def test_default_threads_are_equal_for_every_world_size() -> None:
    """Every rank gets cores // largest world size, whatever its own cell's world size."""
    config = make_config(**{**BASE, "gpu_counts": [1, 2, 4]})
    threads = {
        p.cell.world_size: p.launch.omp_num_threads
        for p in build_plan(config, Machine(gpu_count=0, cpu_cores=8))
    }
    assert threads == {1: 2, 2: 2, 4: 2}


@pytest.mark.parametrize(
    "label",
    ["My Model / v2 (big)", "a/b", "a b", "../../etc/passwd", "modèle", "x:y*z?", "  "],
)
def test_ids_are_filesystem_safe(label: str, tmp_path: Path) -> None:
    config = make_config(models=[{"name": "tiny-mlp", "label": label}], gpu_counts=[1])
    planned = build_plan(config, CPU_BOX)[0]
    cell_id = planned.cell.id
    assert SAFE_ID.fullmatch(cell_id), cell_id
    assert cell_id not in (".", "..")
    store = ResultStore(tmp_path)
    path = store.write_cell(
        unmeasured_result(planned, Status.SKIPPED, CellError(why=Finding(code="plan.no_gpu")))
    )
    assert path.parent == tmp_path / "cells"
    assert store.read_cell(cell_id) is not None


def test_labels_differing_only_in_unsafe_characters_get_distinct_ids() -> None:
    config = make_config(
        models=[
            {"name": "tiny-mlp", "label": "a/b"},
            {"name": "tiny-mlp", "label": "a b"},
            {"name": "tiny-mlp", "label": "a_b"},
        ],
        gpu_counts=[1],
    )
    cell_ids = ids(build_plan(config, CPU_BOX))
    assert len(set(cell_ids)) == 3
    assert all(i.startswith("a_b__") for i in cell_ids)


def test_long_label_still_gives_a_writable_id(tmp_path: Path) -> None:
    config = make_config(models=[{"name": "tiny-mlp", "label": "L" * 300}], gpu_counts=[1])
    planned = build_plan(config, CPU_BOX)[0]
    store = ResultStore(tmp_path)
    store.write_cell(
        unmeasured_result(planned, Status.SKIPPED, CellError(why=Finding(code="plan.no_gpu")))
    )
    assert store.read_cell(planned.cell.id) is not None


# ------------------------------------------------------------------ device and backend


@pytest.mark.parametrize(
    ("device", "gpus", "expected_device", "expected_backend"),
    [
        ("auto", 8, "cuda", "nccl"),
        ("auto", 1, "cuda", "nccl"),
        ("auto", 0, "cpu", "gloo"),
        ("cpu", 8, "cpu", "gloo"),
        ("cuda", 4, "cuda", "nccl"),
        ("cuda", 0, "cuda", "nccl"),
    ],
)
def test_device_and_backend_resolution(
    device: str, gpus: int, expected_device: str, expected_backend: str
) -> None:
    config = make_config(device=device)
    machine = Machine(gpu_count=gpus, cpu_cores=2)
    resolved = device_for(config.device, machine)
    assert resolved == expected_device
    assert backend_for(config.backend, resolved) == expected_backend
    for planned in build_plan(config, machine):
        assert (planned.cell.device, planned.cell.backend) == (expected_device, expected_backend)


def test_explicit_backend_is_kept() -> None:
    config = make_config(device="cuda", backend="gloo")
    assert backend_for(config.backend, "cuda") == "gloo"
    assert {p.cell.backend for p in build_plan(config, GPU_BOX)} == {"gloo"}


# --------------------------------------------------------------------- skips and warnings


def test_cuda_cells_needing_more_gpus_than_the_node_has_are_skipped() -> None:
    config = make_config(device="cuda", gpu_counts=[1, 2, 4, 8])
    plan = build_plan(config, Machine(gpu_count=2, cpu_cores=16))
    by_world = {p.cell.world_size: p for p in plan}
    assert by_world[1].skip_reason is None
    assert by_world[2].skip_reason is None
    # the count is this node's: the reason says so
    assert by_world[4].skip_reason == "needs 4 GPUs; this node has 2"
    assert by_world[8].skip_reason == "needs 8 GPUs; this node has 2"
    # the only warning a planned CUDA cell of a tiny model gets: why it does not compile
    assert all(p.warnings == () for p in plan if p.skip_reason is not None)
    assert all(
        [warning_words(w).split(":")[0] for w in p.warnings] == ["training.compile off"]
        for p in plan
        if p.skip_reason is None
    )


def test_cuda_requested_without_gpus_skips_every_cell() -> None:
    plan = build_plan(make_config(device="cuda", gpu_counts=[1, 2]), CPU_BOX)
    assert [p.skip_reason for p in plan] == [
        "device 'cuda' requested but no CUDA GPU is visible"
    ] * 2


def test_cpu_oversubscription_is_warned_not_skipped() -> None:
    plan = build_plan(make_config(gpu_counts=[1, 2, 4]), Machine(gpu_count=0, cpu_cores=2))
    by_world = {p.cell.world_size: p for p in plan}
    assert all(p.skip_reason is None for p in plan)
    assert by_world[1].warnings == ()
    assert by_world[2].warnings == ()
    (warning,) = by_world[4].warnings
    assert warning_words(warning).startswith("4 CPU ranks on 2 core(s): oversubscribed")
    assert warning.kind == "contention"


def test_amp_on_cpu_is_warned() -> None:
    plan = build_plan(
        make_config(gpu_counts=[1], training={"precision": ["fp32", "amp", "bf16"]}), CPU_BOX
    )
    warned = {p.cell.precision: p.warnings for p in plan}
    assert warned["fp32"] == ()
    assert warned["bf16"] == ()
    assert len(warned["amp"]) == 1
    assert "amp" in warning_words(warned["amp"][0])
    assert "CPU" in warning_words(warned["amp"][0])


def test_amp_on_cuda_is_not_warned() -> None:
    config = make_config(device="cuda", training={"precision": "amp", "compile": True})
    plan = build_plan(config, GPU_BOX)
    assert all(p.warnings == () and p.skip_reason is None for p in plan)


def test_amp_and_oversubscription_warnings_together() -> None:
    plan = build_plan(make_config(gpu_counts=[3], training={"precision": "amp"}), CPU_BOX)
    assert len(plan[0].warnings) == 2


def test_nccl_without_gpus_is_skipped_not_launched() -> None:
    config = make_config(**BASE, device="auto", backend="nccl")  # auto resolves to cpu here
    planned = build_plan(config, CPU_BOX)[0]
    assert planned.cell.backend == "nccl"
    assert planned.skip_reason == "backend 'nccl' needs CUDA GPUs; none is visible"


@pytest.mark.parametrize("path", sorted((Path(__file__).parents[2] / "examples").glob("*.yaml")))
def test_examples_plan_and_build_on_a_gpu_node(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every shipped example expands into runnable cells on an 8-GPU node, and every model in
    it builds with its options (on the meta device: no memory). A plug-in example's module is
    found as its ranks find it: through the PYTHONPATH its launcher.env gives, relative to the
    repository root the example runs from."""
    import torch

    from torchscale.orchestration.config.loader import load_config
    from torchscale.rank.models import build_model

    config = load_config(path)
    root = Path(__file__).parents[2]
    for part in (config.launcher.env or {}).get("PYTHONPATH", "").split(os.pathsep):
        if part:
            monkeypatch.syspath_prepend(str(root / part))
    plan = build_plan(config, Machine(gpu_count=8, cpu_cores=64))
    assert plan and all(p.skip_reason is None for p in plan)
    for model in config.models:
        with torch.device("meta"):
            build_model(
                model.name,
                model.options,
                seq_len=config.data.seq_len,
                image_size=config.data.image_size,
            )


# ------------------------------------------------------------- tensor parallelism and nodes


def _tp_plan(strategy: str, tp: int | None, across: bool = False) -> dict[tuple[int, int], Any]:
    """(nodes, ranks per node) -> planned cell of a tp/hybrid sweep over 1 and 2 nodes."""
    config = make_config(
        models=["tiny-gpt2"],
        gpu_counts=[2, 4],
        training={
            "strategy": strategy,
            "parallel": {"tp": [tp] if tp else None, "tp_across_nodes": across},
        },
        launcher={"kind": "slurm", "nodes": [1, 2]},
    )
    plan = build_plan(config, Machine(gpu_count=0, cpu_cores=64))
    return {(p.cell.nodes, p.launch.nproc_per_node): p for p in plan}


def test_pure_tp_over_two_nodes_is_skipped_with_the_hybrid_that_keeps_it_inside() -> None:
    cells = _tp_plan("tp", None)
    assert cells[(1, 2)].skip_reason is None
    assert cells[(1, 4)].skip_reason is None
    figures = {"tp": 4, "nodes": 2, "per_node": 2}
    assert cells[(2, 2)].skip == Finding(code="plan.tp_spans_nodes", figures=figures)
    reason = cells[(2, 2)].skip_reason or ""
    assert reason.startswith("tensor-parallel groups of 4 ranks would span nodes (2 nodes x 2")
    assert "hybrid fsdp_tp with parallel.tp 2" in reason
    assert "tp_across_nodes" in reason


def test_tp_across_nodes_when_asked_explicitly() -> None:
    cells = _tp_plan("tp", None, across=True)
    assert cells[(2, 2)].skip_reason is None
    # the flag does not enter the definition: the id of a cell it does not change stays put
    assert cells[(1, 4)].cell.id == _tp_plan("tp", None)[(1, 4)].cell.id


def test_hybrid_tp_groups_must_divide_the_ranks_of_a_node() -> None:
    inside = _tp_plan("hybrid", 2)
    assert inside[(2, 2)].skip_reason is None  # fsdp across nodes, tp 2 on each node
    assert inside[(2, 4)].skip_reason is None
    spans = _tp_plan("hybrid", 4)
    assert "would span nodes (2 nodes x 2 ranks)" in (spans[(2, 2)].skip_reason or "")
    assert spans[(2, 4)].skip_reason is None


# ------------------------------------------------------------------ the workload's defaults (27)


def test_compile_defaults_on_for_cuda_cells_and_off_on_cpu() -> None:
    """training.compile: null compiles CUDA cells (not pipelines) and leaves CPU cells eager;
    the resolved value is the cell's, in its definition, and a set value wins."""
    cpu = build_plan(make_config(gpu_counts=[1]), CPU_BOX)[0]
    cuda = build_plan(make_config(models=["gpt2"], gpu_counts=[1], device="cuda"), GPU_BOX)[0]
    assert cpu.training.compile is False and '"compile":false' in cpu.definition
    assert cuda.training.compile is True and '"compile":true' in cuda.definition
    assert cuda.warnings == ()
    eager = build_plan(
        make_config(models=["gpt2"], gpu_counts=[1], device="cuda", training={"compile": False}),
        GPU_BOX,
    )
    assert eager[0].training.compile is False and eager[0].cell.id != cuda.cell.id
    pipelines = make_config(
        models=["tiny-gpt2"], gpu_counts=[2], device="cuda", training={"strategy": ["pp"]}
    )
    [pp] = build_plan(pipelines, GPU_BOX)
    assert pp.skip_reason is None and pp.training.compile is False


def test_compile_null_on_cpu_is_the_same_cell_as_compile_false() -> None:
    """compile: false was the default; null on CPU still means it: one cell, one id."""
    assert only_id(make_config(gpu_counts=[1])) == only_id(
        make_config(gpu_counts=[1], training={"compile": False})
    )


def _training_definition(cell: PlannedCell) -> dict[str, Any]:
    return dict(json.loads(cell.definition)["training"])


def test_what_a_null_option_means_is_in_the_definition() -> None:
    """Fused AdamW, channels_last and the loss the measured steps run are written resolved
    into every cell's definition, so a result measured with another optimizer kernel or loss
    is never resumed as today's; the worker spec carries the same values the rank trains by."""
    [gpt] = build_plan(make_config(models=["tiny-gpt2"], gpu_counts=[1]), CPU_BOX)
    [mlp] = build_plan(make_config(gpu_counts=[1]), CPU_BOX)
    compiled = {"compile": True}  # a tiny model on CUDA compiles only when asked to
    [cnn_gpu] = build_plan(
        make_config(models=["tiny-cnn"], gpu_counts=[1], device="cuda", training=compiled),
        GPU_BOX,
    )
    [gpt_gpu] = build_plan(
        make_config(models=["tiny-gpt2"], gpu_counts=[1], device="cuda", training=compiled),
        GPU_BOX,
    )
    [pipeline] = build_plan(
        make_config(
            models=["tiny-gpt2"], gpu_counts=[2], device="cuda", training={"strategy": ["pp"]}
        ),
        GPU_BOX,
    )
    [sgd] = build_plan(make_config(gpu_counts=[1], training={"optimizer": "sgd"}), CPU_BOX)
    [plugin] = build_plan(
        make_config(models=["tests.plugin_models:factory"], gpu_counts=[1]), CPU_BOX
    )
    seen = {
        name: {k: _training_definition(c)[k] for k in ("fused_optimizer", "channels_last", "loss")}
        for name, c in [
            ("gpt", gpt),
            ("mlp", mlp),
            ("cnn_gpu", cnn_gpu),
            ("gpt_gpu", gpt_gpu),
            ("pipeline", pipeline),
            ("sgd", sgd),
            ("plugin", plugin),
        ]
    }
    assert seen == {
        "gpt": {"fused_optimizer": True, "channels_last": False, "loss": "blockwise"},
        "mlp": {"fused_optimizer": True, "channels_last": False, "loss": "plain"},
        "cnn_gpu": {"fused_optimizer": True, "channels_last": True, "loss": "compiled"},
        "gpt_gpu": {"fused_optimizer": True, "channels_last": False, "loss": "compiled"},
        "pipeline": {"fused_optimizer": True, "channels_last": False, "loss": "plain"},
        "sgd": {"fused_optimizer": False, "channels_last": False, "loss": "plain"},
        "plugin": {"fused_optimizer": True, "channels_last": None, "loss": "plain"},
    }
    spec = gpt.worker_spec(Path("r.json"), Path("s.jsonl"))
    assert (spec.training.fused_optimizer, spec.training.channels_last) == (True, False)


def test_setting_an_option_to_what_null_means_is_the_same_cell() -> None:
    """One cell, however it is spelled: null and its resolved value share the id; another
    value is another cell."""

    def only(**training: Any) -> str:
        [cell] = build_plan(
            make_config(models=["tiny-gpt2"], gpu_counts=[1], training=training), CPU_BOX
        )
        return cell.cell.id

    assert only() == only(fused_optimizer=True, channels_last=False, compile=False)
    assert only() != only(fused_optimizer=False)
    assert only() != only(channels_last=True)
    assert only() != only(compile=True)


def test_bf16_activations_are_on_in_bf16_cells_and_in_the_definition_only_there() -> None:
    """`training.bf16_activations` null is on for bf16 cells of a model with
    torchscale's residual stream and off for the others; a cell it leaves off keeps the id it
    had before the option existed (--resume reuses it), a bf16 cell's id moves with it (its
    earlier result ran with an fp32 residual stream)."""
    config = make_config(
        models=["tiny-gpt2"], gpu_counts=[1], training={"precision": ["fp32", "amp", "bf16"]}
    )
    fp32, amp, bf16 = build_plan(config, CPU_BOX)
    assert [c.training.bf16_activations for c in (fp32, amp, bf16)] == [False, False, True]
    assert "bf16_activations" not in fp32.definition + amp.definition
    assert '"bf16_activations":true' in bf16.definition
    off = make_config(
        models=["tiny-gpt2"],
        gpu_counts=[1],
        training={"precision": ["fp32", "amp", "bf16"], "bf16_activations": False},
    )
    fp32_off, amp_off, bf16_off = build_plan(off, CPU_BOX)
    assert (fp32_off.cell.id, amp_off.cell.id) == (fp32.cell.id, amp.cell.id)
    assert bf16_off.cell.id != bf16.cell.id and "bf16_activations" not in bf16_off.definition
    spec = bf16.worker_spec(Path("r.json"), Path("s.jsonl"))
    assert spec.training.bf16_activations is True


def test_bf16_activations_stay_off_for_a_model_it_does_nothing_to() -> None:
    """A bf16 cell of a model whose residual stream is not torchscale's (an MLP, a CNN) keeps
    the id it had before the option existed: the option would change its id and nothing else."""
    for name in ("tiny-mlp", "tiny-cnn"):
        config = make_config(models=[name], gpu_counts=[1], training={"precision": ["bf16"]})
        off = make_config(
            models=[name],
            gpu_counts=[1],
            training={"precision": ["bf16"], "bf16_activations": False},
        )
        [on_by_default] = build_plan(config, CPU_BOX)
        [set_off] = build_plan(off, CPU_BOX)
        assert on_by_default.training.bf16_activations is False, name
        assert "bf16_activations" not in on_by_default.definition, name
        assert on_by_default.cell.id == set_off.cell.id, name


def test_gpt2_cells_carry_the_workload_options_they_train_with() -> None:
    """The speed-first defaults are in the definition (a result measured with dropout 0.1 and
    no padding is never resumed as today's workload), and faithful: true is the same cell as
    the published options written out."""
    [fast] = build_plan(make_config(models=["tiny-gpt2"], gpu_counts=[1]), CPU_BOX)
    assert fast.model.options == {"dropout": 0.0, "pad_vocab_to": 64}
    assert '"pad_vocab_to":64' in fast.definition
    spec = fast.worker_spec(Path("r.json"), Path("s.jsonl"))
    assert spec.model.options == {"dropout": 0.0, "pad_vocab_to": 64}
    faithful = make_config(models=[{"name": "tiny-gpt2", "options": {"faithful": True}}])
    written = make_config(
        models=[{"name": "tiny-gpt2", "options": {"dropout": 0.1, "pad_vocab_to": 1}}]
    )
    assert ids(build_plan(faithful, CPU_BOX)) == ids(build_plan(written, CPU_BOX))
    assert ids(build_plan(faithful, CPU_BOX)) != ids(
        build_plan(make_config(models=["tiny-gpt2"]), CPU_BOX)
    )


# ----------------------------------------------------------------------- batch_sizes: auto

H100_BOX = Machine(gpu_count=1, cpu_cores=16, gpu_memory_bytes=80 * 1024**3)


def test_auto_batches_fill_the_gpu_by_the_memory_estimate() -> None:
    """Without batch_sizes (auto), each model and precision gets the largest power of two its
    memory estimate fits in 80 % of the GPU, one batch each, with the line that says why;
    GPT-2 bf16 on 80 GiB: 64 (below the 75 the max-batch search found on one H100,
    docs/measured.md), fp32 half of it."""
    from torchscale.contracts.model_specs.registry import BUILTIN
    from torchscale.orchestration.memory_estimate import activation_bytes, fitting_batch

    config = make_config(
        models=["gpt2", "resnet50"],
        batch_sizes="auto",
        gpu_counts=[1],
        device="cuda",
        training={"precision": ["bf16", "fp32"]},
    )
    plan = build_plan(config, H100_BOX)
    chosen = {(p.cell.label, p.cell.precision): p.cell.batch_size for p in plan}
    assert chosen[("gpt2", "bf16")] == 64 and chosen[("gpt2", "fp32")] == 32
    for (label, precision), batch in chosen.items():
        facts = BUILTIN[label].measured
        per_sample = activation_bytes(
            facts.activation_bytes_fp32, facts.activation_bytes_bf16, precision
        )
        fit = fitting_batch(80 * 1024**3, facts.parameters, per_sample, precision=precision)
        assert batch == fit.batch
        assert any(n.startswith(f"{label} {precision}: batch {batch} (") for n in plan.notes)
    assert len(plan.notes) == 4 and all("80 GiB" in n for n in plan.notes)
    assert plan.config_yaml.rstrip().endswith(plan.notes[-1])  # kept beside the results
    assert "batch_sizes: auto" in plan.config_yaml


def test_auto_batches_are_eight_on_cpu_and_a_list_is_kept_as_written() -> None:
    plan = build_plan(
        make_config(batch_sizes="auto", models=["tiny-gpt2"], gpu_counts=[1]), CPU_BOX
    )
    assert [p.cell.batch_size for p in plan] == [8]
    assert plan.notes == (
        "tiny-gpt2 fp32: batch 8 (batch_sizes auto on CPU: host memory does "
        "not limit a CPU benchmark)",
    )
    assert build_plan(make_config(), CPU_BOX).notes == ()
    assert (
        BenchConfig.model_validate(
            {"experiment_name": "x", "models": ["tiny-mlp"], "gpu_counts": [1]}
        ).batch_sizes
        == "auto"
    ), "batch_sizes may be left out: auto"


def test_auto_batches_on_cpu_keep_under_max_batch_limit() -> None:
    """memory.max_batch_limit caps the CPU batch too, and the note says it did."""
    plan = build_plan(
        make_config(
            batch_sizes="auto",
            models=["tiny-gpt2"],
            gpu_counts=[1],
            memory={"max_batch_limit": 4},
        ),
        CPU_BOX,
    )
    assert [p.cell.batch_size for p in plan] == [4]
    assert plan.notes[0].endswith("; capped by memory.max_batch_limit 4)")


def test_auto_batches_need_the_gpus_memory() -> None:
    """Slurm and Kubernetes cells run on nodes the host cannot read: one clear line."""
    from torchscale.contracts.errors import UsageError

    config = make_config(batch_sizes="auto", gpu_counts=[1], device="cuda")
    with pytest.raises(UsageError, match="batch_sizes: auto sizes each batch from the GPU's"):
        build_plan(config, GPU_BOX)


def test_auto_batches_count_a_model_without_stored_facts_on_the_meta_device() -> None:
    """Another sequence length (or a plug-in) has no stored count: it is counted, and a
    shorter sequence fits a larger batch."""
    short = make_config(
        models=["gpt2"],
        batch_sizes="auto",
        gpu_counts=[1],
        device="cuda",
        training={"precision": ["bf16"]},
        data={"seq_len": 256},
    )
    plug = make_config(
        models=["tests.plugin_models:decoder"],
        batch_sizes="auto",
        gpu_counts=[1],
        device="cuda",
        memory={"max_batch_limit": 64},
    )
    [cell] = build_plan(short, H100_BOX)
    assert cell.cell.batch_size > 64
    [plugin] = build_plan(plug, H100_BOX)
    assert (
        plugin.cell.batch_size == 64 and "max_batch_limit 64" in build_plan(plug, H100_BOX).notes[0]
    )
