"""The traced window of a user's job (torchscale/rank/own_job/trace_window.py): where it lies
among the optimizer steps, that its steps are never measured ones, that it writes the files
the built-in profile writes, that a job's own profiler is left alone, that a failing window
fails open, and the host's `--tool nsys` wrap and refusals (argv only: nsys is not run)."""

from __future__ import annotations

import gzip
import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.rank.test_own_job_probe import (
    losses,
    only_rank,
    probe_env,
    probe_here,
    run_job,
    train_here,
)
from torchscale.contracts.errors import ToolNotFoundError, UsageError
from torchscale.rank.own_job.trace_window import PROFILER_WARMUP, WindowPlan

# ----------------------------------------------------------------------------- the plan


@pytest.mark.parametrize(("warmup", "steps", "traced"), [(2, 5, 3), (0, 1, 1), (4, 10, 24)])
def test_the_window_follows_the_measured_steps_and_the_rank_stops_at_its_end(
    warmup: int, steps: int, traced: int
) -> None:
    plan = WindowPlan(warmup, steps, traced)
    measured = [n for n in range(1, 200) if plan.measured(n)]
    assert measured == list(range(warmup + 1, warmup + steps + 1))
    assert list(plan.traced_steps) == list(
        range(warmup + steps + PROFILER_WARMUP + 1, warmup + steps + PROFILER_WARMUP + traced + 1)
    )
    assert not set(measured) & set(plan.traced_steps)
    assert plan.last() == warmup + steps + PROFILER_WARMUP + traced


def test_with_no_measured_count_the_window_follows_the_warmup_and_measuring_follows_it() -> None:
    plan = WindowPlan(warmup=3, steps=0, traced=2)
    assert list(plan.traced_steps) == [5, 6]  # step 4: the profiler's warm-up
    assert [n for n in range(1, 10) if plan.measured(n)] == [7, 8, 9]
    assert plan.last() is None  # the job runs to its own end


def test_no_trace_leaves_the_steps_as_before() -> None:
    plan = WindowPlan(warmup=2, steps=4, traced=0)
    assert plan.span == 0 and list(plan.traced_steps) == []
    assert plan.last() == 6
    assert [n for n in range(1, 10) if plan.measured(n)] == [3, 4, 5, 6]


# ----------------------------------------------------------------------------- real jobs


def trace_env(folder: Path, warmup: int, steps: int, traced: int, tool: str = "torch") -> dict:
    env = probe_env(folder, warmup, steps, stop=steps > 0)
    env |= {"TORCHSCALE_OWN_JOB_TRACE_STEPS": str(traced), "TORCHSCALE_OWN_JOB_TRACE_TOOL": tool}
    return env


