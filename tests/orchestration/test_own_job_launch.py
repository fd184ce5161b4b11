"""`torchscale profile -- COMMAND`, the host side: the user's command and environment built as
data, secrets kept out of what is stored, and real (tiny, torch-free) jobs run through the one
launch path: a missing program, one that exits at once, one that never steps, and one whose
ranks' files (prepared here from RankMeasurement objects, in place of the probe's) become one
stored cell (cells/<id>.json) with the straggler named."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.processes import default_signals, processes_mentioning
from torchscale.contracts import wording
from torchscale.contracts.errors import UsageError
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.orchestration.launch import process
from torchscale.orchestration.launch.process import ProcessOutcome
from torchscale.orchestration.own_job.command import (
    REDACTED,
    OwnJobRequest,
    job_command,
    job_label,
    redacted,
)
from torchscale.orchestration.own_job.run import OwnJobRun, run_own_job
from torchscale.rank.own_job import CARRIER_DIR
from torchscale.rank.own_job import ENV_DIR as DIR_ENV
from torchscale.rank.own_job import ENV_STEPS as STEPS_ENV
from torchscale.rank.own_job import ENV_STOP as STOP_ENV
from torchscale.rank.own_job import ENV_WARMUP as WARMUP_ENV
from torchscale.rank.worker.measure import RankMeasurement, Window

PHASES = {"data": 0.0001, "forward": 0.002, "backward": 0.003, "optimizer": 0.0009}
# a plain-python "job": copies the measurement files prepared by the test (argv[1]) into the
# folder the host named in its environment, as the probe would write them
COPYING_JOB = """
import os, shutil, sys
source, target = sys.argv[1], os.environ["TORCHSCALE_OWN_JOB_DIR"]
assert os.environ["TORCHSCALE_OWN_JOB_STOP"] == "1"
for name in os.listdir(source):
    shutil.copy(os.path.join(source, name), target)
print("trained")
"""


def request(*argv: str, timeout_s: float = 60.0) -> OwnJobRequest:
    return OwnJobRequest(
        argv=argv, warmup_steps=5, steps=20, let_it_finish=False, timeout_s=timeout_s
    )


def pickled_reader(folder: Path) -> tuple[list[RankMeasurement], list[Finding]]:
    """Stands in for the probe's read_rank_files: what the test job copied, by rank."""
    ranks, findings = [], []
    for path in sorted(folder.glob("rank*.pkl")):
        read = pickle.loads(path.read_bytes())
        if isinstance(read, Finding):
            findings.append(read)
        else:
            ranks.append(read)
    return sorted(ranks, key=lambda r: r.rank), findings


def rank(index: int, phases: dict[str, float]) -> RankMeasurement:
    steps = [0.02] * 4
    windows = [
        Window(1.0, list(steps), {name: [value] * 4 for name, value in phases.items()})
        for _ in range(3)
    ]
    return RankMeasurement(
        rank=index, host="host", timing="perf_counter", steps=4, warmup_s=[0.02] * 5,
        windows=windows,
    )  # fmt: skip


def _check_exit_3_kept_the_measurement(ran: OwnJobRun) -> None:
    """The job exited 3 after its ranks wrote: the measurement kept, the exit said, by the
    job's own launcher's name (here python, not torchrun)."""
    assert ran.problem is None and ran.exit_code == 0
    stored = CellResult.model_validate_json(ran.result_path.read_text())
    assert stored.status == "ok" and stored.throughput is not None
    (crash,) = [w.finding for w in stored.warnings if w.finding is not None
                and w.finding.code == "warning.exit_after_result"]  # fmt: skip
    assert crash.figures["returncode"] == 3
    said = wording.say(crash)
    assert "measurement kept" in said and said.startswith(f"{Path(sys.executable).name} exited")


