"""Invalid configs and overrides: each class of mistake gives its own message, path and line."""

from __future__ import annotations

import pytest

from torchscale.contracts.errors import ConfigError, ConfigProblem
from torchscale.orchestration.config import parse_config

SOURCE = "bad.yaml"

# lines 1-4; anything appended starts on line 5
MINIMAL = """\
experiment_name: x
models: [resnet50]
batch_sizes: [64]
gpu_counts: [1]
"""


def problems_of(text: str, overrides: list[str] | None = None) -> list[ConfigProblem]:
    with pytest.raises(ConfigError) as info:
        parse_config(text, SOURCE, overrides=overrides or [])
    error = info.value
    assert error.exit_code == 2
    assert error.problems, "a ConfigError must carry at least one problem"
    assert error.lines() == [p.render() for p in error.problems]
    assert str(error) == "\n".join(error.lines())
    return error.problems


def only_problem(text: str, overrides: list[str] | None = None) -> ConfigProblem:
    problems = problems_of(text, overrides)
    assert len(problems) == 1, [p.render() for p in problems]
    return problems[0]


def with_models(models_yaml: str) -> str:
    return MINIMAL.replace("models: [resnet50]", models_yaml)


# ---------------------------------------------------------------------------------------------
# YAML level


@pytest.mark.parametrize(
    ("text", "line", "column", "fragment"),
    [
        ("experiment_name: x\nmodels: a: b\n", 2, 10, "mapping values are not allowed here"),
        ("experiment_name: x\n\tmodels: [a]\n", 2, 1, "'\\t' that cannot start any token"),
        (
            "experiment_name: x\nmodels: [resnet50\nbatch_sizes: [64]\n",
            3,
            12,
            "expected ',' or ']', but got ':'",
        ),
        ('experiment_name: "x\n', 2, 1, "found unexpected end of stream"),
    ],
    ids=["mapping-in-value", "tab", "unclosed-flow-list", "unclosed-quote"],
)
def test_yaml_syntax_error(text: str, line: int, column: int, fragment: str) -> None:
    problem = only_problem(text)
    assert problem.message.startswith("YAML syntax error: ")
    assert fragment in problem.message
    assert (problem.source, problem.path, problem.line, problem.column) == (
        SOURCE,
        "",
        line,
        column,
    )
    assert problem.render().startswith(f"{SOURCE}:{line}:{column}: YAML syntax error")


def test_duplicate_top_level_key() -> None:
    problem = only_problem(MINIMAL + "batch_sizes: [32]\n")
    assert problem.path == "batch_sizes"
    assert problem.message.startswith("duplicate key 'batch_sizes'")
    assert "first defined on line 3" in problem.message
    assert (problem.line, problem.column) == (5, 1)


def test_duplicate_nested_key() -> None:
    problem = only_problem(MINIMAL + "training:\n  precision: fp32\n  precision: bf16\n")
    assert problem.path == "training.precision"
    assert "duplicate key 'precision'" in problem.message
    assert "first defined on line 6" in problem.message
    assert (problem.line, problem.column) == (7, 3)


def test_duplicate_key_inside_a_list_item() -> None:
    problem = only_problem(with_models("models:\n  - name: resnet50\n    name: gpt2"))
    assert problem.path == "models[0].name"
    assert "duplicate key 'name' (first defined on line 3)" in problem.message
    assert problem.line == 4


