"""Valid configs: shipped files, documented examples, the published format, defaults, overrides."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ByteSize, TypeAdapter

from torchscale.contracts.catalog import BUILTIN_MODELS
from torchscale.contracts.cell_settings import DEFAULT_STEPS
from torchscale.orchestration.config import BenchConfig, load_config, parse_config
from torchscale.orchestration.config.yaml_source import read_yaml

REPO_ROOT = Path(__file__).resolve().parents[2]

MINIMAL = """\
experiment_name: x
models: [resnet50]
batch_sizes: [64]
gpu_counts: [1]
"""

# The published TorchScale example config, kept here verbatim so the test does not depend on
# examples/ staying unchanged.
PUBLISHED = """\
experiment_name: "resnet50_scaling_test"
models:
  - "resnet50"
  - "bert-large"
batch_sizes:
  - 64
  - 128
  - 256
gpu_counts:
  - 1
  - 2
  - 4
  - 8
profiling:
  enabled: true
  tool: "nsys"
  trigger: "sync_stall_detection"
"""

# a fenced block, possibly indented (inside a list item); closed by a fence at any indentation
_FENCE = re.compile(r"^[ \t]*```ya?ml[ \t]*\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)


def yaml_config_blocks(markdown: str) -> list[tuple[int, str]]:
    """(line of the block's first line, text) of each ```yaml block holding `experiment_name:`."""
    blocks = []
    for match in _FENCE.finditer(markdown):
        body = textwrap.dedent(match.group(1))
        if re.search(r"^\s*experiment_name:", body, re.MULTILINE):
            line = markdown.count("\n", 0, match.start(1)) + 1
            blocks.append((line, body))
    return blocks


def _doc_blocks() -> list[Any]:
    docs = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    params = []
    for doc in docs:
        if not doc.is_file():
            continue
        rel = doc.relative_to(REPO_ROOT).as_posix()
        for line, body in yaml_config_blocks(doc.read_text(encoding="utf-8")):
            # pad with blank lines so that problems point at the line in the document itself
            text = "\n" * (line - 1) + body
            params.append(pytest.param(text, rel, id=f"{rel}:{line}"))
    return params


def _example_files() -> list[Path]:
    return sorted((REPO_ROOT / "examples").glob("*.yaml"))


def _byte_size(value: Any) -> int:
    return int(TypeAdapter(ByteSize).validate_python(value))


def assert_preserved(raw: Any, resolved: Any, path: str = "") -> None:
    """Every value written in the file reaches the resolved config unchanged (allowing only the
    documented shorthands: a scalar sweep axis, a model given by name, a byte size string)."""
    if isinstance(raw, dict):
        assert isinstance(resolved, dict), path
        for key, value in raw.items():
            sub = f"{path}.{key}" if path else str(key)
            assert key in resolved, f"{sub} vanished from the resolved config"
            if key == "models":
                expected = [{"name": m} if isinstance(m, str) else m for m in value]
                assert_preserved(expected, resolved[key], sub)
            elif key in ("min_bytes", "max_bytes"):
                assert resolved[key] == _byte_size(value), sub
            else:
                assert_preserved(value, resolved[key], sub)
    elif isinstance(raw, list):
        assert isinstance(resolved, list), path
        assert len(raw) == len(resolved), path
        for i, (a, b) in enumerate(zip(raw, resolved, strict=True)):
            assert_preserved(a, b, f"{path}[{i}]")
    elif isinstance(resolved, list) and not isinstance(raw, list):
        assert resolved == [raw], f"{path}: scalar sweep axis should become a one-item list"
    else:
        assert resolved == raw, path
        assert type(resolved) is type(raw) or isinstance(raw, int), path


def check_valid(text: str, source: str) -> BenchConfig:
    config = parse_config(text, source)
    assert isinstance(config, BenchConfig)
    # read the raw data with torchscale's own YAML reader (1e-4 is a float there, not a string)
    raw, _ = read_yaml(text, source)
    assert_preserved(raw, config.model_dump(mode="json"))
    return config


# ---------------------------------------------------------------------------------------------
# shipped and documented configs


def test_benchmark_config_yaml_is_valid() -> None:
    path = REPO_ROOT / "benchmark_config.yaml"
    text = path.read_text(encoding="utf-8")
    config = check_valid(text, str(path))
    assert config.experiment_name == yaml.safe_load(text)["experiment_name"]
    # and through the file-reading entry point too
    assert load_config(path) == config


def test_published_example_file_is_valid() -> None:
    path = REPO_ROOT / "examples" / "published_scaling.yaml"
    config = check_valid(path.read_text(encoding="utf-8"), str(path))
    assert config.experiment_name == "resnet50_scaling_test"
    assert [m.name for m in config.models] == ["resnet50", "bert-large"]
    assert config.batch_sizes == [64, 128, 256]
    assert config.gpu_counts == [1, 2, 4, 8]
    assert config.profiling.enabled is True
    assert config.profiling.tool == "nsys"
    assert config.profiling.trigger == "sync_stall_detection"


def test_examples_directory_is_not_empty() -> None:
    names = [p.name for p in _example_files()]
    assert "published_scaling.yaml" in names


@pytest.mark.parametrize("path", _example_files(), ids=lambda p: p.name)
def test_every_example_file_is_valid(path: Path) -> None:
    check_valid(path.read_text(encoding="utf-8"), str(path))


@pytest.mark.parametrize(("text", "document"), _doc_blocks())
def test_every_documented_yaml_config_is_valid(text: str, document: str) -> None:
    check_valid(text, document)


def test_doc_block_extraction_finds_only_config_blocks() -> None:
    markdown = (
        "# Title\n"
        "```yaml\n"
        "experiment_name: a\n"
        "models: [gpt2]\n"
        "```\n"
        "```yaml\n"
        "training:\n"
        "  precision: bf16\n"
        "```\n"
        "```bash\n"
        "experiment_name: not-yaml\n"
        "```\n"
        "```yml\n"
        "experiment_name: b\n"
        "```\n"
        "1. In a list:\n"
        "   ```yaml\n"
        "   experiment_name: c\n"
        "   training:\n"
        "     precision: bf16\n"
        "   ```\n"
    )
    blocks = yaml_config_blocks(markdown)
    assert blocks == [
        (3, "experiment_name: a\nmodels: [gpt2]\n"),
        (14, "experiment_name: b\n"),
        (18, "experiment_name: c\ntraining:\n  precision: bf16\n"),
    ]


# ---------------------------------------------------------------------------------------------
# the published format and the defaults


def test_published_format_is_accepted_unchanged() -> None:
    config = check_valid(PUBLISHED, "published.yaml")
    assert config.model_dump(include={"experiment_name", "batch_sizes", "gpu_counts"}) == {
        "experiment_name": "resnet50_scaling_test",
        "batch_sizes": [64, 128, 256],
        "gpu_counts": [1, 2, 4, 8],
    }
    assert [(m.name, m.label, m.options) for m in config.models] == [
        ("resnet50", None, {}),
        ("bert-large", None, {}),
    ]
    assert (config.profiling.enabled, config.profiling.tool, config.profiling.trigger) == (
        True,
        "nsys",
        "sync_stall_detection",
    )


def test_defaults_are_filled() -> None:
    config = parse_config(MINIMAL, "minimal.yaml")
    assert config.training.precision == ["fp32"]
    assert config.training.strategy == ["ddp"]
    assert config.measurement.steps == 20 == DEFAULT_STEPS
    assert config.measurement.duration_s is None
    assert config.device == "auto"
    assert config.backend == "auto"
    assert config.profiling.enabled is False
    assert config.profiling.tool == "torch"
    assert config.profiling.trigger == "sync_stall_detection"
    assert config.comm.enabled is False
    assert config.description == ""


def test_duration_instead_of_steps_leaves_steps_unset() -> None:
    config = parse_config(MINIMAL + "measurement:\n  duration_s: 30\n", "m.yaml")
    assert config.measurement.duration_s == 30.0
    assert config.measurement.steps is None


def test_explicit_steps_are_kept() -> None:
    config = parse_config(MINIMAL + "measurement:\n  steps: 7\n", "m.yaml")
    assert config.measurement.steps == 7
    assert config.measurement.duration_s is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1e-4", 1e-4), ("1E-3", 1e-3), ("2.5e-5", 2.5e-5), ("1e2", 100.0), ("0.01", 0.01)],
)
def test_exponent_floats_are_numbers(value: str, expected: float) -> None:
    config = parse_config(MINIMAL + f"training:\n  learning_rate: {value}\n", "lr.yaml")
    assert isinstance(config.training.learning_rate, float)
    assert config.training.learning_rate == pytest.approx(expected)


