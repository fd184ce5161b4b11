"""One config for CPU and GPU: `on_cuda` replaces keys only when the sweep runs on CUDA (device
cuda, or auto on a node with a GPU), is validated as strictly as the rest, and the plan says
which set applied; and `training.compile` left null stays eager on CUDA for models too small
to gain, with the reason in the cell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from torchscale.contracts.errors import ConfigError
from torchscale.contracts.training_defaults import COMPILE_MIN_PARAMETERS
from torchscale.contracts.wording.cell_warnings import warning_words
from torchscale.orchestration.config import load_config
from torchscale.orchestration.config.loader import parse_config
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine

ROOT = Path(__file__).resolve().parents[2]
CPU_BOX = Machine(gpu_count=0, cpu_cores=8)
GPU_BOX = Machine(gpu_count=8, cpu_cores=64)
ON_CUDA = {
    "models": ["gpt2"],
    "batch_sizes": [8],
    "training": {"precision": "bf16"},
    "measurement": {"steps": 30},
}


def make_config(**overrides: Any) -> BenchConfig:
    data: dict[str, Any] = {
        "experiment_name": "dev",
        "models": ["tiny-mlp"],
        "batch_sizes": [16],
        "gpu_counts": [1],
        "device": "auto",
        "training": {"strategy": "ddp"},
        "on_cuda": ON_CUDA,
    }
    data.update(overrides)
    return BenchConfig.model_validate(data)


def _seen(config: BenchConfig, machine: Machine) -> tuple[str, int, str, int, str, str]:
    [cell] = build_plan(config, machine)
    return (
        cell.cell.model,
        cell.cell.batch_size,
        cell.cell.precision,
        cell.measurement.steps or 0,
        cell.cell.strategy,
        cell.cell.device,
    )


@pytest.mark.parametrize(
    ("device", "machine", "expected"),
    [
        ("auto", GPU_BOX, ("gpt2", 8, "bf16", 30, "ddp", "cuda")),
        ("cuda", GPU_BOX, ("gpt2", 8, "bf16", 30, "ddp", "cuda")),
        ("auto", CPU_BOX, ("tiny-mlp", 16, "fp32", 10, "ddp", "cpu")),
        ("cpu", GPU_BOX, ("tiny-mlp", 16, "fp32", 10, "ddp", "cpu")),
    ],
)
def test_on_cuda_applies_only_to_a_cuda_sweep(
    device: str, machine: Machine, expected: tuple[Any, ...]
) -> None:
    config = make_config(device=device, measurement={"steps": 10})
    assert _seen(config, machine) == expected


def test_the_plan_says_which_set_applied_and_why() -> None:
    cuda = build_plan(make_config(), GPU_BOX)
    assert cuda.notes[0] == (
        "on CUDA (device auto: 8 CUDA GPU(s) per node): on_cuda replaces models, batch_sizes, "
        "training.precision, measurement.steps"
    )
    cpu = build_plan(make_config(), CPU_BOX)
    assert cpu.notes[0] == (
        "on CPU (device auto: no CUDA GPU): the config's own keys; on_cuda not read"
    )
    # the results' config.yaml is the set that ran, not both
    ran = [line for line in cuda.config_yaml.splitlines() if not line.startswith("#")]
    assert "on_cuda" not in "\n".join(ran) and "gpt2" in "\n".join(ran)
    assert "on_cuda:" not in cpu.config_yaml and "gpt2" not in cpu.config_yaml
    assert build_plan(make_config(on_cuda=None), GPU_BOX).notes == ()


def test_on_cuda_is_strict_and_the_merged_config_is_validated_whole() -> None:
    text = (
        "experiment_name: x\nmodels: [tiny-mlp]\ngpu_counts: [1]\n"
        "on_cuda:\n  modelz: [gpt2]\n  training:\n    precison: bf16\n"
    )
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "c.yaml")
    problems = {(p.path, p.line) for p in caught.value.problems}
    assert problems == {("on_cuda.modelz", 5), ("on_cuda.training.precison", 7)}
    with pytest.raises(ValidationError):
        make_config(on_cuda={"batch_sizes": [0]})
    with pytest.raises(ValidationError):
        make_config(on_cuda={"training": {"precision": "fp8"}})


def test_a_dumped_config_keeps_only_the_keys_on_cuda_wrote() -> None:
    """A default filled in on the way out would replace the config's own on CUDA when read
    back (here: training.strategy and measurement.repeats)."""
    config = make_config(training={"strategy": "fsdp"}, measurement={"repeats": 5})
    assert config.model_dump(mode="json")["on_cuda"] == {
        "models": [{"name": "gpt2", "label": None, "options": {}}],
        "batch_sizes": [8],
        "training": {"precision": ["bf16"]},
        "measurement": {"steps": 30},
    }
    again = BenchConfig.model_validate(config.model_dump(mode="json"))
    cuda, _ = again.for_device("cuda")
    assert cuda.training.strategy == ["fsdp"] and cuda.measurement.repeats == 5


def test_compile_left_null_stays_eager_on_cuda_for_small_models_and_says_why() -> None:
    def planned(model: str, **training: Any) -> tuple[bool | None, tuple[str, ...]]:
        config = make_config(models=[model], training=training, on_cuda=None, device="cuda")
        [cell] = build_plan(config, GPU_BOX)
        return cell.training.compile, tuple(warning_words(w) for w in cell.warnings)

    compiled, warnings = planned("tiny-mlp")
    assert compiled is False
    assert warnings == (
        f"training.compile off: 22,026 parameters, under {COMPILE_MIN_PARAMETERS // 10**6} M, "
        "so its step is launch-bound and compiling (seconds per cell) would not pay back; set "
        "training.compile: true to compile it",
    )
    assert planned("gpt2") == (True, ())  # 124 M parameters: compiled
    assert planned("tiny-mlp", compile=True) == (True, ())  # a set value wins, unsaid
    assert planned("tiny-mlp", compile=False) == (False, ())
    # a plug-in's size is unknown before it is built: compiled, as before
    assert planned("tests.plugin_models:factory")[0] is True
    # on CPU nothing compiles by default, and nothing needs saying
    [cpu] = build_plan(make_config(on_cuda=None, device="cpu"), CPU_BOX)
    assert (cpu.training.compile, cpu.warnings) == (False, ())


def test_the_default_config_runs_gpt2_on_cuda_and_the_tiny_models_on_cpu() -> None:
    config = load_config(ROOT / "benchmark_config.yaml")
    gpu = build_plan(config, Machine(gpu_count=1, cpu_cores=16))
    runnable = gpu.runnable
    assert {p.cell.model for p in gpu} == {"gpt2"}
    assert {(p.cell.precision, p.measurement.steps, p.training.compile) for p in runnable} == {
        ("bf16", 30, True)
    }
    assert {p.skip_reason for p in gpu if p.skip_reason} == {"needs 2 GPUs; this node has 1"}
    cpu = build_plan(config, Machine(gpu_count=0, cpu_cores=2))
    assert {p.cell.model for p in cpu} == {"tiny-mlp", "tiny-gpt2"}
    assert {(p.cell.precision, p.measurement.steps, p.training.compile) for p in cpu} == {
        ("fp32", 10, False)
    }