def _check_window_after_measured_steps(out: Path, loss_lines: int) -> None:
    """Checks the losses printed, the measured steps' record and the traced steps' files."""
    # stopped in the last traced step's optimizer hook: its loss line is never printed
    assert loss_lines == 2 + 4 + PROFILER_WARMUP + 3 - 1
    rank = only_rank(out)
    assert rank.steps == 4 and rank.optimizer_steps == 6  # written before the window opened
    with gzip.open(out / "rank0.trace.json.gz", "rt") as handle:
        events = json.load(handle)["traceEvents"]
    steps = sorted({e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#")})
    assert steps == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"]
    names = {e.get("name") for e in events}
    assert {"torchscale:data", "torchscale:backward", "torchscale:optimizer"} <= names
    record = json.loads((out / "rank0.phases.json").read_text())
    assert record["steps"] == [1, 2, 3] and record["tool"] == "torch"
    assert len(record["step_s"]) == 3 and all(s > 0 for s in record["step_s"])
    assert not (out / "rank0.trace_note.json").exists()


@pytest.mark.slow  # starts a child process
def test_the_window_writes_the_built_in_profiles_files_after_the_measured_steps(
    tmp_path: Path,
) -> None:
    """A job measured 4 steps and traced 3: the built-in profiler's files, then rc 0."""
    out = tmp_path / "m"
    done = run_job(tmp_path, ["--steps", "20"], trace_env(out, warmup=2, steps=4, traced=3))
    assert done.returncode == 0, done.stderr
    _check_window_after_measured_steps(out, len(losses(done.stdout)))


def test_the_window_writes_the_built_in_profiles_files_after_the_measured_steps_in_process(
    tmp_path: Path,
) -> None:
    """The same with the probe's hooks in this process: torch.profiler started in the post
    hook after the measured steps, its trace and the traced steps' phases written, the loop
    stopped at the window's last step."""
    out = tmp_path / "m"
    with probe_here(trace_env(out, warmup=2, steps=4, traced=3)):
        ran = train_here(steps=20)
    assert ran.exit == 0
    _check_window_after_measured_steps(out, len(ran.losses))


def _check_ran_to_its_end(out: Path, loss_lines: int) -> None:
    """Checks all 12 steps ran, steps 1 and 2 traced and the steps after the window measured."""
    assert loss_lines == 12  # never stopped
    assert (out / "rank0.trace.json.gz").is_file()
    assert json.loads((out / "rank0.phases.json").read_text())["steps"] == [1, 2]
    assert only_rank(out).steps == 12 - 1 - PROFILER_WARMUP - 2  # measured after the window


@pytest.mark.slow  # starts a child process
def test_with_no_measured_count_the_job_runs_to_its_end_traced_after_the_warmup(
    tmp_path: Path,
) -> None:
    out = tmp_path / "m"
    done = run_job(tmp_path, ["--steps", "12"], trace_env(out, warmup=1, steps=0, traced=2))
    assert done.returncode == 0, done.stderr
    assert "finished" in done.stdout
    _check_ran_to_its_end(out, len(losses(done.stdout)))


def test_with_no_measured_count_the_loop_runs_to_its_end_traced_after_the_warmup_in_process(
    tmp_path: Path,
) -> None:
    out = tmp_path / "m"
    with probe_here(trace_env(out, warmup=1, steps=0, traced=2)) as probe:
        ran = train_here(steps=12, at_end=probe.at_exit)
    assert ran.exit is None
    _check_ran_to_its_end(out, len(ran.losses))


OWN_PROFILER = textwrap.dedent(
    """\
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(TensorDataset(torch.randn(160, 8), torch.randn(160, 1)), batch_size=16)
    with torch.profiler.profile() as prof:
        for x, y in loader:
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            opt.zero_grad()
    print("own events:", len(prof.events()) > 0)
    """
)


@pytest.mark.slow  # starts a child process
def test_a_job_running_its_own_profiler_is_left_alone_and_its_trace_skipped(
    tmp_path: Path,
) -> None:
    (tmp_path / "train.py").write_text(OWN_PROFILER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHSCALE_OWN_JOB")}
    from tests.processes import REPO_ROOT
    from torchscale.rank.own_job import CARRIER_DIR

    env["PYTHONPATH"] = os.pathsep.join([str(CARRIER_DIR), str(REPO_ROOT)])
    out = tmp_path / "m"
    env |= trace_env(out, warmup=1, steps=0, traced=2)  # measured to the job's end
    done = subprocess.run(
        [sys.executable, "train.py"], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "own events: True" in done.stdout  # its profiler kept its session
    note = json.loads((out / "rank0.trace_note.json").read_text())
    assert note == {"code": "unavailable.own_profiler", "figures": {"rank": 0}}
    assert not (out / "rank0.trace.json.gz").exists()
    rank = only_rank(out)
    assert rank.steps == 10 - 1 - PROFILER_WARMUP - 2  # the window's steps are not measured


def test_a_loop_running_its_own_profiler_is_left_alone_and_its_trace_skipped_in_process(
    tmp_path: Path,
) -> None:
    """The same with the probe's hooks in this process, the loop inside a torch.profiler of
    its own: that profiler keeps its events, the rank's trace is skipped with its reason."""
    import torch

    out = tmp_path / "m"
    activities = [torch.profiler.ProfilerActivity.CPU]
    with (
        probe_here(trace_env(out, warmup=1, steps=0, traced=2)) as probe,
        torch.profiler.profile(activities=activities) as prof,
    ):
        ran = train_here(steps=10, at_end=probe.at_exit)
    assert ran.exit is None and len(prof.events()) > 0  # its profiler kept its session
    note = json.loads((out / "rank0.trace_note.json").read_text())
    assert note == {"code": "unavailable.own_profiler", "figures": {"rank": 0}}
    assert not (out / "rank0.trace.json.gz").exists()
    assert only_rank(out).steps == 10 - 1 - PROFILER_WARMUP - 2


@pytest.mark.parametrize(
    ("tool", "said"),
    [("bogus", "not one of torch, nsys"), ("nsys", "cudaProfilerStart")],
    ids=["unknown-tool", "nsys-on-cpu"],
)
@pytest.mark.slow  # starts a child process
def test_a_failing_window_fails_open_the_job_runs_on_and_keeps_its_measurement(
    tmp_path: Path, tool: str, said: str
) -> None:
    out = tmp_path / "m"
    env = trace_env(out, warmup=1, steps=3, traced=2, tool=tool)
    done = run_job(tmp_path, ["--steps", "20"], env)
    assert done.returncode == 0, done.stderr
    assert len(losses(done.stdout)) == 1 + 3 + PROFILER_WARMUP + 2 - 1  # the same agreed stop
    note = json.loads((out / "rank0.trace_note.json").read_text())
    assert note["code"] == "own_job.trace_failed" and said in note["figures"]["error"]
    assert only_rank(out).steps == 3
    assert not (out / "rank0.trace.json.gz").exists()


@pytest.mark.parametrize(
    ("tool", "said"),
    [("bogus", "not one of torch, nsys"), ("nsys", "cudaProfilerStart")],
    ids=["unknown-tool", "nsys-on-cpu"],
)
def test_a_failing_window_fails_open_and_keeps_the_measurement_in_process(
    tmp_path: Path, tool: str, said: str
) -> None:
    """The same with the probe's hooks in this process: the note written, the measurement
    kept, the loop stopped at the same agreed step."""
    out = tmp_path / "m"
    with probe_here(trace_env(out, warmup=1, steps=3, traced=2, tool=tool)):
        ran = train_here(steps=20)
    assert ran.exit == 0
    assert len(ran.losses) == 1 + 3 + PROFILER_WARMUP + 2 - 1
    note = json.loads((out / "rank0.trace_note.json").read_text())
    assert note["code"] == "own_job.trace_failed" and said in note["figures"]["error"]
    assert only_rank(out).steps == 3
    assert not (out / "rank0.trace.json.gz").exists()


# ----------------------------------------------------------------------------- the host: nsys


def fake_nsys(tmp_path: Path) -> Path:
    exe = tmp_path / "nsys"
    exe.write_text("#!/bin/sh\necho 'NVIDIA Nsight Systems version 2024.1.1.59-241133802077v0'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


@pytest.mark.slow  # starts an nsys command
def test_nsys_wraps_the_users_launch_line_as_data(tmp_path: Path) -> None:
    from torchscale.orchestration.own_job.command import OwnJobRequest, job_command
    from torchscale.orchestration.profiling.own_job_window import under_nsys

    argv = ("torchrun", "--nproc-per-node", "2", "train.py", "--cfg", "a b.yaml")
    request = OwnJobRequest(argv, 2, 5, False, 60.0, trace_steps=3, tool="nsys")
    env = {"PATH": os.environ["PATH"], "TORCHSCALE_NSYS": str(fake_nsys(tmp_path))}
    command = under_nsys(job_command(request, tmp_path / "run", env), tmp_path / "run", env)
    assert command.argv[:2] == [str(tmp_path / "nsys"), "profile"]
    assert "--capture-range=cudaProfilerApi" in command.argv
    assert "--capture-range-end=stop" in command.argv
    assert f"--output={tmp_path / 'run' / 'ranks' / 'capture'}" in command.argv
    assert command.argv[-len(argv) :] == list(argv)  # the user's line, whole, as given
    assert command.env["TORCHSCALE_OWN_JOB_TRACE_TOOL"] == "nsys"
    assert command.env["TORCHSCALE_OWN_JOB_TRACE_STEPS"] == "3"


def answering_nsys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """fake_nsys's file, its `--version` answered here with what it prints (nothing run)."""
    from torchscale.orchestration.profiling import nsys

    exe = fake_nsys(tmp_path)
    printed = exe.read_text().splitlines()[-1].split("'")[1]
    monkeypatch.setattr(nsys, "nsys_version", lambda *_, **__: nsys.parse_nsys_version(printed))
    return exe


def test_nsys_wraps_the_users_launch_line_as_data_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same argv, the nsys found as TORCHSCALE_NSYS names it and its version read here."""
    from torchscale.orchestration.own_job.command import OwnJobRequest, job_command
    from torchscale.orchestration.profiling.own_job_window import under_nsys

    exe = answering_nsys(tmp_path, monkeypatch)
    argv = ("torchrun", "--nproc-per-node", "2", "train.py", "--cfg", "a b.yaml")
    request = OwnJobRequest(argv, 2, 5, False, 60.0, trace_steps=3, tool="nsys")
    env = {"PATH": os.environ["PATH"], "TORCHSCALE_NSYS": str(exe)}
    command = under_nsys(job_command(request, tmp_path / "run", env), tmp_path / "run", env)
    assert command.argv[:2] == [str(exe), "profile"]
    assert "--capture-range=cudaProfilerApi" in command.argv
    assert "--capture-range-end=stop" in command.argv
    assert f"--output={tmp_path / 'run' / 'ranks' / 'capture'}" in command.argv
    assert command.argv[-len(argv) :] == list(argv)
    assert command.env["TORCHSCALE_OWN_JOB_TRACE_TOOL"] == "nsys"
    assert command.env["TORCHSCALE_OWN_JOB_TRACE_STEPS"] == "3"


@pytest.mark.slow  # starts an nsys command
def test_nsys_is_refused_in_one_line_without_a_gpu_or_without_nsys(tmp_path: Path) -> None:
    from torchscale.orchestration.profiling.own_job_window import refuse_nsys

    with pytest.raises(UsageError, match="needs a CUDA GPU"):
        refuse_nsys(0, {"TORCHSCALE_NSYS": str(fake_nsys(tmp_path))})
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {"PATH": str(empty), "HOME": str(tmp_path), "TORCHSCALE_NSYS_ROOT": str(empty)}
    with pytest.raises(ToolNotFoundError, match="nsys"):
        refuse_nsys(1, env)
    refuse_nsys(1, {**env, "TORCHSCALE_NSYS": str(fake_nsys(tmp_path))})  # found: no refusal


def test_nsys_is_refused_in_one_line_without_a_gpu_or_without_nsys_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchscale.orchestration.profiling.own_job_window import refuse_nsys

    exe = answering_nsys(tmp_path, monkeypatch)
    with pytest.raises(UsageError, match="needs a CUDA GPU"):
        refuse_nsys(0, {"TORCHSCALE_NSYS": str(exe)})
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {"PATH": str(empty), "HOME": str(tmp_path), "TORCHSCALE_NSYS_ROOT": str(empty)}
    with pytest.raises(ToolNotFoundError, match="nsys"):
        refuse_nsys(1, env)
    refuse_nsys(1, {**env, "TORCHSCALE_NSYS": str(exe)})  # found: no refusal


def test_profile_with_nsys_on_a_cpu_machine_is_one_line_and_a_non_zero_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from torchscale.interfaces.cli.app import app
    from torchscale.orchestration.plan.nodes import Machine
    from torchscale.orchestration.schedulers.local import launcher

    monkeypatch.setattr(
        launcher, "machine_here", lambda gpu_memory=False: Machine(gpu_count=0, cpu_cores=2)
    )
    argv = ["profile", "--tool", "nsys", "-o", str(tmp_path), "--", sys.executable, "x.py"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code != 0
    assert "needs a CUDA GPU" in result.output and "Traceback" not in result.output
    assert not list(tmp_path.rglob("ranks"))  # nothing launched


def test_the_ranks_reasons_for_no_trace_are_read_back_as_worded_findings(tmp_path: Path) -> None:
    from torchscale.contracts import wording
    from torchscale.orchestration.profiling.own_job_window import trace_notes
    from torchscale.rank.own_job.trace_window import OWN_PROFILER, TRACE_FAILED, write_note

    write_note(tmp_path, 1, OWN_PROFILER)
    write_note(tmp_path, 0, TRACE_FAILED, error="OSError: disk full")
    (tmp_path / "rank2.trace_note.json").write_text("{not json")  # left out, never raised
    first, second = trace_notes(tmp_path)
    assert (first.code, first.figures["rank"]) == (TRACE_FAILED, 0)
    assert "rank 0" in wording.say(first) and "disk full" in wording.say(first)
    assert (second.code, second.figures) == (OWN_PROFILER, {"rank": 1})
    assert wording.say(second).startswith("rank 1 runs its own profiler")