@pytest.mark.parametrize(
    ("yaml_value", "expected"),
    [("bf16", ["bf16"]), ("[fp32, amp, bf16]", ["fp32", "amp", "bf16"])],
)
def test_precision_is_a_sweep_axis(yaml_value: str, expected: list[str]) -> None:
    config = parse_config(MINIMAL + f"training:\n  precision: {yaml_value}\n", "p.yaml")
    assert config.training.precision == expected


def test_model_name_shorthand_and_full_form_are_equivalent() -> None:
    short = parse_config(MINIMAL, "a.yaml")
    full = parse_config(MINIMAL.replace("[resnet50]", "[{name: resnet50}]"), "b.yaml")
    assert short == full
    assert short.models[0].name == "resnet50"


@pytest.mark.parametrize("name", sorted(BUILTIN_MODELS))
def test_every_builtin_model_name_is_accepted(name: str) -> None:
    config = parse_config(MINIMAL.replace("resnet50", name), "m.yaml")
    assert config.models[0].name == name


def test_builtin_model_options_are_accepted() -> None:
    text = MINIMAL.replace(
        "models: [resnet50]",
        "models:\n  - name: transformer\n    label: small\n    options: {d_model: 256, nhead: 4}",
    )
    model = parse_config(text, "m.yaml").models[0]
    assert (model.name, model.display_name, model.options) == (
        "transformer",
        "small",
        {"d_model": 256, "nhead": 4},
    )