@pytest.mark.parametrize(
    ("extra", "path", "message", "line", "column"),
    [
        (
            "batch_size: [4]\n",
            "batch_size",
            "unknown key 'batch_size' (did you mean 'batch_sizes'?)",
            5,
            1,
        ),
        (
            "gpu_count: [2]\n",
            "gpu_count",
            "unknown key 'gpu_count' (did you mean 'gpu_counts'?)",
            5,
            1,
        ),
        (
            "training:\n  precison: bf16\n",
            "training.precison",
            "unknown key 'precison' (did you mean 'precision'?)",
            6,
            3,
        ),
        (
            "profiling:\n  toool: nsys\n",
            "profiling.toool",
            "unknown key 'toool' (did you mean 'tool'?)",
            6,
            3,
        ),
        (
            "training:\n  ddp:\n    bucket_cap_m: 5\n",
            "training.ddp.bucket_cap_m",
            "unknown key 'bucket_cap_m' (did you mean 'bucket_cap_mb'?)",
            7,
            5,
        ),
        (
            "launcher:\n  slurm:\n    partiton: gpu\n",
            "launcher.slurm.partiton",
            "unknown key 'partiton' (did you mean 'partition'?)",
            7,
            5,
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and "\n" not in v and " " not in v else None,
)
def test_unknown_key_with_did_you_mean(
    extra: str, path: str, message: str, line: int, column: int
) -> None:
    problem = only_problem(MINIMAL + extra)
    assert (problem.path, problem.message, problem.line, problem.column) == (
        path,
        message,
        line,
        column,
    )
    assert problem.render() == f"{SOURCE}:{line}:{column}: {path}: {message}"


def test_unknown_key_far_from_any_lists_valid_keys() -> None:
    problem = only_problem(MINIMAL + "zzzzzz: 1\n")
    assert problem.path == "zzzzzz"
    assert problem.message.startswith("unknown key 'zzzzzz' (valid: ")
    for key in ("batch_sizes", "experiment_name", "gpu_counts", "models", "profiling"):
        assert key in problem.message


def test_unknown_key_in_a_model_entry() -> None:
    problem = only_problem(with_models("models: [{name: resnet50, lable: a}]"))
    assert problem.path == "models[0].lable"
    assert problem.message == "unknown key 'lable' (did you mean 'label'?)"
    assert problem.line == 2


# ---------------------------------------------------------------------------------------------
# models


@pytest.mark.parametrize(("name", "suggestion"), [("resnet5", "resnet50"), ("gpt3", "gpt2")])
def test_unknown_model_with_did_you_mean(name: str, suggestion: str) -> None:
    problem = only_problem(with_models(f"models: [resnet50, {name}]"))
    assert problem.path == "models[1]"
    assert f"unknown model '{name}' (did you mean '{suggestion}'?)" in problem.message
    assert "package.module:factory" in problem.message
    assert (problem.line, problem.column) == (2, 20)


def test_unknown_model_far_from_any_lists_builtins() -> None:
    problem = only_problem(with_models("models: [qqqqqq]"))
    assert "unknown model 'qqqqqq' (valid: bert-base, bert-large, gpt2" in problem.message


@pytest.mark.parametrize("name", ["my_pkg.models:", "my pkg:build", ":build", "pkg.:f"])
def test_malformed_plugin_name_is_rejected(name: str) -> None:
    problem = only_problem(with_models(f"models: ['{name}']"))
    assert problem.path == "models[0]"
    assert f"unknown model '{name}'" in problem.message


def test_unknown_option_for_builtin_model() -> None:
    problem = only_problem(with_models("models:\n  - name: transformer\n    options: {d_modle: 4}"))
    assert problem.path == "models[0]"
    assert problem.message == (
        "unknown option(s) for model 'transformer': 'd_modle' (did you mean 'd_model'?)"
    )
    assert problem.line == 3


def test_option_of_another_model_is_rejected() -> None:
    # seq_len belongs to language models, not to resnet50
    problem = only_problem(with_models("models:\n  - name: resnet50\n    options: {seq_len: 4}"))
    assert "unknown option(s) for model 'resnet50': 'seq_len'" in problem.message


# ---------------------------------------------------------------------------------------------
# types, ranges, lists


@pytest.mark.parametrize(
    ("text", "path", "message", "line"),
    [
        (
            MINIMAL.replace("[64]", '["64"]'),
            "batch_sizes[0]",
            "expected an integer, got '64'",
            3,
        ),
        (MINIMAL.replace("[64]", "[true]"), "batch_sizes[0]", "expected an integer, got true", 3),
        (
            MINIMAL + "training:\n  learning_rate: fast\n",
            "training.learning_rate",
            "expected a number, got 'fast'",
            6,
        ),
        (
            MINIMAL + "measurement:\n  steps: 5.0\n",
            "measurement.steps",
            "expected an integer, got 5.0",
            6,
        ),
        (
            MINIMAL.replace("gpu_counts: [1]", "gpu_counts: 2"),
            "gpu_counts",
            "expected a list, got 2",
            4,
        ),
        (
            MINIMAL + "training: 5\n",
            "training",
            "expected a mapping (a section of keys), got 5",
            5,
        ),
        (
            MINIMAL + "profiling:\n  enabled: maybe\n",
            "profiling.enabled",
            "expected true or false, got 'maybe'",
            6,
        ),
    ],
    ids=[
        "str-batch",
        "bool-batch",
        "str-lr",
        "float-steps",
        "scalar-list",
        "scalar-section",
        "str-bool",
    ],
)
def test_wrong_type(text: str, path: str, message: str, line: int) -> None:
    problem = only_problem(text)
    assert (problem.path, problem.message, problem.line) == (path, message, line)


@pytest.mark.parametrize(
    ("text", "path", "got", "line", "column"),
    [
        (MINIMAL.replace("[64]", "[0]"), "batch_sizes[0]", "0", 3, 15),
        (MINIMAL.replace("[64]", "[64, -8]"), "batch_sizes[1]", "-8", 3, 19),
        (MINIMAL.replace("gpu_counts: [1]", "gpu_counts: [0]"), "gpu_counts[0]", "0", 4, 14),
        (MINIMAL + "launcher:\n  cell_timeout_s: -5\n", "launcher.cell_timeout_s", "-5", 6, 19),
        (MINIMAL + "training:\n  learning_rate: 0\n", "training.learning_rate", "0", 6, 18),
    ],
    ids=["batch-zero", "batch-negative", "gpu-zero", "timeout-negative", "lr-zero"],
)
def test_out_of_range(text: str, path: str, got: str, line: int, column: int) -> None:
    problem = only_problem(text)
    assert problem.path == path
    assert problem.message.startswith("must be > 0")
    assert problem.message.endswith(f"(got {got})")
    assert (problem.line, problem.column) == (line, column)


def test_upper_bound_is_reported() -> None:
    problem = only_problem(MINIMAL + "profiling:\n  stall_threshold: 1.5\n")
    assert problem.path == "profiling.stall_threshold"
    assert problem.message == "must be < 1 (got 1.5)"


@pytest.mark.parametrize(
    ("text", "path", "line"),
    [
        (MINIMAL.replace("[64]", "[]"), "batch_sizes", 3),
        (MINIMAL.replace("[resnet50]", "[]"), "models", 2),
        (MINIMAL.replace("gpu_counts: [1]", "gpu_counts: []"), "gpu_counts", 4),
        (MINIMAL + "training:\n  precision: []\n", "training.precision", 6),
    ],
    ids=["batch_sizes", "models", "gpu_counts", "precision"],
)
def test_empty_list(text: str, path: str, line: int) -> None:
    problem = only_problem(text)
    assert (problem.path, problem.message, problem.line) == (path, "must not be empty", line)


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        (MINIMAL.replace("[64]", "[64, 64]"), "batch_sizes", "duplicate entries: 64"),
        (MINIMAL.replace("[64]", "[8, 64, 8, 64]"), "batch_sizes", "duplicate entries: 8, 64"),
        (MINIMAL.replace("[1]", "[2, 2]"), "gpu_counts", "duplicate entries: 2"),
        (
            MINIMAL.replace("[resnet50]", "[resnet50, resnet50]"),
            "models",
            "duplicate entries: resnet50",
        ),
        (
            MINIMAL.replace("[resnet50]", "[{name: gpt2, label: a}, {name: resnet50, label: a}]"),
            "models",
            "duplicate entries: a",
        ),
        (
            MINIMAL + "training:\n  precision: [bf16, bf16]\n",
            "training.precision",
            "duplicate entries: bf16",
        ),
    ],
    ids=["batch", "batch-two", "gpu-counts", "models", "model-labels", "precision"],
)
def test_duplicate_entries(text: str, path: str, message: str) -> None:
    problem = only_problem(text)
    assert (problem.path, problem.message) == (path, message)