def _check_one_result_with_the_straggler(ran: OwnJobRun, tmp_path: Path) -> None:
    """The ranks' files became one stored result, its straggler rank 1, in the run's folders."""
    assert ran.problem is None and ran.exit_code == 0
    assert ran.result_path.parent == tmp_path / "results" / "standalone" / "cells"
    assert ran.directory.parent == tmp_path / "results" / "standalone" / "logs"
    stored = CellResult.model_validate_json(ran.result_path.read_text())
    assert stored.status == "ok"
    assert stored.cell.model == "own:train.py" and stored.cell.world_size == 2
    assert stored.diagnosis is not None and stored.diagnosis.straggler is not None
    assert stored.diagnosis.straggler.named and stored.diagnosis.straggler.rank == 1
    codes = [w.finding.code for w in stored.warnings if w.finding is not None]
    assert "own_job.identity_unknown" in codes


def _check_the_environment(ran: OwnJobRun, script: Path) -> None:
    """The job's own command line, and the probe carried in on PYTHONPATH."""
    environment = json.loads((ran.directory / "environment.json").read_text())
    assert environment["argv"][1] == str(script)
    assert environment["env"]["PYTHONPATH"].startswith(str(CARRIER_DIR))


def _check_samples_per_step_given(tmp_path: Path, given: OwnJobRequest) -> None:
    """The 24 samples per step given replace the count read, are said, and set the throughput."""
    from dataclasses import replace

    ran = run(tmp_path, given)
    assert ran.problem is None and ran.exit_code == 0
    stored = CellResult.model_validate_json(ran.result_path.read_text())
    assert stored.cell.batch_size == 24
    said = [wording.say(w.finding) for w in stored.warnings if w.finding is not None]
    assert any(s.startswith("samples per step: 24 per rank as given") for s in said), said
    # the throughput counts the given samples: twice them, twice the samples per second
    doubled = run(tmp_path / "again", replace(given, samples_per_step=48))
    again = CellResult.model_validate_json(doubled.result_path.read_text())
    assert stored.throughput is not None and again.throughput is not None
    assert again.throughput.samples_per_s == pytest.approx(2 * stored.throughput.samples_per_s)


def _check_no_step_seen(ran: OwnJobRun) -> None:
    """No rank saw an optimizer step: exit 1, said with how steps are found, stored as its code."""
    assert ran.problem is not None and ran.problem.code == "own_job.no_step_seen"
    assert ran.exit_code == 1
    assert "no optimizer step seen" in wording.say(ran.problem)
    assert "optimizer hooks" in wording.say(ran.problem)
    # stored as its code, worded when shown (a stored sentence would keep today's words)
    stored = CellResult.model_validate_json(ran.result_path.read_text())
    assert stored.error is not None and stored.error.why == ran.problem


def run(tmp_path: Path, job: OwnJobRequest) -> OwnJobRun:
    env = dict(os.environ)
    return run_own_job(job, tmp_path / "results", "standalone", env, pickled_reader)


@dataclass(frozen=True)
class Job:
    """What a job's process does, stood in for in-process: copies the ranks' files prepared in
    `copies` into the folder the host named (as COPYING_JOB does), then exits with
    `returncode` (None: killed at its timeout), or is stopped by `stops` first."""

    copies: Path | None = None
    returncode: int | None = 0
    stops: BaseException | None = None


def jobs_in_process(
    monkeypatch: pytest.MonkeyPatch, job: Job | Callable[[list[str]], Job]
) -> list[tuple[list[str], float]]:
    """Each launch's process stood in for by `job` (or the Job its argv names): the one call
    that starts it (launch.process.run_logged) does what the job would, in this process. The
    argv and timeout of each launch."""
    launched: list[tuple[list[str], float]] = []

    def run_logged(
        argv: Sequence[str], env: Mapping[str, str], log_path: Path, timeout_s: float, **_: Any
    ) -> ProcessOutcome:
        launched.append((list(argv), timeout_s))
        this = job(list(argv)) if callable(job) else job
        if this.copies is not None:
            for name in os.listdir(this.copies):
                shutil.copy(this.copies / name, env[DIR_ENV])
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text("", encoding="utf-8")
        if this.stops is not None:
            raise this.stops
        return ProcessOutcome(this.returncode, this.returncode is None, 0.1, log_path)

    monkeypatch.setattr(process, "run_logged", run_logged)
    return launched


