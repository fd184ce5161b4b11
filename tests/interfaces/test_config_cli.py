"""`torchscale config validate|show|schema`, `--version`, and a light-weight start-up."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner, Result

import torchscale
from tests import import_probe
from torchscale.interfaces.cli.app import app
from torchscale.orchestration.config import parse_config

REPO_ROOT = Path(__file__).resolve().parents[2]
BENCHMARK_CONFIG = REPO_ROOT / "benchmark_config.yaml"
PUBLISHED = REPO_ROOT / "examples" / "published_scaling.yaml"

MINIMAL = """\
experiment_name: x
models: [resnet50]
batch_sizes: [64]
gpu_counts: [1]
"""

runner = CliRunner()


def invoke(*args: str) -> Result:
    return runner.invoke(app, list(args))


def assert_clean_exit(result: Result, code: int) -> None:
    """Exit code as expected, and no traceback or stray exception on the way."""
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )


@pytest.fixture()
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in tmp_path so file names in messages stay short (no terminal-width wrapping)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(directory: Path, name: str, text: str) -> str:
    (directory / name).write_text(text, encoding="utf-8")
    return name


# ---------------------------------------------------------------------------------------------
# config validate


def test_validate_good_file_prints_ok(in_tmp: Path) -> None:
    name = write(in_tmp, "good.yaml", MINIMAL.replace("[64]", "[32, 64]"))
    result = invoke("config", "validate", name)
    assert_clean_exit(result, 0)
    text = " ".join(result.stdout.split())
    assert text.startswith("OK good.yaml: experiment 'x', 2 cell(s)")
    assert "1 model(s) x 2 batch size(s) x 1 GPU count(s)" in text
    assert result.stderr == ""


@pytest.mark.parametrize("path", [BENCHMARK_CONFIG, PUBLISHED], ids=lambda p: p.name)
def test_validate_shipped_configs(path: Path) -> None:
    result = invoke("config", "validate", str(path))
    assert_clean_exit(result, 0)
    assert result.stdout.startswith("OK ")
    config = parse_config(path.read_text(encoding="utf-8"), str(path))
    assert f"experiment '{config.experiment_name}'" in " ".join(result.stdout.split())


def test_validate_quiet_prints_nothing_on_success(in_tmp: Path) -> None:
    name = write(in_tmp, "good.yaml", MINIMAL)
    result = invoke("config", "validate", name, "--quiet")
    assert_clean_exit(result, 0)
    assert result.output == ""


BAD_FILES = [
    pytest.param(
        "experiment_name: x\nmodels: a: b\n",
        "bad.yaml:2:10: YAML syntax error: mapping values are not allowed here",
        id="yaml-syntax",
    ),
    pytest.param(
        MINIMAL + "batch_sizes: [32]\n",
        "bad.yaml:5:1: batch_sizes: duplicate key 'batch_sizes' (first defined on line 3)",
        id="duplicate-key",
    ),
    pytest.param(
        MINIMAL + "batch_size: 4\n",
        "bad.yaml:5:1: batch_size: unknown key 'batch_size' (did you mean 'batch_sizes'?)",
        id="unknown-key",
    ),
    pytest.param(
        MINIMAL + "training:\n  precison: bf16\n",
        "bad.yaml:6:3: training.precison: unknown key 'precison' (did you mean 'precision'?)",
        id="unknown-nested-key",
    ),
    pytest.param(
        MINIMAL.replace("[resnet50]", "[resnet5]"),
        "bad.yaml:2:10: models[0]: unknown model 'resnet5' (did you mean 'resnet50'?)",
        id="unknown-model",
    ),
    pytest.param(
        MINIMAL.replace("[64]", '["64"]'),
        "bad.yaml:3:15: batch_sizes[0]: expected an integer, got '64'",
        id="wrong-type",
    ),
    pytest.param(
        MINIMAL.replace("[64]", "[0]"),
        "bad.yaml:3:15: batch_sizes[0]: must be > 0 (got 0)",
        id="out-of-range",
    ),
    pytest.param(
        MINIMAL.replace("[64]", "[]"),
        "bad.yaml:3:14: batch_sizes: must not be empty",
        id="empty-list",
    ),
    pytest.param(
        MINIMAL.replace("[64]", "[64, 64]"),
        "bad.yaml:3:14: batch_sizes: duplicate entries: 64",
        id="duplicate-entries",
    ),
    pytest.param(
        MINIMAL + "training:\n  precision: fp8\n",
        "bad.yaml:6:14: training.precision: 'fp8' is not allowed; expected one of 'fp32', "
        "'amp' or 'bf16'",
        id="unknown-precision",
    ),
    pytest.param(
        MINIMAL + "measurement:\n  steps: 5\n  duration_s: 10\n",
        "bad.yaml:6:3: measurement: set either 'steps' or 'duration_s', not both",
        id="steps-and-duration",
    ),
    pytest.param(
        MINIMAL.replace("experiment_name: x", "experiment_name: my run"),
        "bad.yaml:1:18: experiment_name: 'my run' may only use letters, digits",
        id="experiment-name",
    ),
    pytest.param("", "bad.yaml: the file is empty", id="empty-file"),
    pytest.param("- a\n- b\n", "bad.yaml:1: the top level must be a mapping", id="top-level-list"),
]


@pytest.mark.parametrize(("text", "expected"), BAD_FILES)
def test_validate_bad_file_exits_2_with_the_error(in_tmp: Path, text: str, expected: str) -> None:
    name = write(in_tmp, "bad.yaml", text)
    result = invoke("config", "validate", name)
    assert_clean_exit(result, 2)
    assert f"error: {expected}" in result.output
    assert f"error: {expected}" in result.stderr
    assert "OK" not in result.stdout


def test_validate_reports_every_problem_one_line_each_in_line_order(in_tmp: Path) -> None:
    name = write(
        in_tmp,
        "bad.yaml",
        "training:\n  precison: bf16\ngpu_counts: [0]\nmodels: [resnet50]\n"
        "batch_sizes: [64, 64]\nexperiment_name: my run\n",
    )
    result = invoke("config", "validate", name)
    assert_clean_exit(result, 2)
    lines = result.stderr.splitlines()
    assert len(lines) == 4, result.stderr
    assert all(line.startswith("error: bad.yaml:") for line in lines)
    assert [line.split(":")[2] for line in lines] == ["2", "3", "5", "6"]


def test_validate_missing_file(in_tmp: Path) -> None:
    result = invoke("config", "validate", "nope.yaml")
    assert_clean_exit(result, 2)
    assert "error: nope.yaml: file not found" in result.stderr


def test_validate_directory(in_tmp: Path) -> None:
    (in_tmp / "conf").mkdir()
    result = invoke("config", "validate", "conf")
    assert_clean_exit(result, 2)
    assert "error: conf: is a directory, not a config file" in result.stderr


def test_validate_binary_file(in_tmp: Path) -> None:
    (in_tmp / "bin.yaml").write_bytes(b"\xff\xfe\x00garbage")
    result = invoke("config", "validate", "bin.yaml")
    assert_clean_exit(result, 2)
    assert "error: bin.yaml: not UTF-8 text" in result.stderr


def test_validate_with_set_fixing_the_file(in_tmp: Path) -> None:
    name = write(in_tmp, "bad.yaml", MINIMAL.replace("[64]", "[0]"))
    assert invoke("config", "validate", name).exit_code == 2
    result = invoke("config", "validate", name, "--set", "batch_sizes=[8,16]")
    assert_clean_exit(result, 0)
    assert "2 batch size(s)" in " ".join(result.stdout.split())


def test_validate_set_counts_cells(in_tmp: Path) -> None:
    name = write(in_tmp, "good.yaml", MINIMAL)
    result = invoke(
        "config",
        "validate",
        name,
        "--set",
        "training.precision=[fp32, bf16]",
        "--set",
        "gpu_counts=[1, 2, 4]",
    )
    assert_clean_exit(result, 0)
    assert "6 cell(s)" in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("batch_sizes=[0]", "error: --set batch_sizes=[0]: batch_sizes[0]: must be > 0 (got 0)"),
        (
            "batch_size=[8]",
            "error: --set batch_size=[8]: batch_size: unknown key 'batch_size' "
            "(did you mean 'batch_sizes'?)",
        ),
        (
            "measurement.steps=abc",
            "error: --set measurement.steps=abc: measurement.steps: expected an integer, got 'abc'",
        ),
        ("nokey", "error: --set nokey: expected KEY=VALUE with a dotted key"),
        ("batch_sizes.x=1", "error: --set batch_sizes.x=1: batch_sizes.x: 'batch_sizes' is not"),
    ],
)
def test_validate_bad_set(in_tmp: Path, override: str, expected: str) -> None:
    name = write(in_tmp, "good.yaml", MINIMAL)
    result = invoke("config", "validate", name, "--set", override)
    assert_clean_exit(result, 2)
    assert expected in result.stderr


# ---------------------------------------------------------------------------------------------
# config show


@pytest.mark.parametrize("path", [BENCHMARK_CONFIG, PUBLISHED], ids=lambda p: p.name)
def test_show_yaml_round_trips(path: Path) -> None:
    original = parse_config(path.read_text(encoding="utf-8"), str(path))
    result = invoke("config", "show", str(path))
    assert_clean_exit(result, 0)
    assert yaml.safe_load(result.stdout) == original.model_dump(mode="json")
    assert parse_config(result.stdout, "<show>") == original


def test_show_fills_defaults(in_tmp: Path) -> None:
    name = write(in_tmp, "good.yaml", MINIMAL)
    result = invoke("config", "show", name)
    assert_clean_exit(result, 0)
    data = yaml.safe_load(result.stdout)
    assert data["training"]["precision"] == ["fp32"]
    assert data["measurement"]["steps"] == 20
    assert data["models"] == [{"name": "resnet50", "label": None, "options": {}}]


@pytest.mark.parametrize(
    "text",
    [
        MINIMAL + "measurement:\n  duration_s: 12.5\n",
        MINIMAL + "training:\n  learning_rate: 1e-5\n",
        MINIMAL + "comm:\n  min_bytes: 8KiB\n  max_bytes: 1GB\n",
        MINIMAL + "description: 'yes: no # not a comment'\n",
        MINIMAL + "launcher:\n  env: {NCCL_DEBUG: INFO, X: 'true'}\n",
    ],
    ids=["duration", "lr", "bytes", "tricky-description", "env"],
)
def test_show_yaml_round_trips_non_defaults(in_tmp: Path, text: str) -> None:
    original = parse_config(text, "good.yaml")
    name = write(in_tmp, "good.yaml", text)
    result = invoke("config", "show", name)
    assert_clean_exit(result, 0)
    assert parse_config(result.stdout, "<show>") == original


def test_show_yaml_round_trips_exponent_like_strings(in_tmp: Path) -> None:
    # '1e5' and '1:30:00' are strings here; torchscale's YAML 1.2 number rules must quote
    # them on output or the printed config would not read back
    text = MINIMAL.replace("experiment_name: x", "experiment_name: '1e5'")
    text += "launcher: {slurm: {time_limit: '1:30:00'}}\n"
    original = parse_config(text, "good.yaml")
    assert original.experiment_name == "1e5"
    name = write(in_tmp, "good.yaml", text)
    result = invoke("config", "show", name)
    assert_clean_exit(result, 0)
    assert parse_config(result.stdout, "<show>") == original


def test_show_json(in_tmp: Path) -> None:
    name = write(in_tmp, "good.yaml", MINIMAL)
    result = invoke("config", "show", name, "--json")
    assert_clean_exit(result, 0)
    data = json.loads(result.stdout)
    assert data == parse_config(MINIMAL, "x").model_dump(mode="json")
    assert data["measurement"]["steps"] == 20


def test_show_with_set(in_tmp: Path) -> None:
    name = write(in_tmp, "good.yaml", MINIMAL)
    result = invoke(
        "config",
        "show",
        name,
        "--json",
        "--set",
        "training.precision=bf16",
        "--set",
        "measurement.steps=5",
    )
    assert_clean_exit(result, 0)
    data = json.loads(result.stdout)
    assert data["training"]["precision"] == ["bf16"]
    assert data["measurement"]["steps"] == 5


def test_show_bad_file_exits_2_without_output_on_stdout(in_tmp: Path) -> None:
    name = write(in_tmp, "bad.yaml", MINIMAL + "batch_size: 4\n")
    result = invoke("config", "show", name)
    assert_clean_exit(result, 2)
    assert result.stdout == ""
    assert "unknown key 'batch_size' (did you mean 'batch_sizes'?)" in result.stderr


def test_show_bad_set(in_tmp: Path) -> None:
    name = write(in_tmp, "good.yaml", MINIMAL)
    result = invoke("config", "show", name, "--set", "training.precision=fp8")
    assert_clean_exit(result, 2)
    assert "error: --set training.precision=fp8: training.precision: 'fp8'" in result.stderr


def test_show_missing_file(in_tmp: Path) -> None:
    result = invoke("config", "show", "nope.yaml")
    assert_clean_exit(result, 2)
    assert "error: nope.yaml: file not found" in result.stderr


# ---------------------------------------------------------------------------------------------
# config schema


@pytest.fixture(scope="module")
def schema_validator() -> jsonschema.protocols.Validator:
    result = invoke("config", "schema")
    assert_clean_exit(result, 0)
    schema = json.loads(result.stdout)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def test_schema_describes_the_published_keys(
    schema_validator: jsonschema.protocols.Validator,
) -> None:
    schema = schema_validator.schema
    assert schema["type"] == "object"
    assert schema.get("additionalProperties") is False
    assert set(schema["required"]) == {"experiment_name", "gpu_counts"}
    # models, or jobs (your own command), or both
    assert schema["anyOf"] == [{"required": ["models"]}, {"required": ["jobs"]}]
    assert schema["properties"]["batch_sizes"]["default"] == "auto"
    assert {"profiling", "training", "measurement"} <= set(schema["properties"])


@pytest.mark.parametrize("path", [BENCHMARK_CONFIG, PUBLISHED], ids=lambda p: p.name)
def test_schema_accepts_shipped_configs(
    schema_validator: jsonschema.protocols.Validator, path: Path
) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    errors = [e.message for e in schema_validator.iter_errors(data)]
    assert errors == []


def test_schema_accepts_shorthands(schema_validator: jsonschema.protocols.Validator) -> None:
    data = yaml.safe_load(
        MINIMAL
        + textwrap.dedent(
            """\
            training:
              precision: bf16
              strategy: [ddp, fsdp]
            comm:
              min_bytes: 8KiB
              max_bytes: 64MiB
            """
        )
    )
    data["models"] = ["resnet50", {"name": "gpt2", "options": {"seq_len": 128}}]
    assert [e.message for e in schema_validator.iter_errors(data)] == []


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d.update(batch_size=[4]), "'batch_size' was unexpected"),
        (lambda d: d["profiling"].update(toool="nsys"), "'toool' was unexpected"),
        (lambda d: d.pop("gpu_counts"), "'gpu_counts' is a required property"),
        (lambda d: d.update(batch_sizes=["64"]), "'64' is not of type 'integer'"),
    ],
    ids=["unknown-top", "unknown-nested", "missing", "wrong-type"],
)
def test_schema_rejects_bad_config(
    schema_validator: jsonschema.protocols.Validator, mutate: object, fragment: str
) -> None:
    data = yaml.safe_load(BENCHMARK_CONFIG.read_text(encoding="utf-8"))
    mutate(data)  # type: ignore[operator]
    messages = [e.message for e in schema_validator.iter_errors(data)]
    # batch_sizes is a list or 'auto' (oneOf): the error an editor shows is the best match
    best = jsonschema.exceptions.best_match(schema_validator.iter_errors(data))
    assert any(fragment in m for m in [*messages, best.message if best else ""]), messages


def test_schema_rejects_file_with_unknown_key(
    in_tmp: Path, schema_validator: jsonschema.protocols.Validator
) -> None:
    name = write(
        in_tmp, "bad.yaml", BENCHMARK_CONFIG.read_text(encoding="utf-8") + "batch_size: 4\n"
    )
    data = yaml.safe_load((in_tmp / name).read_text(encoding="utf-8"))
    with pytest.raises(jsonschema.ValidationError, match="'batch_size' was unexpected"):
        schema_validator.validate(data)
    # the schema and `config validate` agree on this file
    assert invoke("config", "validate", name).exit_code == 2


# ---------------------------------------------------------------------------------------------
# root command


@pytest.mark.parametrize("args", [["--version"], ["--version", "config"]])
def test_version(args: list[str]) -> None:
    result = invoke(*args)
    assert_clean_exit(result, 0)
    assert result.stdout == f"torchscale {torchscale.__version__}\n"


def test_version_is_a_version_string() -> None:
    parts = torchscale.__version__.split(".")
    assert len(parts) >= 2
    assert all(p.isdigit() for p in parts[:2])


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--help"], ["config", "validate", "--version"]),
        (["config", "--help"], ["validate", "show", "schema"]),
        (["config", "validate", "--help"], ["--set", "--quiet"]),
        (["config", "show", "--help"], ["--set", "--json"]),
    ],
)
def test_help(args: list[str], fragments: list[str]) -> None:
    result = invoke(*args)
    assert_clean_exit(result, 0)
    for fragment in fragments:
        assert fragment in result.stdout


# ---------------------------------------------------------------------------------------------
# start-up stays light: no heavy imports for help


HEAVY = ("torch", "pandas", "plotly", "weasyprint")


@pytest.mark.parametrize(
    "argv",
    [
        ["torchscale", "--help"],
        ["torchscale", "config", "--help"],
        ["torchscale", "validate", "--help"],
        ["torchscale", "config", "validate", "--help"],
        ["torchscale", "--version"],
    ],
    ids=lambda a: " ".join(a[1:]),
)
@pytest.mark.slow  # starts a fresh interpreter
def test_help_imports_no_heavy_dependency(argv: list[str]) -> None:
    found = import_probe.probe(argv[1:], HEAVY)
    assert found["EXIT"] == "0", found["OUTPUT"]
    assert found["LOADED"] == "-", f"heavy modules imported by {argv[1:]}: {found['LOADED']}"


@pytest.mark.slow  # starts a fresh interpreter
def test_probe_detects_heavy_imports() -> None:
    """The probe above can fail: importing pandas first must show up in its report."""
    found = import_probe.probe(["--version"], HEAVY, prelude="import pandas")
    assert found["LOADED"] == "pandas"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--help"], "Usage: "),
        (["--version"], f"torchscale {torchscale.__version__}"),
    ],
)
@pytest.mark.slow  # starts a child process
def test_python_dash_m(args: list[str], expected: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "torchscale", *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert expected in proc.stdout
    assert "Traceback" not in proc.stderr