def test_plugin_model_with_any_options_is_accepted() -> None:
    text = MINIMAL.replace(
        "models: [resnet50]",
        "models:\n  - name: my_pkg.models:build_model\n    options: {width: 3, anything: true}",
    )
    model = parse_config(text, "m.yaml").models[0]
    assert model.name == "my_pkg.models:build_model"
    assert model.options == {"width": 3, "anything": True}


def test_same_model_twice_with_distinct_labels_is_accepted() -> None:
    text = MINIMAL.replace("[resnet50]", "[resnet50, {name: resnet50, label: resnet50-b}]")
    assert [m.display_name for m in parse_config(text, "m.yaml").models] == [
        "resnet50",
        "resnet50-b",
    ]


def test_comm_byte_sizes_accept_units() -> None:
    config = parse_config(MINIMAL + "comm:\n  min_bytes: 8KiB\n  max_bytes: 64MiB\n", "c.yaml")
    assert int(config.comm.min_bytes) == 8 * 1024
    assert int(config.comm.max_bytes) == 64 * 2**20


# ---------------------------------------------------------------------------------------------
# overrides that succeed


@pytest.mark.parametrize(
    ("override", "getter", "expected"),
    [
        ("training.precision=bf16", lambda c: c.training.precision, ["bf16"]),
        ("training.precision=[fp32, bf16]", lambda c: c.training.precision, ["fp32", "bf16"]),
        ("batch_sizes=[8,16]", lambda c: c.batch_sizes, [8, 16]),
        ("measurement.steps=5", lambda c: c.measurement.steps, 5),
        ("training.learning_rate=1e-3", lambda c: c.training.learning_rate, 1e-3),
        ("profiling.enabled=true", lambda c: c.profiling.enabled, True),
        ("launcher.env.FOO=bar", lambda c: c.launcher.env, {"FOO": "bar"}),
        ("experiment_name=renamed", lambda c: c.experiment_name, "renamed"),
    ],
)
def test_override_sets_typed_value(override: str, getter: Any, expected: Any) -> None:
    base = parse_config(MINIMAL, "base.yaml")
    config = parse_config(MINIMAL, "base.yaml", overrides=[override])
    assert getter(config) == expected
    assert getter(base) != expected


def test_override_replaces_value_from_file() -> None:
    text = MINIMAL + "measurement:\n  steps: 10\n  repeats: 4\n"
    config = parse_config(text, "f.yaml", overrides=["measurement.steps=3"])
    assert config.measurement.steps == 3
    assert config.measurement.repeats == 4  # siblings from the file are kept


def test_later_override_wins() -> None:
    config = parse_config(MINIMAL, "f.yaml", overrides=["batch_sizes=[1]", "batch_sizes=[2, 4]"])
    assert config.batch_sizes == [2, 4]


def test_overrides_do_not_change_the_file_values_elsewhere() -> None:
    config = parse_config(PUBLISHED, "p.yaml", overrides=["training.precision=amp"])
    assert config.training.precision == ["amp"]
    assert config.batch_sizes == [64, 128, 256]
    assert config.profiling.tool == "nsys"