# ---------------------------------------------------------------------------------------------
# enumerations


def test_unknown_precision_scalar_is_reported_at_the_key() -> None:
    problem = only_problem(MINIMAL + "training:\n  precision: fp8\n")
    assert problem.path == "training.precision"
    assert problem.message == "'fp8' is not allowed; expected one of 'fp32', 'amp' or 'bf16'"
    assert (problem.line, problem.column) == (6, 14)


def test_unknown_precision_in_a_list_is_reported_at_the_item() -> None:
    problem = only_problem(MINIMAL + "training:\n  precision: [fp32, fp8]\n")
    assert problem.path == "training.precision[1]"
    assert "'fp8' is not allowed" in problem.message
    assert "'fp32', 'amp' or 'bf16'" in problem.message
    assert (problem.line, problem.column) == (6, 21)


def test_unknown_profiling_tool() -> None:
    problem = only_problem(MINIMAL + "profiling:\n  tool: nsight\n")
    assert problem.path == "profiling.tool"
    assert problem.message == "'nsight' is not allowed; expected one of 'torch', 'nsys' or 'auto'"


# ---------------------------------------------------------------------------------------------
# cross-field rules


def test_steps_and_duration_together() -> None:
    problem = only_problem(MINIMAL + "measurement:\n  steps: 5\n  duration_s: 10\n")
    assert problem.path == "measurement"
    assert problem.message == "set either 'steps' or 'duration_s', not both"
    assert problem.line == 6


