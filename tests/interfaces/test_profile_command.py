"""`torchscale profile [options] -- COMMAND...` as the user types it: everything after `--` is
their launch line (never a subcommand's name), the built-in workload's options are refused
with it in one line, and `profile --gpus ...` and `profile analyze DIR` parse as before."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

import torchscale.interfaces.api as api
from torchscale.contracts.finding import Finding
from torchscale.interfaces.cli.app import app
from torchscale.orchestration.launch import process
from torchscale.orchestration.launch.process import ProcessOutcome
from torchscale.orchestration.own_job import run as own_job_run
from torchscale.orchestration.own_job.command import OwnJobRequest
from torchscale.rank.own_job import ENV_DIR
from torchscale.rank.worker.measure import RankMeasurement, Window

PHASES = {"data": 0.0001, "forward": 0.002, "backward": 0.003, "optimizer": 0.0009}
COPYING_JOB = """
import os, shutil, sys
source, target = sys.argv[1], os.environ["TORCHSCALE_OWN_JOB_DIR"]
for name in os.listdir(source):
    shutil.copy(os.path.join(source, name), target)
print("the job's own line")
"""


def profile(*args: object) -> Result:
    return CliRunner().invoke(app, ["profile", *map(str, args)])


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What reached the run: the own job's request, or the built-in profile's options."""
    calls: list[Any] = []

    def own(request: OwnJobRequest, *args: Any, **kwargs: Any) -> Any:
        calls.append(request)
        raise typer.Exit(0)

    def built_in(options: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(options)
        raise typer.Exit(0)

    monkeypatch.setattr(own_job_run, "run_own_job", own)
    monkeypatch.setattr(api, "run_profile", built_in)
    return calls


def test_everything_after_the_dashes_is_the_users_command(seen: list[Any]) -> None:
    result = profile("--steps", 7, "--", ".venv/bin/torchrun", "--nproc-per-node", 2, "x.py")
    assert result.exit_code == 0, result.output
    assert "No such command" not in result.output
    (request,) = seen
    assert isinstance(request, OwnJobRequest)
    assert request.argv == (".venv/bin/torchrun", "--nproc-per-node", "2", "x.py")
    assert (request.steps, request.warmup_steps, request.stop) == (7, 5, True)


def test_python_x_py_parses_with_the_defaults(seen: list[Any]) -> None:
    result = profile("--", "python", "x.py", "--analyze", "--", "more")
    assert result.exit_code == 0, result.output
    (request,) = seen
    assert request.argv == ("python", "x.py", "--analyze", "--", "more")
    assert (request.steps, request.warmup_steps) == (20, 5)
    assert request.timeout_s == 1800


def test_let_it_finish_never_stops(seen: list[Any]) -> None:
    result = profile("--let-it-finish", "--warmup-steps", 0, "--timeout", "2m", "--", "python", "x")
    assert result.exit_code == 0, result.output
    (request,) = seen
    assert (request.steps, request.stop, request.warmup_steps, request.timeout_s) == (
        0,
        False,
        0,
        120,
    )


@pytest.mark.parametrize("option", [["--gpus", "2"], ["--model", "gpt2"], ["-g", "2"]])
def test_the_built_in_options_are_refused_with_a_command(
    seen: list[Any], option: list[str]
) -> None:
    result = profile(*option, "--", "torchrun", "--nproc-per-node", "2", "train.py")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "not taken with a command after --" in lines[0]
    assert seen == []


def test_the_own_job_options_are_refused_without_a_command(seen: list[Any]) -> None:
    result = profile("--let-it-finish", "--gpus", 2)
    assert result.exit_code == 2
    assert "only with your own command after --" in result.output
    assert seen == []


def test_steps_and_let_it_finish_are_refused_together(seen: list[Any]) -> None:
    result = profile("--steps", 5, "--let-it-finish", "--", "python", "x.py")
    assert result.exit_code == 2 and "give one" in result.output
    assert seen == []


def test_nothing_after_the_dashes_is_refused(seen: list[Any]) -> None:
    result = profile("--")
    assert result.exit_code == 2 and "nothing after --" in result.output


def test_the_built_in_form_still_parses(seen: list[Any]) -> None:
    result = profile("--gpus", 2, "--model", "tiny-mlp", "--steps", 3)
    assert result.exit_code == 0, result.output
    (options,) = seen
    assert (options.gpus, options.model, options.steps) == (2, "tiny-mlp", 3)


def test_analyze_still_parses(tmp_path: Path) -> None:
    result = profile("analyze", tmp_path / "missing")
    assert result.exit_code == 2
    assert "no such directory" in result.output


def test_help_says_which_options_a_command_takes() -> None:
    result = profile("--help")
    assert result.exit_code == 0
    assert "Your own job (-- COMMAND)" in result.output
    assert "--let-it-finish" in result.output and "--warmup-steps" in result.output


# -------------------------------------------------------------------- a job run for real


def _pickled(folder: Path) -> tuple[list[RankMeasurement], list[Finding]]:
    ranks = [pickle.loads(p.read_bytes()) for p in sorted(folder.glob("rank*.pkl"))]
    return ranks, []


def _rank(index: int, phases: dict[str, float]) -> RankMeasurement:
    per_step: dict[str, list[float | None]] = {n: [v] * 4 for n, v in phases.items()}
    windows = [Window(1.0, [0.02] * 4, per_step) for _ in range(3)]
    return RankMeasurement(index, "host", "perf_counter", 4, [0.02] * 5, windows)


@pytest.mark.slow  # starts a launched command
def test_a_job_prints_the_answer_and_keeps_its_output_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(own_job_run, "probe_reader", lambda: _pickled)
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    slow = {**PHASES, "backward": 0.013, "grad_sync_wait": 0.001}
    for measurement in (_rank(0, {**PHASES, "grad_sync_wait": 0.011}), _rank(1, slow)):
        (prepared / f"rank{measurement.rank}.pkl").write_bytes(pickle.dumps(measurement))
    script = tmp_path / "train.py"
    script.write_text(COPYING_JOB)
    out = tmp_path / "results"
    result = profile("-o", out, "--", sys.executable, script, prepared)
    _check_the_answer_and_the_report(result, out)


def _check_the_answer_and_the_report(result: Result, out: Path) -> None:
    """The job's answer names it and its straggler, its own output stays in its log, and the
    report reads the job as a measured cell."""
    assert result.exit_code == 0, result.output
    assert "own:train.py" in result.output
    assert "Straggler: rank 1" in result.output
    assert "your job's output and the ranks' files" in result.output
    assert "the job's own line" not in result.output
    (cell,) = (out / "own_job" / "cells").iterdir()
    assert cell.name.startswith("own_train.py__")
    report = CliRunner().invoke(
        app, ["report", "-s", str(out / "own_job"), "-f", "md", "-o", str(out)]
    )
    assert report.exit_code == 0, report.output
    (md,) = out.glob("*.md")
    assert "Straggler: rank 1" in md.read_text()


def _varying_rank(index: int, phases: dict[str, float]) -> RankMeasurement:
    """_rank(), each step's phases 1 % apart: without ties between the ranks' per-step
    differences the straggler's test is exact, not a permutation test of seconds."""
    windows = [
        Window(1.0, [0.02] * 4, {n: [v * (1 + (4 * w + k) / 100) for k in range(4)]
                                 for n, v in phases.items()})
        for w in range(3)
    ]  # fmt: skip
    return RankMeasurement(index, "host", "perf_counter", 4, [0.02] * 5, windows)


def test_a_job_run_in_process_prints_the_answer_and_keeps_its_output_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job stood in for in-process as COPYING_JOB: the one call that starts its process
    (launch.process.run_logged) copies the ranks' files into the folder the job's environment
    names and writes the job's own line to its log."""

    def run_logged(
        argv: list[str], env: dict[str, str], log_path: Path, timeout_s: float, **_: Any
    ) -> ProcessOutcome:
        source, target = Path(argv[2]), Path(env[ENV_DIR])
        for path in source.iterdir():
            (target / path.name).write_bytes(path.read_bytes())
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text("the job's own line\n", encoding="utf-8")
        return ProcessOutcome(0, False, 0.1, log_path)

    monkeypatch.setattr(process, "run_logged", run_logged)
    monkeypatch.setattr(own_job_run, "probe_reader", lambda: _pickled)
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    slow = {**PHASES, "backward": 0.013, "grad_sync_wait": 0.001}
    for measurement in (
        _varying_rank(0, {**PHASES, "grad_sync_wait": 0.011}),
        _varying_rank(1, slow),
    ):
        (prepared / f"rank{measurement.rank}.pkl").write_bytes(pickle.dumps(measurement))
    out = tmp_path / "results"
    result = profile("-o", out, "--", sys.executable, tmp_path / "train.py", prepared)
    _check_the_answer_and_the_report(result, out)