def varying_rank(index: int, phases: dict[str, float]) -> RankMeasurement:
    """rank(), each step's phases 1 % apart: without ties between the ranks' per-step
    differences the straggler's test is exact, not a permutation test of seconds."""
    steps = [0.02] * 4
    windows = [
        Window(1.0, list(steps), {n: [v * (1 + (4 * w + k) / 100) for k in range(4)]
                                  for n, v in phases.items()})
        for w in range(3)
    ]  # fmt: skip
    return RankMeasurement(index, "host", "perf_counter", 4, [0.02] * 5, windows)


def prepared_ranks(tmp_path: Path, *files: RankMeasurement | Finding) -> Path:
    """The ranks' files a job would write, one per rank in order (read by pickled_reader)."""
    folder = tmp_path / "prepared"
    folder.mkdir()
    for k, written in enumerate(files):
        (folder / f"rank{k}.pkl").write_bytes(pickle.dumps(written))
    return folder


# ------------------------------------------------------------------------------- as data


def test_the_command_is_run_as_given_with_the_carrier_first(tmp_path: Path) -> None:
    argv = ("torchrun", "--nproc-per-node", "2", "train.py", "--lr", "0.1")
    base = {"PYTHONPATH": "/mine:/theirs", "PATH": "/usr/bin", "HF_TOKEN": "hf_abc"}
    command = job_command(request(*argv), tmp_path, base)
    assert command.argv == list(argv)
    assert command.env["PYTHONPATH"].split(os.pathsep) == [str(CARRIER_DIR), "/mine", "/theirs"]
    assert CARRIER_DIR.parts[-3:] == ("rank", "own_job", "carrier")
    assert command.env[DIR_ENV] == str(tmp_path / "ranks")
    assert (command.env[WARMUP_ENV], command.env[STEPS_ENV], command.env[STOP_ENV]) == (
        "5",
        "20",
        "1",
    )
    assert command.env["HF_TOKEN"] == "hf_abc"  # the job gets its secrets
    assert "HF_TOKEN" not in command.env_overrides
    assert command.log_path.parent == tmp_path / "logs"
    assert command.env["TORCHELASTIC_ERROR_FILE"] == str(command.error_file)
    theirs = job_command(request(*argv), tmp_path, {**base, "TORCHELASTIC_ERROR_FILE": "/e.json"})
    assert "TORCHELASTIC_ERROR_FILE" not in theirs.env_overrides  # the user's own is kept
    assert theirs.error_file == Path("/e.json")


def test_without_a_pythonpath_the_carrier_is_alone_and_let_it_finish_never_stops(
    tmp_path: Path,
) -> None:
    job = OwnJobRequest(("python", "x.py"), 2, 0, let_it_finish=True, timeout_s=10)
    command = job_command(job, tmp_path, {"PATH": "/usr/bin"})
    assert command.env["PYTHONPATH"] == str(CARRIER_DIR)
    assert (command.env[STEPS_ENV], command.env[STOP_ENV]) == ("0", "0")


def test_secrets_are_redacted_by_their_names() -> None:
    env = {
        "HF_TOKEN": "a",
        "WANDB_API_KEY": "b",
        "AWS_SECRET_ACCESS_KEY": "c",
        "DB_PASSWORD": "d",
        "PATH": "/usr/bin",
        "NCCL_DEBUG": "INFO",
    }
    stored = redacted(env)
    assert {k for k, v in stored.items() if v == REDACTED} == {
        "HF_TOKEN",
        "WANDB_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
    }
    assert stored["PATH"] == "/usr/bin" and stored["NCCL_DEBUG"] == "INFO"


@pytest.mark.parametrize(
    ("argv", "label"),
    [
        (("torchrun", "--nproc-per-node", "2", "examples/train.py"), "train.py"),
        (("python", "-m", "my.trainer"), "my.trainer"),
        (("/opt/bin/launch.sh",), "launch.sh"),
    ],
)
def test_the_job_is_named_by_its_script(argv: tuple[str, ...], label: str) -> None:
    assert job_label(argv) == label


# ------------------------------------------------------------------------ real launches