def test_nccl_backend_on_cpu() -> None:
    problem = only_problem(MINIMAL + "device: cpu\nbackend: nccl\n")
    assert problem.message == "backend 'nccl' needs device 'cuda' (or 'auto'); on CPU use 'gloo'"
    assert problem.source == SOURCE


def test_gloo_on_cpu_and_nccl_on_cuda_are_fine() -> None:
    assert parse_config(MINIMAL + "device: cpu\nbackend: gloo\n", SOURCE).backend == "gloo"
    assert parse_config(MINIMAL + "device: cuda\nbackend: nccl\n", SOURCE).backend == "nccl"


def test_comm_min_bytes_above_max_bytes() -> None:
    problem = only_problem(MINIMAL + "comm:\n  min_bytes: 2MiB\n  max_bytes: 1MiB\n")
    assert problem.path == "comm"
    assert problem.message == "min_bytes (2097152) is larger than max_bytes (1048576)"
    assert problem.line == 6


def test_multi_node_needs_slurm() -> None:
    problem = only_problem(MINIMAL + "launcher:\n  nnodes: 2\n")
    assert problem.message == (
        "launcher.nodes above 1 needs launcher.kind 'slurm' or 'k8s' (local is one node)"
    )
    problem = only_problem(MINIMAL + "launcher:\n  nodes: [1, 2]\n")
    assert "needs launcher.kind 'slurm' or 'k8s'" in problem.message


def test_nnodes_and_nodes_together_are_refused() -> None:
    problem = only_problem(MINIMAL + "launcher:\n  kind: slurm\n  nnodes: 2\n  nodes: [2]\n")
    assert "not both" in problem.message


# ---------------------------------------------------------------------------------------------
# experiment_name, whole-file shape, missing keys


@pytest.mark.parametrize("name", ["my run", "a/b", "../up", "-dash", ".hidden"])
def test_experiment_name_must_be_a_safe_directory_name(name: str) -> None:
    problem = only_problem(MINIMAL.replace("experiment_name: x", f"experiment_name: '{name}'"))
    assert problem.path == "experiment_name"
    assert problem.message.startswith(f"'{name}' may only use letters, digits, '.', '_' and '-'")
    assert "results directory" in problem.message
    assert (problem.line, problem.column) == (1, 18)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n"])
def test_empty_file(text: str) -> None:
    problem = only_problem(text)
    assert problem.message.startswith("the file is empty")
    assert "experiment_name, models (or jobs) and gpu_counts" in problem.message
    assert (problem.source, problem.path) == (SOURCE, "")


