"""Real `torchscale profile -- torchrun ... SCRIPT` runs of a user's own script, for the e2e
tests of the own-job path (tests/e2e/test_own_job.py, test_own_job_frameworks.py).

The job runs a copy of the script from the test's own folder: that path, in the command line of
torchrun's agent and of every rank (and of a forked DataLoader worker), marks the job's
processes, so any left behind are found (tests/processes.py). Until `torchscale.rank.own_job`
and the `profile [options] -- COMMAND` form are both in the package, a run skips, saying which
is missing.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.processes import REPO_ROOT, cli, default_signals, kill_mentioning, processes_mentioning
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording import say
from torchscale.interfaces.cli.app import app
from torchscale.offline.results.documents import read_cell

EXAMPLES = REPO_ROOT / "examples" / "own_job"
TORCHRUN = Path(sys.executable).with_name("torchrun")
RANKS = 2
TIMEOUT_S = 300


def missing() -> str | None:
    """Why the own-job path cannot run here yet (None: it can)."""
    try:
        importlib.import_module("torchscale.rank.own_job")
    except ImportError as exc:
        return f"torchscale.rank.own_job is not in the package yet ({exc})"
    shown = CliRunner().invoke(app, ["profile", "--help"], env={"COLUMNS": "200"})
    if "--warmup-steps" not in shown.output:
        return "`torchscale profile --warmup-steps W --steps N -- COMMAND` is not in the CLI yet"
    return None


@dataclass(frozen=True)
class OwnRun:
    root: Path  # the -o folder
    warmup: int
    steps: int
    returncode: int
    stdout: str  # torchscale's own answer
    stderr: str
    leftovers: list[str]  # 'pid: command line' of the job's processes alive after the run
    job: Path  # the folder the job ran in (its copy of the script, its own outputs)

    def said(self) -> str:
        return f"exit {self.returncode}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def profile_job(
    folder: Path,
    script: Path,
    warmup: int,
    steps: int,
    *script_args: str,
    env: Mapping[str, str] | None = None,
    launcher: Sequence[str | Path] = (TORCHRUN, "--nproc-per-node", str(RANKS)),
    profile_steps: int | None = None,
) -> OwnRun:
    """`torchscale profile --warmup-steps W --steps N -o OUT -- LAUNCHER COPY ARGS` (by
    default `torchrun --nproc-per-node 2`), run in `folder`/job (the job's own outputs land
    there), with `env` added; `profile_steps`: `--profile-steps K` (None: the default window,
    traced after the measured steps; 0 where a test's point is not the trace: CI time)."""
    if (why := missing()) is not None:
        pytest.skip(why)
    job = folder / "job"
    job.mkdir()
    copy = job / script.name  # the marker: this path is in every job process' command line
    shutil.copy(script, copy)
    root = folder / "out"
    argv = cli(
        "profile", "--warmup-steps", str(warmup), "--steps", str(steps), "-o", root,
        *(["--profile-steps", str(profile_steps)] if profile_steps is not None else []), "--",
        *launcher, copy, *script_args,
    )  # fmt: skip
    full_env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "80", **(env or {})}
    proc = subprocess.Popen(
        argv,
        env=full_env,
        cwd=job,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=default_signals,
    )
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        kill_mentioning(str(copy))  # ranks in sessions of their own may hold the pipes
        out, err = proc.communicate(timeout=30)
        pytest.fail(f"no end in {TIMEOUT_S} s\n{out.decode()}\n{err.decode()}")
    try:
        leftovers = processes_mentioning(str(copy))
    finally:
        kill_mentioning(str(copy))
    return OwnRun(root, warmup, steps, proc.returncode, out.decode(), err.decode(), leftovers, job)


def stored_result(run: OwnRun) -> CellResult:
    """The run's one stored result (result.json, wherever the run's folder puts it)."""
    found = sorted(run.root.rglob("result.json")) or sorted(run.root.rglob("cells/*.json"))
    assert len(found) == 1, f"{found}\n{run.said()}"
    read = read_cell(found[0])
    assert read.doc is not None, read.problem
    return read.doc


def unwrapped(text: str) -> str:
    """The lines as printed before an 80-column terminal cut them, whitespace collapsed."""
    return " ".join(text.replace("\n>   ", " ").split())


def rank_files(run: OwnRun) -> Path:
    found = sorted(run.root.rglob("rank0.measurement.json"))
    files = sorted(str(p.relative_to(run.root)) for p in run.root.rglob("*") if p.is_file())
    assert len(found) == 1, f"one folder of the ranks' measurements: {found}\n{files}"
    return found[0].parent


def text_files(root: Path) -> Iterator[tuple[Path, str]]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix not in {".gz", ".png", ".pdf"}:
            with contextlib.suppress(OSError, UnicodeDecodeError):
                yield path, path.read_text(encoding="utf-8")


def assert_straggler_on_every_surface(run: OwnRun, rank: int, kind: str, report: Path) -> None:
    """The straggler named as `rank`, `kind` on the terminal, in result.json and in
    `report -f md` (written under `report`)."""
    assert run.returncode == 0, run.said()
    result = stored_result(run)
    assert result.diagnosis is not None, run.said()
    verdict = result.diagnosis.straggler
    assert verdict is not None, run.said()
    line = verdict_words.straggler_text(verdict, RANKS)
    assert verdict.named and verdict.rank == rank, line
    rule = say(verdict.kind_rule) if verdict.kind_rule is not None else None
    assert verdict.kind == kind, f"{line} ({rule})"
    assert line.startswith(f"Straggler: rank {rank}, {kind}"), line
    assert line in unwrapped(run.stdout), run.said()
    shown = CliRunner().invoke(app, ["report", "-s", str(run.root), "-f", "md", "-o", str(report)])
    assert shown.exit_code == 0, shown.output
    (md,) = sorted(report.rglob("*.md"))
    text = " ".join(md.read_text(encoding="utf-8").replace("\\[", "[").replace("\\]", "]").split())
    assert line in text
