"""Upper bounds of every number in the config: absurd values fail at validation, one line each.

Each bound is tested at the limit (accepted, and dumped unchanged) and just past it (one
`file:line:col: path: message` problem), so a bound that is missing, off by one or worded
badly fails here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from torchscale.contracts.errors import ConfigError, ConfigProblem
from torchscale.interfaces.cli.app import app
from torchscale.orchestration.config import parse_config
from torchscale.orchestration.config.schema import BenchConfig

SOURCE = "bad.yaml"
MINIMAL = """\
experiment_name: x
models: [resnet50]
batch_sizes: [64]
gpu_counts: [1]
"""


def config_with(path: str, value: str, extra: str = "") -> str:
    """MINIMAL with `path` set to the YAML `value`; `extra` is a `key: value` line written in
    the same section before it (for keys that need a partner, e.g. steps: null)."""
    if path in ("batch_sizes", "gpu_counts"):
        old = "[64]" if path == "batch_sizes" else "[1]"
        return MINIMAL.replace(f"{path}: {old}", f"{path}: [{value}]")
    *sections, key = path.split(".")
    lines = [f"{'  ' * depth}{name}:" for depth, name in enumerate(sections)]
    indent = "  " * len(sections)
    if extra:
        lines.append(indent + extra)
    lines.append(f"{indent}{key}: {value}")
    return MINIMAL + "\n".join(lines) + "\n"


def value_position(path: str, extra: str = "") -> tuple[int, int]:
    """(line, column) of the value `config_with` wrote."""
    if path in ("batch_sizes", "gpu_counts"):
        return (3 if path == "batch_sizes" else 4), len(path) + 4
    *sections, key = path.split(".")
    line = 4 + len(sections) + (1 if extra else 0) + 1
    return line, 2 * len(sections) + len(key) + 3


def problems(text: str, overrides: list[str] | None = None) -> list[ConfigProblem]:
    with pytest.raises(ConfigError) as info:
        parse_config(text, SOURCE, overrides=overrides or [])
    return info.value.problems


# (path, extra line, at the limit, just past it, message past it)
BOUNDS: list[tuple[str, str, str, str, str]] = [
    ("batch_sizes", "", "1048576", "1048577", "must be <= 1048576 (got 1048577)"),
    ("gpu_counts", "", "65536", "65537", "must be <= 65536 (got 65537)"),
    ("training.grad_accum_steps", "", "65536", "65537", "must be <= 65536 (got 65537)"),
    (
        "training.seed",
        "",
        "9223372036854775807",
        "9223372036854775808",
        "must be <= 9223372036854775807 (got 9223372036854775808)",
    ),
    ("training.learning_rate", "", "100", "100.5", "must be <= 100 (got 100.5)"),
    ("measurement.warmup_steps", "", "10000000", "10000001", "must be <= 10000000 (got 10000001)"),
    ("measurement.steps", "", "10000000", "10000001", "must be <= 10000000 (got 10000001)"),
    ("measurement.duration_s", "steps: null", "86400", "86400.5", "must be <= 86400 (got 86400.5)"),
    ("measurement.repeats", "", "1000", "1001", "must be <= 1000 (got 1001)"),
    (
        "measurement.cv_warn_threshold",
        "",
        "1.0",
        "10",
        "must be <= 1 (got 10); a fraction: 0.10 is 10 %",
    ),
    ("measurement.telemetry.interval_ms", "", "60000", "60001", "must be <= 60000 (got 60001)"),
    ("data.seq_len", "", "1048576", "1048577", "must be <= 1048576 (got 1048577)"),
    ("data.image_size", "", "16384", "16385", "must be <= 16384 (got 16385)"),
    ("launcher.cell_timeout_s", "", "604800", "604801", "must be <= 604800 (got 604801)"),
    ("launcher.slurm.cpus_per_task", "", "4096", "4097", "must be <= 4096 (got 4097)"),
    ("launcher.slurm.signal_grace_s", "", "3600", "3601", "must be <= 3600 (got 3601)"),
    ("launcher.slurm.poll_s", "", "600", "601", "must be <= 600 (got 601)"),
    ("launcher.omp_num_threads", "", "1024", "1025", "must be <= 1024 (got 1025)"),
    ("profiling.steps", "", "1000", "1001", "must be <= 1000 (got 1001)"),
    ("profiling.warmup_steps", "", "1000", "1001", "must be <= 1000 (got 1001)"),
    (
        "comm.min_bytes",
        "max_bytes: 1TiB",
        "1TiB",
        "1025G",
        "must be <= 1TiB (got 1100585369600 bytes)",
    ),
    (
        "comm.max_bytes",
        "",
        "1TiB",
        "1099511627777",
        "must be <= 1TiB (got 1099511627777 bytes)",
    ),
    ("comm.step_factor", "", "1024", "1025", "must be <= 1024 (got 1025)"),
    ("comm.warmup_iters", "", "1000000", "1000001", "must be <= 1000000 (got 1000001)"),
    ("comm.iters", "", "1000000", "1000001", "must be <= 1000000 (got 1000001)"),
    ("comm.min_busbw_gbps", "", "100000", "100000.1", "must be <= 100000 (got 100000.1)"),
]
IDS = [b[0] for b in BOUNDS]


def _get(config: BenchConfig, path: str) -> Any:
    node: Any = config
    for part in path.split("."):
        node = getattr(node, part)
    return node


@pytest.mark.parametrize(("path", "extra", "limit", "past", "message"), BOUNDS, ids=IDS)
def test_value_at_the_limit_is_accepted(
    path: str, extra: str, limit: str, past: str, message: str
) -> None:
    config = parse_config(config_with(path, limit, extra), "good.yaml")
    value = _get(config, path)
    if path in ("batch_sizes", "gpu_counts"):
        value = value[0]
    assert value == (2**40 if limit == "1TiB" else yaml.safe_load(limit))


@pytest.mark.parametrize(("path", "extra", "limit", "past", "message"), BOUNDS, ids=IDS)
def test_value_past_the_limit_is_one_clear_line(
    path: str, extra: str, limit: str, past: str, message: str
) -> None:
    found = problems(config_with(path, past, extra))
    assert len(found) == 1, [p.render() for p in found]
    line, column = value_position(path, extra)
    shown_path = f"{path}[0]" if path in ("batch_sizes", "gpu_counts") else path
    assert found[0].render() == f"{SOURCE}:{line}:{column}: {shown_path}: {message}"


def test_the_reported_absurd_batch_size_fails_in_the_file_and_in_set() -> None:
    huge = "99999999999999999999999"
    found = problems(config_with("batch_sizes", huge))
    assert [p.render() for p in found] == [
        f"{SOURCE}:3:15: batch_sizes[0]: must be <= 1048576 (got {huge})"
    ]
    found = problems(MINIMAL, [f"batch_sizes=[{huge}]"])
    assert [p.render() for p in found] == [
        f"--set batch_sizes=[{huge}]: batch_sizes[0]: must be <= 1048576 (got {huge})"
    ]


FLOAT_PATHS = [
    ("training.learning_rate", "", "100"),
    ("measurement.duration_s", "steps: null", "86400"),
    ("measurement.cv_warn_threshold", "", "1"),
    ("launcher.cell_timeout_s", "", "604800"),
    ("comm.min_busbw_gbps", "", "100000"),
]


@pytest.mark.parametrize(("path", "extra", "limit"), FLOAT_PATHS, ids=[f[0] for f in FLOAT_PATHS])
def test_infinity_and_nan_are_rejected(path: str, extra: str, limit: str) -> None:
    """YAML's .inf passed `> 0` before; an infinite timeout or window never ends."""
    (inf,) = problems(config_with(path, ".inf", extra))
    assert inf.message.startswith(f"must be <= {limit} (got .inf)")
    (nan,) = problems(config_with(path, ".nan", extra))
    assert nan.message == "must be > 0 (got nan)"