@pytest.mark.parametrize(
    "text", ["- experiment_name: x\n- models: [a]\n", "just a string\n", "42\n"]
)
def test_top_level_must_be_a_mapping(text: str) -> None:
    problem = only_problem(text)
    assert problem.message.startswith("the top level must be a mapping of keys to values")
    assert (problem.source, problem.line) == (SOURCE, 1)


def test_missing_required_keys_are_all_named() -> None:
    problems = problems_of("experiment_name: x\n")
    assert [(p.path, p.message) for p in problems] == [
        ("models", "required key is missing (models, or jobs: your own command)"),
        ("gpu_counts", "required key is missing"),
    ]


@pytest.mark.parametrize(
    ("value", "path", "message"),
    [
        ('["64"]', "batch_sizes[0]", "expected an integer, got '64'"),
        ("[0]", "batch_sizes[0]", "must be > 0 (got 0)"),
        ("[]", "batch_sizes", "must not be empty"),
        ("automatic", "batch_sizes", "'automatic' is not allowed; expected one of 'auto'"),
        ("8", "batch_sizes", "expected a list of batch sizes or auto, got 8"),
        ("null", "batch_sizes", "expected a list of batch sizes or auto, got null"),
    ],
    ids=["string-in-list", "zero", "empty", "other-word", "scalar", "null"],
)
def test_batch_sizes_is_a_list_or_auto_and_a_mistake_is_one_line(
    value: str, path: str, message: str
) -> None:
    """`batch_sizes` takes a list or the word auto; a mistake in either form is one
    problem at the path the user wrote, never both forms' complaints."""
    problem = only_problem(MINIMAL.replace("batch_sizes: [64]", f"batch_sizes: {value}"))
    assert (problem.path, problem.message) == (path, message)


# ---------------------------------------------------------------------------------------------
# every problem at once


# Written so that the file's line order is the reverse of the schema's field order: the
# report must still come out sorted by line.
FOUR_PROBLEMS = """\
training:
  precison: bf16
gpu_counts: [0]
models: [resnet50]
batch_sizes: [64, 64]
experiment_name: my run
"""


def test_all_problems_reported_at_once_sorted_by_line() -> None:
    problems = problems_of(FOUR_PROBLEMS)
    assert [(p.line, p.path) for p in problems] == [
        (2, "training.precison"),
        (3, "gpu_counts[0]"),
        (5, "batch_sizes"),
        (6, "experiment_name"),
    ]
    assert "unknown key 'precison' (did you mean 'precision'?)" in problems[0].message
    assert problems[1].message == "must be > 0 (got 0)"
    assert problems[2].message == "duplicate entries: 64"
    assert problems[3].message.startswith("'my run' may only use")
    assert all(p.source == SOURCE for p in problems)


def test_error_lines_are_one_per_problem() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(FOUR_PROBLEMS, SOURCE)
    lines = info.value.lines()
    assert len(lines) == 4
    assert all("\n" not in line for line in lines)
    assert lines[0] == (
        f"{SOURCE}:2:3: training.precison: unknown key 'precison' (did you mean 'precision'?)"
    )
    assert lines[1] == f"{SOURCE}:3:14: gpu_counts[0]: must be > 0 (got 0)"
    assert [line.split(":")[1] for line in lines] == ["2", "3", "5", "6"]


# ---------------------------------------------------------------------------------------------
# overrides that fail


def test_bad_override_value_names_the_override() -> None:
    problem = only_problem(MINIMAL, ["batch_sizes=[0]"])
    assert problem.source == "--set batch_sizes=[0]"
    assert problem.path == "batch_sizes[0]"
    assert problem.message == "must be > 0 (got 0)"
    assert problem.line is None
    assert problem.render() == "--set batch_sizes=[0]: batch_sizes[0]: must be > 0 (got 0)"


