"""The user's launch line as data: its argv exactly as given (or, in a sweep, a python line
inside torchscale's own torchrun), its environment (the caller's, with the probe's carrier
first on PYTHONPATH and the TORCHSCALE_OWN_JOB_* settings every rank reads before the job
starts), and a copy of that environment safe to store.

Nothing here starts a process: launch.attempt.run_attempt runs what this builds.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from torchscale.contracts.cell import Device
from torchscale.contracts.finding import Finding
from torchscale.contracts.rank_diagnostics import ERROR_FILE_ENV
from torchscale.orchestration.launch.torchrun import LaunchCommand, torchrun_command
from torchscale.orchestration.launch.torchrun_env import child_environment
from torchscale.orchestration.own_job.job_line import JobLine
from torchscale.orchestration.own_job.job_line import job_label as job_label

# the agreed interface with the probe, spelled once there (its package imports nothing heavy):
# the carrier folder (its sitecustomize.py) and the settings every rank reads
from torchscale.rank.own_job import CARRIER_DIR
from torchscale.rank.own_job import ENV_DIR as DIR_ENV
from torchscale.rank.own_job import ENV_STEPS as STEPS_ENV
from torchscale.rank.own_job import ENV_STOP as STOP_ENV
from torchscale.rank.own_job import ENV_TRACE_STEPS as TRACE_STEPS_ENV
from torchscale.rank.own_job import ENV_TRACE_TOOL as TRACE_TOOL_ENV
from torchscale.rank.own_job import ENV_WARMUP as WARMUP_ENV

# the environment the job ran with, a secret's value redacted (REDACTED)
ENVIRONMENT_FILE = "environment.json"
REDACTED = "<redacted>"
# a variable whose name holds one of these carries a secret: stored as REDACTED
SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE")
_SECRET_NAME = re.compile("|".join(SECRET_WORDS), re.IGNORECASE)


@dataclass(frozen=True)
class OwnJobRequest:
    """What the user asked: their command and how long to measure it."""

    argv: tuple[str, ...]
    warmup_steps: int
    steps: int  # measured optimizer steps; with let_it_finish, 0 (every step after warm-up)
    let_it_finish: bool
    timeout_s: float
    samples_per_step: int | None = None  # given by the user: the loader's count not used
    trace_steps: int = 0  # K steps traced after the measured ones (0: none; a sweep's cells)
    tool: str = "torch"  # the tracer: torch (torch.profiler) | nsys (NVTX, under nsys profile)

    @property
    def stop(self) -> bool:
        return not self.let_it_finish


def missing_program(argv: Sequence[str], env: Mapping[str, str]) -> Finding | None:
    """Why `argv[0]` cannot be started (not found on the job's PATH, not executable), or None:
    said in one line before anything is launched."""
    program = argv[0]
    if os.sep in program:
        if not Path(program).is_file():
            return Finding(code="own_job.command_not_found", figures={"program": program})
        if not os.access(program, os.X_OK):
            return Finding(code="own_job.not_executable", figures={"program": program})
        return None
    if shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        return Finding(code="own_job.command_not_found", figures={"program": program})
    return None


def job_overrides(
    request: OwnJobRequest, measurements: Path, base_env: Mapping[str, str], error_file: Path
) -> dict[str, str]:
    """What torchscale sets on top of the caller's environment: the carrier first on
    PYTHONPATH (the user's entries kept after it), the probe's settings, and torchrun's error
    file unless the user named their own."""
    inherited = base_env.get("PYTHONPATH", "")
    path = os.pathsep.join([str(CARRIER_DIR), *([inherited] if inherited else [])])
    overrides = {
        "PYTHONPATH": path,
        DIR_ENV: str(measurements),
        WARMUP_ENV: str(request.warmup_steps),
        STEPS_ENV: str(0 if request.let_it_finish else request.steps),
        STOP_ENV: "1" if request.stop else "0",
        TRACE_STEPS_ENV: str(request.trace_steps),
        TRACE_TOOL_ENV: request.tool,
    }
    if ERROR_FILE_ENV not in base_env:
        overrides[ERROR_FILE_ENV] = str(error_file)
    return overrides


def job_command(
    request: OwnJobRequest,
    directory: Path,
    base_env: Mapping[str, str],
    launch_env: Mapping[str, str] | None = None,
) -> LaunchCommand:
    """The launch of the user's command, with its log and diagnostics in `directory`/logs and
    the ranks' measurements in `directory`/ranks; `launch_env`: what torchscale's own launch
    sets on top of `base_env` (a sweep's torchrun, launcher.env), recorded as its overrides."""
    log_dir = directory / "logs"
    given = {**base_env, **(launch_env or {})}
    error_file = Path(given.get(ERROR_FILE_ENV) or log_dir / "error.json")
    overrides = job_overrides(request, directory / "ranks", given, error_file)
    env = {**given, **overrides}
    threads = env.get("OMP_NUM_THREADS", "")
    return LaunchCommand(
        argv=list(request.argv),
        env=env,
        env_overrides={**(launch_env or {}), **overrides},
        omp_num_threads=int(threads) if threads.isdigit() else 0,  # 0: the job's own choice
        nproc=0,  # the launch line decides; the ranks' files tell how many ran
        error_file=error_file,
        log_dir=log_dir,
    )


@dataclass(frozen=True)
class SweepLaunch:
    """How a sweep starts one job cell: at its world size, with its threads and device."""

    nproc: int
    device: Device
    omp_num_threads: int
    extra_env: Mapping[str, str]  # launcher.env


def sweep_command(
    job: JobLine,
    request: OwnJobRequest,
    how: SweepLaunch,
    directory: Path,
    base_env: Mapping[str, str],
) -> LaunchCommand:
    """A job cell's launch: a python line inside torchscale's own torchrun at the cell's
    size, as a cell is launched (its threads per rank, its visible GPUs, launcher.env); any
    other line run as given, {gpus} filled, with launcher.env; the probe's settings on top."""
    if not job.wrapped:
        return job_command(replace(request, argv=job.argv), directory, base_env, how.extra_env)
    interpreter, entry, script, args = job.python_parts()
    wrapper = torchrun_command(
        entry,
        args,
        nproc=how.nproc,
        device=how.device,
        log_dir=directory / "logs",
        base_env=base_env,
        omp_num_threads=how.omp_num_threads,
        extra_env=how.extra_env,
        python=interpreter,
        as_script=script,
    )
    inherited = child_environment(base_env, {})  # no other launch's RANK, MASTER_*, PET_*
    wrapped = replace(request, argv=tuple(wrapper.argv))
    return job_command(wrapped, directory, inherited, wrapper.env_overrides)


def redacted(env: Mapping[str, str]) -> dict[str, str]:
    """The environment as stored: a variable named like a secret (SECRET_WORDS) keeps its
    name, not its value."""
    return {k: REDACTED if _SECRET_NAME.search(k) else v for k, v in sorted(env.items())}