def test_a_node_count_past_the_limit_is_one_clear_line() -> None:
    found = problems(MINIMAL + "launcher:\n  kind: slurm\n  nodes: [1, 4097]\n")
    assert [p.message for p in found] == ["must be <= 4096 (got 4097)"]
    assert found[0].path == "launcher.nodes[1]"


def _numeric_leaves(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every integer or number property of the config's JSON Schema, by 'Section.key'."""
    found: dict[str, dict[str, Any]] = {}

    def kinds(node: dict[str, Any]) -> list[dict[str, Any]]:
        options = node.get("anyOf") or node.get("oneOf") or [node]
        out: list[dict[str, Any]] = []
        for option in options:
            if option.get("type") == "array":
                out.extend(kinds(option.get("items", {})))
            elif option.get("type") in ("integer", "number"):
                out.append(option)
        return out

    sections = {"BenchConfig": schema, **schema.get("$defs", {})}
    for section, body in sections.items():
        for key, prop in body.get("properties", {}).items():
            if section == "ModelSpec" and key == "options":
                continue  # free-form model options, checked by each model's factory
            for option in kinds(prop):
                found[f"{section}.{key}"] = {**prop, **option}
    return found


def test_every_number_in_the_schema_has_an_upper_bound() -> None:
    leaves = _numeric_leaves(BenchConfig.model_json_schema())
    assert "BenchConfig.batch_sizes" in leaves
    assert "TelemetryConfig.interval_ms" in leaves
    assert "CommConfig.min_bytes" in leaves
    unbounded = {
        name for name, s in leaves.items() if "maximum" not in s and "exclusiveMaximum" not in s
    }
    assert unbounded == set(), sorted(unbounded)


def test_json_schema_carries_the_bounds_for_editors() -> None:
    validator = jsonschema.Draft202012Validator(BenchConfig.model_json_schema())
    data: dict[str, Any] = {
        "experiment_name": "x",
        "models": ["resnet50"],
        "batch_sizes": [2**20],
        "gpu_counts": [1],
    }
    assert list(validator.iter_errors(data)) == []
    data["batch_sizes"] = [2**20 + 1]
    # batch_sizes is a list or 'auto' (oneOf): the error an editor shows is the best match
    best = jsonschema.exceptions.best_match(validator.iter_errors(data))
    assert best is not None and "is greater than the maximum of 1048576" in best.message


def test_bounds_do_not_change_what_show_prints(tmp_path: Path, monkeypatch: Any) -> None:
    """Values at the limits print as written (cell definition hashes come from this dump)."""
    text = MINIMAL.replace("[64]", "[64, 1048576]").replace("[1]", "[1, 65536]") + (
        "training: {seed: 9223372036854775807, learning_rate: 100}\n"
        "measurement: {steps: null, duration_s: 86400, cv_warn_threshold: 1.0}\n"
        "comm: {min_bytes: 1KiB, max_bytes: 1TiB}\n"
    )
    monkeypatch.chdir(tmp_path)
    Path("good.yaml").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["config", "show", "good.yaml", "--json"])
    assert result.exit_code == 0, result.output
    shown = BenchConfig.model_validate_json(result.stdout)
    assert shown == parse_config(text, "good.yaml")
    assert '"seed": 9223372036854775807' in result.stdout
    assert '"max_bytes": 1099511627776' in result.stdout
    assert '"batch_sizes": [\n    64,\n    1048576\n  ]' in result.stdout
