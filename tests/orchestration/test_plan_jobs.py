"""A config's `jobs:` rows (sweeps of the user's own job): what the config
refuses, one line each, and how the plan expands a row into cells: which axes apply (those
whose placeholder the command names), the filled command, torchscale's torchrun around a
python line, the cell's identity. Pure: nothing is launched."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from torchscale.contracts.errors import ConfigError, ConfigProblem
from torchscale.orchestration.config.loader import parse_config
from torchscale.orchestration.config.schema import BenchConfig
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.orchestration.plan.planned import PlannedCell
from torchscale.rank.own_job import CARRIER_DIR, ENV_STEPS, ENV_WARMUP

CPU_BOX = Machine(gpu_count=0, cpu_cores=4)
SCRIPT = ["python", "train.py", "--batch-size", "{batch}"]
HEAD = "experiment_name: jobs\nbatch_sizes: [8]\ngpu_counts: [1, 2]\ndevice: cpu\n"


def only_problem(text: str) -> ConfigProblem:
    with pytest.raises(ConfigError) as raised:
        parse_config(text, "jobs.yaml")
    problems = raised.value.problems
    assert len(problems) == 1, [p.render() for p in problems]
    assert "\n" not in problems[0].render()
    return problems[0]


def config(**data: Any) -> BenchConfig:
    base: dict[str, Any] = {
        "experiment_name": "jobs",
        "jobs": [{"name": "my_ddp", "command": SCRIPT}],
        "batch_sizes": [8],
        "gpu_counts": [1, 2],
        "device": "cpu",
        "measurement": {"warmup_steps": 2, "steps": 10, "repeats": 1},
    }
    return BenchConfig.model_validate({**base, **data})


def command_of(planned: PlannedCell, tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    launch = planned.command(Path(), tmp_path / planned.cell.id, {"PATH": "/usr/bin"})
    return launch.argv, launch.env


# ------------------------------------------------------------------------ what is refused


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ('["python", "t.py", "--bs", "{btch}"]', "unknown placeholder {btch}: the matrix fills"),
        ('["python", "t.py", "--bs={gpus:3}"]', "unknown placeholder {gpus:3}"),
        ('["python", "t.py", "--cfg", "{}"]', "unknown placeholder {}"),
        ('["python", "t.py", "--bs", "{batch"]', "expected '}' before end of string"),
        ('["python", "t.py", "--bs", "batch}"]', "Single '}' encountered"),
    ],
    ids=["misspelled", "format-spec", "empty", "unclosed", "lone-close"],
)
def test_a_bad_placeholder_is_one_line_naming_the_three(command: str, said: str) -> None:
    problem = only_problem(HEAD + f"jobs: [{{name: a, command: {command}}}]\n")
    assert problem.path == "jobs[0].command" and problem.line == 5
    assert said in problem.message
    assert "{gpus}, {batch}, {precision}" in problem.message
    assert "literal brace twice" in problem.message


def test_a_literal_brace_written_twice_is_kept() -> None:
    text = HEAD + 'jobs: [{name: a, command: ["python", "t.py", "--cfg={{\\"lr\\": 1}}"]}]\n'
    plan = build_plan(parse_config(text), CPU_BOX)
    job = plan[0].job
    assert job is not None and job.argv[-1] == '--cfg={"lr": 1}'


@pytest.mark.parametrize(
    ("rows", "path", "said"),
    [
        (
            'jobs: [{name: a, model: resnet50, command: ["python", "t.py"]}]',
            "jobs[0]",
            "a jobs row runs your command, not a model",
        ),
        (
            'models: [{name: resnet50, command: ["python", "t.py"]}]',
            "models",
            "row 0 names a command: a model row names a built-in or plug-in model; your own "
            "command goes in a row of jobs:",
        ),
        (
            'jobs: [{command: ["torchrun", "--nproc-per-node", "2", "t.py"]}]',
            "jobs[0].command",
            "names neither a python script",
        ),
        ('jobs: [{command: ["python", "-u", "t.py"]}]', "jobs[0].command", "python option '-u'"),
        ('jobs: [{command: ["python"]}]', "jobs[0].command", "a python line names no script"),
        (
            'jobs: [{command: ["python", "a/t.py"]}, {command: ["python", "b/t.py"]}]',
            "",
            "two rows of models and jobs are labelled t.py",
        ),
        ('jobs: [{command: ["python", "t.py"], batch: all}]', "jobs[0].batch", "'all' is not"),
    ],
    ids=["job-with-model", "model-with-command", "no-gpus", "python-option", "no-script", "twice",
         "batch-scope"],
)  # fmt: skip
def test_a_row_that_cannot_be_swept_is_one_line(rows: str, path: str, said: str) -> None:
    problem = only_problem(HEAD + rows + "\n")
    assert problem.path == path
    assert said in problem.message, problem.render()


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ("batch_sizes: auto", "jobs[0] (my_ddp) names {batch}: batch_sizes must be a list"),
        ("measurement: {duration_s: 30}", "set measurement.steps, not duration_s"),
        ("launcher: {kind: slurm}", "jobs run with launcher.kind 'local' only"),
    ],
    ids=["auto-batch", "duration", "slurm"],
)
def test_what_a_job_sweep_cannot_do_is_one_line(extra: str, said: str) -> None:
    text = (
        "experiment_name: jobs\ngpu_counts: [1]\n"
        'jobs: [{name: my_ddp, command: ["python", "t.py", "--bs", "{batch}"]}]\n' + extra + "\n"
    )
    problem = only_problem(text)
    assert said in problem.message, problem.render()


def test_a_config_of_jobs_only_is_valid_and_reads_back_as_written() -> None:
    first = config()
    assert first.models == [] and first.jobs[0].label == "my_ddp"
    again = parse_config(first.as_yaml())
    assert again == first
    unnamed = config(jobs=[{"command": ["python", "examples/own_job/ddp_train.py"]}])
    assert unnamed.jobs[0].label == "ddp_train.py"  # the script's name, as profile names it


def test_without_jobs_models_is_still_required() -> None:
    problem = only_problem("experiment_name: x\nbatch_sizes: [8]\ngpu_counts: [1]\nmodels: []\n")
    assert (problem.path, problem.message) == ("models", "must not be empty")


# ------------------------------------------------------------------------------- expansion


def test_a_python_line_runs_inside_torchscales_torchrun_at_each_size(tmp_path: Path) -> None:
    plan = build_plan(config(), CPU_BOX)
    assert [(p.cell.world_size, p.cell.batch_size) for p in plan] == [(1, 8), (2, 8)]
    for planned, world in zip(plan, (1, 2), strict=True):
        cell, job = planned.cell, planned.job
        assert job is not None and job.wrapped
        assert re.fullmatch(rf"my_ddp__b8__w{world}__job__[0-9a-f]{{8}}", cell.id), cell.id
        assert (cell.model, cell.label, cell.precision, cell.strategy) == (
            "own:my_ddp",
            "own:my_ddp",
            "fp32",  # a placeholder: the command names no {precision}
            "ddp",
        )
        argv, env = command_of(planned, tmp_path)
        assert argv[:3] == ["python", "-m", "torch.distributed.run"]  # the user's interpreter
        assert f"--nproc-per-node={world}" in argv and "--standalone" in argv
        assert argv[-3:] == ["train.py", "--batch-size", "8"]  # a script, not -m
        assert env["PYTHONPATH"].split(":")[0] == str(CARRIER_DIR)
        assert (env[ENV_WARMUP], env[ENV_STEPS]) == ("2", "10")
        assert env["OMP_NUM_THREADS"] == "2"  # 4 cores over the widest cell's 2 ranks
    assert plan[0].cell.definition_sha256 != plan[1].cell.definition_sha256


def test_a_module_line_stays_a_module(tmp_path: Path) -> None:
    plan = build_plan(config(jobs=[{"command": ["python3", "-m", "pkg.train"]}]), CPU_BOX)
    argv, _ = command_of(plan[0], tmp_path)
    assert argv[0] == "python3" and argv[-2:] == ["-m", "pkg.train"]
    assert plan[0].cell.label == "own:pkg.train"


def test_a_launch_line_is_run_as_given_with_gpus_filled(tmp_path: Path) -> None:
    line = ["torchrun", "--nproc-per-node", "{gpus}", "train.py", "--bs", "{batch}"]
    plan = build_plan(config(jobs=[{"name": "tr", "command": line}]), CPU_BOX)
    for planned, world in zip(plan, (1, 2), strict=True):
        argv, env = command_of(planned, tmp_path)
        assert argv == ["torchrun", "--nproc-per-node", str(world), "train.py", "--bs", "8"]
        assert "OMP_NUM_THREADS" not in env  # the line's own launcher decides
        assert planned.job is not None and not planned.job.wrapped


def test_a_python_line_naming_gpus_starts_its_own_processes(tmp_path: Path) -> None:
    line = ["python", "-u", "spawn.py", "--procs", "{gpus}"]  # e.g. mp.spawn of its own ranks
    plan = build_plan(config(jobs=[{"name": "sp", "command": line}]), CPU_BOX)
    argv, _ = command_of(plan[1], tmp_path)
    assert argv == ["python", "-u", "spawn.py", "--procs", "2"]


def test_an_axis_applies_where_the_command_names_its_placeholder() -> None:
    training = {"precision": ["fp32", "bf16"]}
    named = ["python", "t.py", "--bs", "{batch}", "--precision", "{precision}"]
    unnamed = ["python", "u.py"]
    jobs = [{"name": "named", "command": named}, {"name": "unnamed", "command": unnamed}]
    plan = build_plan(config(jobs=jobs, batch_sizes=[8, 16], training=training), CPU_BOX)
    cells = [(p.cell.label, p.cell.precision, p.cell.batch_size, p.cell.world_size) for p in plan]
    assert cells == [
        *[("own:named", pr, b, w) for pr in ("fp32", "bf16") for b in (8, 16) for w in (1, 2)],
        ("own:unnamed", "fp32", 1, 1),  # its batch and precision are the job's own
        ("own:unnamed", "fp32", 1, 2),
    ]
    assert plan[2].job is not None and plan[2].job.argv[-3:] == ("16", "--precision", "fp32")
    assert re.fullmatch(r"named__b16__w1__fp32__job__[0-9a-f]{8}", plan[2].cell.id)
    assert re.fullmatch(r"unnamed__w2__job__[0-9a-f]{8}", plan[-1].cell.id)


def test_a_global_batch_is_divided_over_the_ranks_in_the_identity_only() -> None:
    jobs = [{"name": "g", "command": SCRIPT, "batch": "global"}]
    plan = build_plan(config(jobs=jobs, batch_sizes=[64], gpu_counts=[1, 2, 4]), CPU_BOX)
    assert [p.cell.batch_size for p in plan] == [64, 32, 16]  # per rank
    assert {p.job.argv[-1] for p in plan if p.job is not None} == {"64"}  # the script divides


def test_models_and_jobs_share_one_plan_and_the_same_skips() -> None:
    both = config(models=["tiny-mlp"], device="cuda")
    plan = build_plan(both, CPU_BOX)
    assert [p.job is None for p in plan] == [True, True, False, False]  # models first
    assert {p.skip.code for p in plan if p.skip is not None} == {"plan.no_gpu"}
    assert len(plan.runnable) == 0


def test_a_jobs_relaunches_count_in_the_estimate() -> None:
    once = build_plan(config(), CPU_BOX).estimate().seconds
    thrice = build_plan(config(measurement={"steps": 10, "repeats": 3}), CPU_BOX).estimate()
    assert thrice.seconds == pytest.approx(3 * once)


def test_a_changed_command_is_a_new_cell_and_the_same_one_the_same() -> None:
    first = [p.cell.id for p in build_plan(config(), CPU_BOX)]
    assert first == [p.cell.id for p in build_plan(config(), CPU_BOX)]
    other = [*SCRIPT, "--lr", "0.1"]
    changed = build_plan(config(jobs=[{"name": "my_ddp", "command": other}]), CPU_BOX)
    assert not set(first) & {p.cell.id for p in changed}


def test_config_validate_counts_the_job_cells_the_plan_makes(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from torchscale.interfaces.cli.app import app

    named = ["python", "t.py", "--bs", "{batch}", "--precision", "{precision}"]
    jobs = [{"name": "named", "command": named}, {"name": "own", "command": ["python", "u.py"]}]
    data = config(jobs=jobs, batch_sizes=[8, 16], training={"precision": ["fp32", "bf16"]})
    path = tmp_path / "jobs.yaml"
    path.write_text(data.as_yaml(), encoding="utf-8")
    shown = CliRunner().invoke(app, ["config", "validate", str(path)], env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    planned = len(build_plan(data, CPU_BOX))
    assert planned == 10  # named: 2 batches x 2 precisions x 2 sizes; own: 2 sizes
    assert f"and {planned} cell(s) of 2 job(s)" in " ".join(shown.output.split())
