"""A real two-node Slurm for tests: the session fixture `slurm` and job helpers.

Tests that use the fixture carry the marker `slurm`, registered in pyproject.toml as:

    "slurm: needs a real Slurm cluster (the `slurm` fixture); skipped where none can start",

Use it in a test module with::

    from tests.slurm_cluster import slurm_cluster  # noqa: F401  (the `slurm` fixture)

    pytestmark = pytest.mark.slurm

    def test_something(slurm):
        slurm.run(["sinfo", "-h"])

The cluster (slurmctld, two slurmd for nodes n1 and n2 at 127.0.0.1, partition debug, munged)
comes from `.ci/slurm_cluster.sh`. The fixture uses the one named by TORCHSCALE_TEST_SLURM_DIR
(CI starts it) when that one answers; otherwise, when the Slurm and munge daemons are on PATH,
it starts its own under a temporary directory and stops it at the end of the session (and
checks that none of its processes is left); otherwise the test skips and says what to install.

Facts that tests submitting jobs need: jobs start within about 1 s of submission (backfill
every second); KillWait=5 (SIGTERM, then SIGKILL 5 s later, at a time limit or scancel);
finished jobs stay visible to `scontrol show job` for 10 min; no accounting, so no `sacct`;
node names n1/n2 do not resolve: use 127.0.0.1 for rendezvous.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SCRIPT = REPO_ROOT / ".ci" / "slurm_cluster.sh"
DIR_ENV = "TORCHSCALE_TEST_SLURM_DIR"
DAEMONS = ("slurmctld", "slurmd", "munged")
NO_SLURM = (
    "no Slurm: install slurmctld slurmd slurm-client munge (bash .ci/slurm_cluster.sh install)"
)
# states in which a node can take jobs (sinfo %T, lower case; a trailing * or ~ is stripped)
USABLE_NODE_STATES = {"idle", "mixed", "allocated", "completing"}


@dataclass
class SlurmCluster:
    """A running cluster: `dir` holds its files, `conf` its slurm.conf, `env` is os.environ
    with SLURM_CONF pointing at it (pass it to anything that runs Slurm commands)."""

    dir: Path
    conf: Path
    env: dict[str, str]
    owned: bool  # started by this fixture (and stopped by it)

    def run(
        self, argv: Sequence[str], timeout: float = 30.0, check: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command (squeue, sbatch, srun, ...) against this cluster: argv
        as a list, no shell, text output captured."""
        return subprocess.run(
            list(argv),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=check,
        )