def test_a_command_not_found_is_one_line_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as raised:
        run(tmp_path, request("no-such-program-73", "train.py"))
    assert str(raised.value).startswith("no-such-program-73: command not found")
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "results").exists()


@pytest.mark.slow  # starts a launched command
def test_a_job_that_exits_3_at_once_is_one_line_and_fails(tmp_path: Path) -> None:
    ran = run(tmp_path, request(sys.executable, "-c", "import sys; sys.exit(3)"))
    assert ran.problem is not None and ran.problem.code == "own_job.exited"
    assert ran.exit_code != 0
    line = wording.say(ran.problem)
    assert "exited with 3" in line and "\n" not in line
    stored = CellResult.model_validate_json(ran.result_path.read_text())
    assert stored.status == "failed" and stored.error is not None
    assert (ran.directory / "environment.json").is_file()


def test_a_job_that_exits_3_is_one_line_read_from_its_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks above, the job's exit stood in for in-process."""
    jobs_in_process(monkeypatch, Job(returncode=3))
    test_a_job_that_exits_3_at_once_is_one_line_and_fails(tmp_path)


@pytest.mark.slow  # starts a launched command
def test_a_job_that_never_steps_says_how_steps_are_found(tmp_path: Path) -> None:
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    for k in range(2):
        no_step = Finding(code="own_job.no_optimizer_step", figures={"rank": k})
        (prepared / f"rank{k}.pkl").write_bytes(pickle.dumps(no_step))
    script = tmp_path / "job.py"
    script.write_text(COPYING_JOB)
    ran = run(tmp_path, request(sys.executable, str(script), str(prepared)))
    _check_no_step_seen(ran)


def test_ranks_that_saw_no_step_say_how_steps_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_step = [Finding(code="own_job.no_optimizer_step", figures={"rank": k}) for k in range(2)]
    jobs_in_process(monkeypatch, Job(copies=prepared_ranks(tmp_path, *no_step)))
    ran = run(tmp_path, request(sys.executable, str(tmp_path / "job.py")))
    _check_no_step_seen(ran)


@pytest.mark.slow  # starts a launched command
def test_the_ranks_files_become_one_result_with_the_straggler(tmp_path: Path) -> None:
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    slow = {**PHASES, "backward": 0.013, "grad_sync_wait": 0.001}
    ranks = [rank(0, {**PHASES, "grad_sync_wait": 0.011}), rank(1, slow)]
    for measurement in ranks:
        (prepared / f"rank{measurement.rank}.pkl").write_bytes(pickle.dumps(measurement))
    script = tmp_path / "train.py"
    script.write_text(COPYING_JOB)
    ran = run(tmp_path, request(sys.executable, str(script), str(prepared)))
    _check_one_result_with_the_straggler(ran, tmp_path)
    # the job's own output went to its log, not to torchscale's answer
    log = (ran.directory / "logs" / "torchrun.log").read_text()
    assert "trained" in log
    _check_the_environment(ran, script)


def test_the_ranks_files_read_in_process_become_one_result_with_the_straggler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = {**PHASES, "backward": 0.013, "grad_sync_wait": 0.001}
    on_time = {**PHASES, "grad_sync_wait": 0.011}
    ranks = prepared_ranks(tmp_path, varying_rank(0, on_time), varying_rank(1, slow))
    launched = jobs_in_process(monkeypatch, Job(copies=ranks))
    script = tmp_path / "train.py"
    ran = run(tmp_path, request(sys.executable, str(script), str(ranks)))
    assert [argv for argv, _ in launched] == [[sys.executable, str(script), str(ranks)]]
    _check_one_result_with_the_straggler(ran, tmp_path)
    _check_the_environment(ran, script)


