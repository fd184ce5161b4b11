"""`torchscale config init`: starter configs that validate and plan nothing infeasible, for
this machine and for named ones (no GPU needed: the plan takes the machine as data)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchscale.contracts.model_specs.registry import BUILTIN
from torchscale.contracts.parallel_shapes import MIN_MICROBATCH_SAMPLES
from torchscale.interfaces.cli.app import app
from torchscale.orchestration.config import load_config
from torchscale.orchestration.config.hardware import PROFILES, cpu_node
from torchscale.orchestration.config.starter import plan_starter
from torchscale.orchestration.memory_estimate import fitting_batch
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine

runner = CliRunner()


def init(tmp_path: Path, hardware: str) -> Path:
    out = tmp_path / f"{hardware}.yaml"
    result = runner.invoke(app, ["config", "init", "--hardware", hardware, "--output", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_this_machine_gets_a_cpu_config_that_validates_and_plans(tmp_path: Path) -> None:
    path = init(tmp_path, "auto")
    text = path.read_text()
    assert text.startswith("# torchscale starter config")
    config = load_config(path)
    assert config.device == "cpu" and config.models[0].name == "tiny-gpt2"
    validate = runner.invoke(app, ["config", "validate", str(path)])
    assert validate.exit_code == 0, validate.output
    dry = runner.invoke(app, ["benchmark", "-c", str(path), "--dry-run", "-o", str(tmp_path / "r")])
    assert dry.exit_code == 0, dry.output
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_named_nodes_plan_only_feasible_cells(tmp_path: Path, name: str) -> None:
    hw = PROFILES[name]
    config = load_config(init(tmp_path, name))
    assert config.gpu_counts == [n for n in (1, 2, 4, 8) if n <= hw.gpus]
    assert config.training.precision == (["bf16"] if hw.bf16 else ["amp"])
    if not hw.bf16 or hw.gpus == 1:  # fp16 cannot scale loss across shards; one GPU: no mesh
        assert config.training.strategy == ["ddp", "fsdp"]
    plan = build_plan(config, Machine(gpu_count=hw.gpus, cpu_cores=hw.cpu_cores))
    runnable = plan.runnable
    assert runnable, "a starter config must run something"
    for cell in plan:
        if cell.skip_reason is not None:
            # only model-parallel layouts a GPU count or the model cannot hold are skipped (tp
            # on one GPU, tp 8 of GPT-2's 12 heads), never for a choice the starter made
            assert cell.cell.strategy in ("tp", "pp", "hybrid"), cell.skip_reason
            # nor for the micro-batch count, but where the smallest batch cannot give each of
            # the micro-batches 1F1B needs over the node's stages MIN_MICROBATCH_SAMPLES
            micro = config.training.parallel.microbatches[0]
            too_small = cell.cell.batch_size < micro * MIN_MICROBATCH_SAMPLES
            if micro != max(4, hw.gpus) or not too_small:
                assert "micro-batches" not in cell.skip_reason, cell.skip_reason
    # every batch fits the memory estimate it was chosen by (the one batch_sizes: auto uses)
    gpt2 = BUILTIN["gpt2"].measured
    precision = "bf16" if hw.bf16 else "amp"
    activation = gpt2.activation_bytes_bf16 if hw.bf16 else gpt2.activation_bytes_fp32
    fit = fitting_batch(hw.gpu_memory_bytes or 0, gpt2.parameters, activation, precision=precision)
    assert max(config.batch_sizes) == fit.batch


def test_eight_h100s_get_the_batches_the_measured_search_allows() -> None:
    """On one H100 the max-batch search found 75 for GPT-2 bf16 (README), with the workload of
    then (fp32 residual stream, eager fp32 cross entropy: more bytes per sample than today's):
    the starter's largest batch is the power of two below it."""
    starter = plan_starter(PROFILES["h100-8x"])
    assert starter.batch_sizes == [16, 32, 64]
    assert starter.strategies == ["ddp", "fsdp", "tp", "pp", "hybrid"]


def test_one_cpu_core_gets_one_rank_and_no_model_parallelism() -> None:
    starter = plan_starter(cpu_node(1))
    assert starter.gpu_counts == [1] and starter.strategies == ["ddp", "fsdp"]


def test_an_existing_file_is_kept_without_force(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("keep me\n")
    result = runner.invoke(app, ["config", "init", "--hardware", "cpu", "--output", str(path)])
    assert result.exit_code == 2
    assert "exists" in result.output and "Traceback" not in result.output
    assert path.read_text() == "keep me\n"
    forced = runner.invoke(
        app, ["config", "init", "--hardware", "cpu", "--output", str(path), "--force"]
    )
    assert forced.exit_code == 0, forced.output
    load_config(path)


def test_unknown_hardware_is_one_line() -> None:
    result = runner.invoke(app, ["config", "init", "--hardware", "tpu-v5"])
    assert result.exit_code == 2
    assert "--hardware 'tpu-v5' is not known" in result.output
    assert "Traceback" not in result.output


def test_without_output_the_config_is_printed() -> None:
    result = runner.invoke(app, ["config", "init", "--hardware", "l4-1x"])
    assert result.exit_code == 0
    assert "models: [gpt2]" in result.output and "gpu_counts: [1]" in result.output