def _cluster_env(conf: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["SLURM_CONF"] = str(conf)
    return env


def node_states(cluster: SlurmCluster) -> dict[str, str] | None:
    """{node: state} from sinfo, or None when the controller does not answer."""
    try:
        out = cluster.run(["sinfo", "-h", "-N", "-o", "%N %T"], timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    states = {}
    for line in out.stdout.splitlines():
        name, _, state = line.strip().partition(" ")
        if name:
            states[name] = state.strip().rstrip("*~#!%$@^-").lower()
    return states


def _healthy(cluster: SlurmCluster) -> bool:
    states = node_states(cluster)
    return (
        states is not None
        and len(states) == 2
        and all(state in USABLE_NODE_STATES for state in states.values())
    )


def _existing_cluster() -> SlurmCluster | None:
    raw = os.environ.get(DIR_ENV)
    if not raw:
        return None
    directory = Path(raw)
    conf = directory / "slurm.conf"
    if not conf.is_file():
        return None
    if not _controller_alive(directory):  # a quick no before sinfo's ~10 s of retries
        return None
    cluster = SlurmCluster(dir=directory, conf=conf, env=_cluster_env(conf), owned=False)
    return cluster if _healthy(cluster) else None


def _controller_alive(directory: Path) -> bool:
    """The slurmctld recorded in DIR/pids still runs (and is that cluster's)."""
    try:
        lines = (directory / "pids").read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        name, _, pid = line.partition(" ")
        if name != "slurmctld" or not pid.strip().isdigit():
            continue
        proc = Path("/proc") / pid.strip()
        try:
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (proc / "cmdline").read_bytes()
        except (OSError, IndexError):
            return False
        return state != "Z" and str(directory).encode() in cmdline
    return False


def _missing_daemons() -> list[str]:
    return [name for name in DAEMONS if shutil.which(name) is None]


def processes_of(directory: Path) -> list[tuple[int, str]]:
    """Live (not zombie) processes whose command line or environment names `directory`: the
    daemons (their arguments), slurmstepd (the marker variable the script gives the daemons)
    and job processes (SLURM_CONF, batch script paths)."""
    marker = str(directory).encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            if state == "Z":
                continue
            cmdline = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes()
        except (OSError, IndexError):
            continue
        if marker in cmdline or marker in environ:
            found.append((int(proc.name), cmdline.replace(b"\0", b" ").decode(errors="replace")))
    return found


def _stop(directory: Path) -> None:
    subprocess.run(
        ["bash", str(SCRIPT), "stop", str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


@pytest.fixture(scope="session", name="slurm")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A running two-node Slurm cluster (see the module docstring); skips when there is none."""
    existing = _existing_cluster()
    if existing is not None:
        yield existing
        return
    missing = _missing_daemons()
    if missing:
        pytest.skip(f"{NO_SLURM}; not on PATH: {', '.join(missing)}")
    directory = tmp_path_factory.mktemp("slurm")
    try:
        started = subprocess.run(
            ["bash", str(SCRIPT), "start", str(directory)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except subprocess.TimeoutExpired:
        _stop(directory)
        pytest.skip(f"Slurm cluster did not start within 120 s (logs: {directory / 'log'})")
    if started.returncode != 0:
        _stop(directory)
        why = _last_line(started.stderr) or f"exit status {started.returncode}"
        pytest.skip(f"Slurm cluster did not start: {why}")
    conf = directory / "slurm.conf"
    cluster = SlurmCluster(dir=directory, conf=conf, env=_cluster_env(conf), owned=True)
    try:
        yield cluster
    finally:
        _stop(directory)
        left = _wait_processes_gone(directory, grace_s=5.0)
        for pid, _ in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        assert not left, "Slurm test cluster left processes behind: " + "; ".join(
            f"{pid}: {cmdline}" for pid, cmdline in left
        )


def _wait_processes_gone(directory: Path, grace_s: float) -> list[tuple[int, str]]:
    deadline = time.monotonic() + grace_s
    while True:
        left = processes_of(directory)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


# --- jobs -----------------------------------------------------------------------------------


def live_job_ids(slurm: SlurmCluster) -> set[str]:
    """Ids of the jobs squeue lists (pending, running, completing, ...)."""
    out = slurm.run(["squeue", "-h", "-o", "%i"], timeout=10, check=True)
    return {line.strip() for line in out.stdout.splitlines() if line.strip()}


def wait_for_jobs_gone(
    slurm: SlurmCluster, job_ids: Iterable[str | int], timeout: float = 30.0
) -> None:
    """Wait until none of `job_ids` is in squeue any more (finished, failed, cancelled, timed
    out); raise TimeoutError naming those still there after `timeout` seconds."""
    wanted = {str(job_id) for job_id in job_ids}
    deadline = time.monotonic() + timeout
    while True:
        left = wanted & live_job_ids(slurm)
        if not left:
            return
        if time.monotonic() >= deadline:
            raise TimeoutError(f"Slurm jobs still queued after {timeout} s: {sorted(left)}")
        time.sleep(0.2)


def job_fields(slurm: SlurmCluster, job_id: str | int) -> dict[str, str]:
    """`scontrol show job -o JOB` as {field: value} (the first word of each value)."""
    out = slurm.run(["scontrol", "show", "job", "-o", str(job_id)], timeout=10, check=True)
    fields = {}
    for word in out.stdout.split():
        key, sep, value = word.partition("=")
        if sep and key not in fields:
            fields[key] = value
    return fields


def job_state(slurm: SlurmCluster, job_id: str | int) -> str:
    """The job's JobState= from `scontrol show job -o` (PENDING, RUNNING, COMPLETED, FAILED,
    CANCELLED, TIMEOUT, ...)."""
    state = job_fields(slurm, job_id).get("JobState")
    if state is None:
        raise ValueError(f"no JobState for Slurm job {job_id}")
    return state