@pytest.mark.slow  # starts a child process
def test_a_job_that_crashes_in_its_teardown_after_measuring_keeps_it_with_that_said(
    tmp_path: Path,
) -> None:
    """The ranks wrote their files at W + N, then the job's own teardown failed (exit 3): the
    measurement is the result, and a warning says the exit came after it."""
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    even = {**PHASES, "grad_sync_wait": 0.001}
    for measurement in (rank(0, even), rank(1, even)):
        (prepared / f"rank{measurement.rank}.pkl").write_bytes(pickle.dumps(measurement))
    script = tmp_path / "train.py"
    script.write_text(COPYING_JOB + "sys.exit(3)\n")
    ran = run(tmp_path, request(sys.executable, str(script), str(prepared)))
    _check_exit_3_kept_the_measurement(ran)


def test_a_job_that_exits_3_after_measuring_keeps_it_with_that_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    even = {**PHASES, "grad_sync_wait": 0.001}
    ranks = prepared_ranks(tmp_path, rank(0, even), rank(1, even))
    jobs_in_process(monkeypatch, Job(copies=ranks, returncode=3))
    ran = run(tmp_path, request(sys.executable, str(tmp_path / "train.py"), str(ranks)))
    _check_exit_3_kept_the_measurement(ran)


@pytest.mark.slow  # starts a launched command
def test_samples_per_step_given_replace_the_loaders_count_and_say_so(tmp_path: Path) -> None:
    from dataclasses import replace

    prepared = tmp_path / "prepared"
    prepared.mkdir()
    both = {**PHASES, "grad_sync_wait": 0.001}
    for measurement in [rank(0, both), rank(1, both)]:
        (prepared / f"rank{measurement.rank}.pkl").write_bytes(pickle.dumps(measurement))
    script = tmp_path / "train.py"
    script.write_text(COPYING_JOB)
    given = replace(request(sys.executable, str(script), str(prepared)), samples_per_step=24)
    _check_samples_per_step_given(tmp_path, given)


def test_samples_per_step_given_replace_the_count_read_in_process_and_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    both = {**PHASES, "grad_sync_wait": 0.001}
    ranks = prepared_ranks(tmp_path, rank(0, both), rank(1, both))
    jobs_in_process(monkeypatch, Job(copies=ranks))
    job = request(sys.executable, str(tmp_path / "train.py"), str(ranks))
    given = replace(job, samples_per_step=24)
    _check_samples_per_step_given(tmp_path, given)


@pytest.mark.slow  # starts a launched command
def test_a_job_that_ends_without_writing_says_why_nothing_was_measured(tmp_path: Path) -> None:
    ran = run(tmp_path, request(sys.executable, "-c", "print('no torch here')"))
    assert ran.problem is not None and ran.problem.code == "own_job.no_rank_files"
    assert ran.exit_code == 1
    assert "-E, -I or -S" in wording.say(ran.problem)


def test_a_job_that_exits_0_without_rank_files_says_why_nothing_was_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs_in_process(monkeypatch, Job())
    test_a_job_that_ends_without_writing_says_why_nothing_was_measured(tmp_path)


@pytest.mark.slow  # starts a launched command
def test_a_hanging_job_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    hang = request(sys.executable, "-c", "import time; time.sleep(120)", timeout_s=1.0)
    ran = run(tmp_path, hang)
    assert ran.problem is not None and ran.problem.code == "own_job.timed_out"
    assert ran.exit_code == 1 and ran.result.status == "timeout"
    assert "--timeout" in wording.say(ran.problem)


def test_a_job_killed_at_its_timeout_is_a_timeout_naming_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched = jobs_in_process(monkeypatch, Job(returncode=None))
    test_a_hanging_job_is_stopped_at_the_timeout(tmp_path)
    assert [timeout for _, timeout in launched] == [1.0]  # the request's --timeout


# a driver in its own process, as the CLI runs: the probe's reader replaced by the test's
DRIVER = """
import pickle, sys
from pathlib import Path
from torchscale.orchestration.own_job import run

def read(folder):
    return [pickle.loads(p.read_bytes()) for p in sorted(Path(folder).glob("rank*.pkl"))], []

run.probe_reader = lambda: read
from torchscale.interfaces.cli.app import main
sys.argv = ["torchscale", "profile", "-o", sys.argv[1], "--", *sys.argv[2:]]
main()
"""
# writes the prepared files, says so, then never ends (a job stuck after measuring)
WRITE_THEN_HANG = COPYING_JOB + "sys.stdout.flush()\nimport time\ntime.sleep(120)\n"


