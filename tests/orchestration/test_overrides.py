"""The published override grammar (`torchscale benchmark -c cfg.yaml --training.precision=bf16`,
as the TorchScale reference has it) beside `--set training.precision=bf16`: the same override
path, so the same type checks and the same one-line messages, naming the override as written;
a bare unknown `--foo` stays a usage error (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from torchscale.contracts.errors import ConfigError
from torchscale.interfaces.cli.app import app
from torchscale.interfaces.cli.shared_options import as_set_options
from torchscale.orchestration.config import parse_config

CONFIG: dict[str, Any] = {
    "experiment_name": "tiny",
    "models": ["tiny-mlp"],
    "batch_sizes": [8],
    "gpu_counts": [1],
    "device": "cpu",
}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(json.dumps(CONFIG), encoding="utf-8")
    return path


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def errors(result: Result) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith("error:")]


# --- argv -> --set ---------------------------------------------------------------------------

VALUE_OPTIONS = {"-c", "--config", "--set", "-o", "--output-dir"}


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--training.precision=bf16"], ["--set=--training.precision=bf16"]),
        (["--training.precision", "bf16"], ["--set=--training.precision=bf16"]),
        (["--measurement.steps", "-1"], ["--set=--measurement.steps=-1"]),  # a number
        (["--a.b", "--dry-run"], ["--set=--a.b", "--dry-run"]),  # no value: said later
        (["--a.b"], ["--set=--a.b"]),
        (["-c", "--x.yaml", "--a.b=1"], ["-c", "--x.yaml", "--set=--a.b=1"]),  # -c's value
        (["--set", "--a.b=1"], ["--set", "--a.b=1"]),  # already --set's value
        (["--", "--a.b=1"], ["--", "--a.b=1"]),  # after --, nothing is ours
        (["--foo", "--dry-run", "x"], ["--foo", "--dry-run", "x"]),  # not dotted: click's
        (["-o", "r", "--data.batch_size=512"], ["-o", "r", "--set=--data.batch_size=512"]),
    ],
)
def test_dotted_flags_become_set_options(argv: list[str], expected: list[str]) -> None:
    assert as_set_options(argv, VALUE_OPTIONS) == expected


def test_a_published_override_is_named_as_written() -> None:
    text = json.dumps(CONFIG)
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "cfg.yaml", ["--training.precison=bf16"])
    assert caught.value.lines() == [
        "--training.precison=bf16: training.precison: unknown key 'precison' "
        "(did you mean 'precision'?)"
    ]
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "cfg.yaml", ["--training.precision"])
    assert caught.value.lines() == [
        "--training.precision: needs a value: --training.precision=VALUE"
    ]
    same = parse_config(text, "cfg.yaml", ["--training.precision=bf16"])
    assert same == parse_config(text, "cfg.yaml", ["training.precision=bf16"])


# --- the commands ----------------------------------------------------------------------------


def _planned_precisions(result: Result) -> set[str]:
    return {p for p in ("fp32", "bf16", "amp") if f"__{p}__" in result.output}


@pytest.mark.parametrize(
    "override",
    [
        ["--training.precision=bf16"],
        ["--training.precision", "bf16"],
        ["--set", "training.precision=bf16"],
    ],
    ids=["equals", "space", "set"],
)
def test_benchmark_takes_the_published_overrides(
    config: Path, tmp_path: Path, override: list[str]
) -> None:
    result = invoke("benchmark", "-c", config, *override, "-o", tmp_path / "r", "--dry-run")
    assert result.exit_code == 0, result.output
    assert _planned_precisions(result) == {"bf16"}


def test_benchmark_applies_overrides_in_command_line_order(config: Path, tmp_path: Path) -> None:
    argv = ["--set", "training.precision=amp", "--training.precision=bf16"]
    result = invoke("benchmark", "-c", config, *argv, "-o", tmp_path / "r", "--dry-run")
    assert result.exit_code == 0, result.output
    assert _planned_precisions(result) == {"bf16"}


@pytest.mark.parametrize(
    ("override", "line"),
    [
        (
            "--training.precision=fp8",
            "error: --training.precision=fp8: training.precision: 'fp8' is not allowed; "
            "expected one of 'fp32', 'amp' or 'bf16'",
        ),
        (
            "--trainig.precision=bf16",
            "error: --trainig.precision=bf16: trainig: unknown key 'trainig' (did you mean "
            "'training'?)",
        ),
        (
            "--data.batch_size=512",
            "error: --data.batch_size=512: data.batch_size: unknown key 'batch_size'",
        ),
    ],
)
def test_a_bad_published_override_is_one_line_and_exit_2(
    config: Path, tmp_path: Path, override: str, line: str
) -> None:
    result = invoke("benchmark", "-c", config, override, "-o", tmp_path / "r", "--dry-run")
    assert result.exit_code == 2, result.output
    (error,) = errors(result)
    assert error.startswith(line), error
    assert not (tmp_path / "r").exists()


def test_a_bare_unknown_flag_is_still_a_usage_error(config: Path, tmp_path: Path) -> None:
    result = invoke("benchmark", "-c", config, "--foo", "-o", tmp_path / "r", "--dry-run")
    assert result.exit_code == 2
    assert "No such option: --foo" in result.output
    typo = invoke("benchmark", "-c", config, "--dry-rn")
    assert typo.exit_code == 2 and "No such option: --dry-rn" in typo.output
    # one line, not Typer's usage block and box, with the likely fix
    assert typo.output.strip().splitlines() == [
        "error: torchscale benchmark: No such option: --dry-rn (did you mean --dry-run?) "
        "(see 'torchscale benchmark -h')"
    ]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["benchmark", "--ouput-dir", "x"],
            "No such option: --ouput-dir (did you mean --output-dir?)",
        ),
        (["report", "--format", "docx"], "Invalid value for '--format'"),
        (["validate", "--level"], "Option '--level' requires an argument."),
        (["benchmrk"], "No such command 'benchmrk'."),
    ],
)
def test_every_usage_error_is_one_line_and_exit_2(args: list[str], line: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and line in lines[0], lines
    assert "╭" not in result.output and "Usage:" not in result.output


def test_config_validate_and_show_take_them_too(config: Path) -> None:
    shown = invoke("config", "show", config, "--training.precision=bf16", "--json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["training"]["precision"] == ["bf16"]
    spaced = invoke("config", "show", config, "--measurement.steps", "7")
    assert yaml.safe_load(spaced.output)["measurement"]["steps"] == 7
    bad = invoke("config", "validate", config, "--measurement.steps=0")
    assert bad.exit_code == 2
    assert errors(bad) == ["error: --measurement.steps=0: measurement.steps: must be > 0 (got 0)"]