@pytest.mark.parametrize(
    ("override", "path", "message"),
    [
        ("measurement.steps=abc", "measurement.steps", "expected an integer, got 'abc'"),
        ("training.learning_rate=fast", "training.learning_rate", "expected a number, got 'fast'"),
        ('batch_sizes=["8"]', "batch_sizes[0]", "expected an integer, got '8'"),
        (
            "training.precision=fp8",
            "training.precision",
            "'fp8' is not allowed; expected one of 'fp32', 'amp' or 'bf16'",
        ),
        ("gpu_counts=[]", "gpu_counts", "must not be empty"),
        ("training=5", "training", "expected a mapping (a section of keys), got 5"),
    ],
)
def test_overrides_are_type_checked_like_the_file(override: str, path: str, message: str) -> None:
    problem = only_problem(MINIMAL, [override])
    assert (problem.source, problem.path, problem.message) == (f"--set {override}", path, message)


@pytest.mark.parametrize(
    ("override", "path", "message"),
    [
        ("batch_size=[8]", "batch_size", "unknown key 'batch_size' (did you mean 'batch_sizes'?)"),
        (
            "training.precison=bf16",
            "training.precison",
            "unknown key 'precison' (did you mean 'precision'?)",
        ),
        ("profiling.toool=nsys", "profiling.toool", "unknown key 'toool' (did you mean 'tool'?)"),
    ],
)
def test_unknown_override_key_gets_did_you_mean(override: str, path: str, message: str) -> None:
    problem = only_problem(MINIMAL, [override])
    assert (problem.source, problem.path, problem.message) == (f"--set {override}", path, message)


@pytest.mark.parametrize("override", ["batch_sizes", "=5", "a..b=1", ".x=1", "training.=1"])
def test_malformed_override(override: str) -> None:
    problem = only_problem(MINIMAL, [override])
    assert problem.source == f"--set {override}"
    assert problem.message == (
        "expected KEY=VALUE with a dotted key, e.g. --set training.precision=bf16"
    )


def test_override_into_a_non_section() -> None:
    problem = only_problem(MINIMAL, ["batch_sizes.x=1"])
    assert problem.source == "--set batch_sizes.x=1"
    assert problem.path == "batch_sizes.x"
    assert problem.message == "'batch_sizes' is not a section"


def test_override_with_bad_yaml_value() -> None:
    problem = only_problem(MINIMAL, ["batch_sizes=[1"])
    assert problem.source == "--set batch_sizes=[1"
    assert problem.path == "batch_sizes"
    assert problem.message.startswith("YAML syntax error")


def test_every_bad_override_is_reported() -> None:
    problems = problems_of(MINIMAL, ["nokey", "batch_sizes.x=1", "training.precision=bf16"])
    assert [p.source for p in problems] == ["--set nokey", "--set batch_sizes.x=1"]


def test_file_problems_and_override_problems_together() -> None:
    text = MINIMAL + "training:\n  precison: bf16\n"
    problems = problems_of(text, ["gpu_counts=[0]"])
    assert [(p.source, p.path, p.line) for p in problems] == [
        (SOURCE, "training.precison", 6),
        ("--set gpu_counts=[0]", "gpu_counts[0]", None),
    ]


def test_override_that_fixes_the_file() -> None:
    bad = MINIMAL.replace("[64]", "[0]")
    problems_of(bad)
    assert parse_config(bad, SOURCE, overrides=["batch_sizes=[32]"]).batch_sizes == [32]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["training.epochs=5"],
            "unknown key 'epochs': the published suite's 'training.epochs' is measurement.steps "
            "or measurement.duration_s",
        ),
        (
            ["data.batch_size=512"],
            "unknown key 'batch_size': the published suite's 'data.batch_size' is batch_sizes",
        ),
        (
            ["benchmark.measure_seconds=30"],
            "unknown key 'benchmark': the published suite's benchmark.measure_seconds -> "
            "measurement.duration_s",
        ),
        (
            ["benchmark.verbose=true"],
            "unknown key 'benchmark': the published suite's 'benchmark' section is measurement",
        ),
    ],
)
def test_a_published_suites_key_names_what_replaced_it(overrides: list[str], message: str) -> None:
    problem = only_problem(MINIMAL, overrides)
    assert problem.message.startswith(message), problem.message