# SIGINT raises KeyboardInterrupt, SIGTERM Terminated; SIGHUP raises the same Terminated as
# SIGTERM (contracts/signals.py's TERMINATING_SIGNALS, both tested in tests/e2e/test_signals.py)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.slow  # starts a child process
def test_a_stop_signal_stops_the_jobs_group_and_keeps_what_was_measured(
    tmp_path: Path, signum: int
) -> None:
    name = signal.Signals(signum).name

    prepared = tmp_path / "prepared"
    prepared.mkdir()
    even = {**PHASES, "grad_sync_wait": 0.001}
    for measurement in (rank(0, even), rank(1, even)):
        (prepared / f"rank{measurement.rank}.pkl").write_bytes(pickle.dumps(measurement))
    (tmp_path / "driver.py").write_text(DRIVER)
    (tmp_path / "train.py").write_text(WRITE_THEN_HANG)
    out = tmp_path / "results"
    argv = [sys.executable, str(tmp_path / "driver.py"), str(out), sys.executable]
    argv += [str(tmp_path / "train.py"), str(prepared)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    driver = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=default_signals,  # as from a shell: SIGINT not ignored
    )
    try:
        deadline = time.monotonic() + 60
        logs = list(out.glob("own_job/logs/*/logs/torchrun.log"))
        while time.monotonic() < deadline and not (logs and "trained" in logs[0].read_text()):
            time.sleep(0.2)
            logs = list(out.glob("own_job/logs/*/logs/torchrun.log"))
        assert logs, "the job never started"
        driver.send_signal(signum)
        stdout, stderr = driver.communicate(timeout=60)
    finally:
        driver.kill()
    assert driver.returncode == 128 + signum, stderr.decode()
    assert f"stopped by {name}" in stderr.decode()
    assert "own:train.py" in stdout.decode()  # the answer from what was measured
    assert b"Traceback" not in stderr
    (cell,) = (out / "own_job" / "cells").iterdir()
    stored = CellResult.model_validate_json(cell.read_text())
    assert stored.status == "ok"
    codes = [w.finding.code for w in stored.warnings if w.finding is not None]
    assert "own_job.stopped" in codes
    assert processes_mentioning(str(tmp_path / "train.py")) == []  # the job's group is gone


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_during_the_job_keeps_what_was_measured_and_exits_by_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signum: int
) -> None:
    """What run_logged raises once it took the job's group down (KeyboardInterrupt for
    SIGINT, Terminated for SIGTERM), raised in-process after the ranks wrote their files."""
    from typer.testing import CliRunner

    from torchscale.contracts.signals import Terminated
    from torchscale.interfaces.cli.app import app
    from torchscale.orchestration.own_job import run as own_job_run

    monkeypatch.setattr(own_job_run, "probe_reader", lambda: pickled_reader)
    even = {**PHASES, "grad_sync_wait": 0.001}
    ranks = prepared_ranks(tmp_path, rank(0, even), rank(1, even))
    stop = KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)
    jobs_in_process(monkeypatch, Job(copies=ranks, stops=stop))
    out = tmp_path / "results"
    argv = ["profile", "-o", str(out), "--", sys.executable, str(tmp_path / "train.py")]
    result = CliRunner().invoke(app, [*argv, str(ranks)])
    assert result.exit_code == 128 + signum, result.output
    assert f"stopped by {signal.Signals(signum).name}" in result.output
    assert "own:train.py" in result.output  # the answer from what was measured
    assert "Traceback" not in result.output
    (cell,) = (out / "own_job" / "cells").iterdir()
    stored = CellResult.model_validate_json(cell.read_text())
    assert stored.status == "ok"
    codes = [w.finding.code for w in stored.warnings if w.finding is not None]
    assert "own_job.stopped" in codes


def test_the_batch_is_the_samples_per_step_the_probe_counted() -> None:
    from dataclasses import replace

    from torchscale.orchestration.own_job.identity import job_identity, measured_batch
    from torchscale.rank.own_job.reading import OwnJobMeasurement

    base = rank(0, PHASES)
    fields = {k: getattr(base, k) for k in ("rank", "host", "timing", "steps", "warmup_s")}
    counted = OwnJobMeasurement(**fields, windows=base.windows, samples_per_step=[32, 32, 32, 16])
    assert measured_batch([counted, replace(counted, rank=1)]) == 32
    unknown = replace(counted, samples_per_step=[32, None, 32, 32])
    assert measured_batch([counted, unknown]) is None
    assert measured_batch([base]) is None  # a reader that counts nothing
    identity = job_identity("own_x", ["python", "x.py"], "x.py", 2, "cpu", None)
    assert (identity.batch_size, identity.model, identity.backend) == (1, "own:x.py", "gloo")
    said = wording.say(Finding(code="own_job.identity_unknown", figures={"batch": 32}))
    assert "b32 is the samples" in said and "b1" not in said


def test_the_jobs_label_shows_the_precision_its_flops_ran_in() -> None:
    """A job under bf16 autocast read 'fp32' in its label beside an MFU against the bf16 peak:
    the precision most of its counted FLOPs ran in is its label's, said as counted; where
    nothing was counted the fp32 placeholder stays, said as one."""
    from dataclasses import replace

    from torchscale.orchestration.own_job.identity import job_facts, job_identity, job_precision
    from torchscale.rank.own_job.reading import OwnJobMeasurement

    base = rank(0, PHASES)
    fields = {k: getattr(base, k) for k in ("rank", "host", "timing", "steps", "warmup_s")}
    bf16 = OwnJobMeasurement(
        **fields, windows=base.windows, flops_by_dtype={"bfloat16": 9e12, "float32": 1e12}
    )
    assert job_precision([bf16]) == "bf16"
    identity = job_identity("own_x", ["python", "x.py"], "x.py", 1, "cuda", 8, None, "bf16")
    assert identity.precision == "bf16" and identity.label == "own:x.py"
    (warning,) = job_facts([bf16], "cuda", 8).warnings
    said = wording.say(warning.finding)
    assert "bf16 is the precision most of its step's FLOPs ran in" in said, said
    assert "fp32" not in said and "precision" not in said.split("not known")[0], said
    uncounted = replace(bf16, flops_by_dtype={})
    assert job_precision([uncounted]) is None
    (warning,) = job_facts([uncounted], "cuda", 8).warnings
    said = wording.say(warning.finding)
    assert "precision" in said and "fp32" in said  # the placeholder, said as one


def test_tokens_per_sample_are_the_tokens_the_probe_counted_over_its_samples() -> None:
    """So the throughput has tokens per second: padded batches (fewer tokens than ids) give
    the mean; one step whose tokens are unknown leaves it unknown."""
    from dataclasses import replace

    from torchscale.orchestration.own_job.identity import job_facts, measured_tokens_per_sample
    from torchscale.rank.own_job.reading import OwnJobMeasurement

    base = rank(0, PHASES)
    fields = {k: getattr(base, k) for k in ("rank", "host", "timing", "steps", "warmup_s")}
    counted = OwnJobMeasurement(
        **fields, windows=base.windows, samples_per_step=[8] * 4, tokens_per_step=[256] * 4
    )
    padded = replace(counted, rank=1, tokens_per_step=[200, 256, 256, 256])
    assert measured_tokens_per_sample([counted, padded]) == (7 * 256 + 200) / 64
    assert job_facts([counted], "cpu", 8).tokens_per_sample == 32
    assert measured_tokens_per_sample([replace(counted, tokens_per_step=[None] * 4)]) is None
    assert measured_tokens_per_sample([base]) is None  # a reader that counts nothing


# ------------------------------------------------------------ a sweep's job cells (jobs:)


@pytest.mark.slow  # starts a child process
def test_a_sweeps_job_cells_relaunch_and_a_failing_one_leaves_the_sweep_going(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two `jobs:` rows through the sweep's own loop: one exits 3 (failed, its root cause
    kept), the other relaunched twice (measurement.repeats), its launches' windows the
    result's repeats, its start-up from the probe's stamps, the plan's id and definition."""
    from dataclasses import replace

    from torchscale.offline.results.store import ResultStore
    from torchscale.orchestration.config.schema import BenchConfig
    from torchscale.orchestration.own_job import sweep_cell
    from torchscale.orchestration.plan.build import build_plan
    from torchscale.orchestration.plan.nodes import Machine
    from torchscale.orchestration.sweep import run_sweep
    from torchscale.rank.own_job.reading import OwnJobMeasurement

    monkeypatch.setattr(sweep_cell, "probe_reader", lambda: pickled_reader)
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    even = {**PHASES, "grad_sync_wait": 0.001}
    imported = time.time() + 100.0  # after the launch: its start-up counts from the launch
    for k in range(2):
        base = rank(k, even)
        fields = {f: getattr(base, f) for f in ("rank", "host", "timing", "steps", "warmup_s")}
        own = OwnJobMeasurement(**fields, windows=base.windows, samples_per_step=[16] * 12)
        own = replace(own, torch_imported_unix=imported, training_started_unix=imported + 2.5)
        (prepared / f"rank{k}.pkl").write_bytes(pickle.dumps(own))
    script = tmp_path / "train.py"
    script.write_text(COPYING_JOB)
    failing = [sys.executable, "-c", "import sys; sys.exit(3)", "{gpus}"]
    jobs = [
        {"name": "bad", "command": failing},
        {"name": "good", "command": [sys.executable, str(script), str(prepared), "{gpus}"]},
    ]
    config = BenchConfig.model_validate(
        {
            "experiment_name": "sweep",
            "jobs": jobs,
            "gpu_counts": [2],
            "device": "cpu",
            "measurement": {"warmup_steps": 5, "steps": 4, "repeats": 2},
        }
    )
    plan = build_plan(config, Machine(gpu_count=0, cpu_cores=2))
    store = ResultStore.for_experiment(tmp_path / "results", "sweep")
    outcome = run_sweep(plan, store, dict(os.environ))
    bad, good = outcome.results
    assert bad.status == "failed" and bad.error is not None
    assert "exited with 3" in wording.say(bad.error.finding)  # its root cause
    assert bad.launch.get("launches") is None  # a launch that measures nothing ends the cell
    assert good.status == "ok", good.error
    assert (good.cell.id, good.cell.definition_sha256) == (
        plan[1].cell.id,
        plan[1].cell.definition_sha256,
    )
    assert (good.cell.world_size, good.cell.batch_size, good.cell.model) == (2, 16, "own:good")
    assert good.repeats == 2 and good.launch["launches"] == 2  # a repeat is a relaunch
    assert good.measured_steps == 4
    costs = good.fixed_costs
    assert costs is not None and costs.model_build_s == pytest.approx(2.5)
    assert costs.process_start_s is not None and 90.0 < costs.process_start_s <= 100.0
    assert costs.warmup_s == pytest.approx(0.1)  # 5 warm-up steps of 0.02 s
    assert good.unavailable["fixed_costs.process_group_init_s"].code == (
        "unavailable.own_job_setup_whole"
    )
    for result in (bad, good):  # written where a sweep's cells go: what resume and report read
        stored = store.read_cell(result.cell.id)
        assert stored is not None and stored.status == result.status
    logs = store.log_dir(good.cell.id)
    assert sorted(p.name for p in logs.iterdir()) == ["launch1", "launch2"]
    assert (logs / "launch2" / "environment.json").is_file()


def test_a_sweeps_job_cells_relaunch_in_process_and_a_failing_one_leaves_the_sweep_going(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks above, each launch stood in for in-process: the `-c` job exits 3, the
    script's copies the ranks' files."""
    prepared = tmp_path / "prepared"
    launched = jobs_in_process(
        monkeypatch, lambda argv: Job(returncode=3) if "-c" in argv else Job(copies=prepared)
    )
    test_a_sweeps_job_cells_relaunch_and_a_failing_one_leaves_the_sweep_going(tmp_path, monkeypatch)
    assert len(launched) == 3  # the failing cell once, the other once per repeat
