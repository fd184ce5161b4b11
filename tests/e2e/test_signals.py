"""Stopping a sweep: Ctrl-C, SIGTERM and SIGHUP keep finished results, take the running cell's
processes down and exit 128 + the signal; SIGKILL of the sweep (no clean-up possible) still
leaves no torchrun or rank behind (parent-death signals).

Signals are sent to real processes only: a test never signals itself. The CLI is started in a
session of its own with SIGINT/SIGTERM/SIGHUP reset to their defaults (tests/processes.py), so
the result does not depend on how pytest was started (a background job ignores SIGINT, nohup
ignores SIGHUP). One sweep runs a healthy cell then a hanging one and is interrupted; the other
stops copy its results and `--resume`, so only the hanging cell is launched again.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import typer

from tests.processes import (
    REPO_ROOT,
    cli,
    default_signals,
    processes_mentioning,
    scan_processes,
    start,
    stop,
    wait_for,
)
from torchscale.contracts.signals import Terminated, signal_name, terminate_on_signals
from torchscale.interfaces.cli import common
from torchscale.interfaces.cli.common import EXIT_INTERRUPTED, handle_errors, terminated_in_chain
from torchscale.orchestration.launch.process import run_logged

FAULT_ENV = {"PYTHONPATH": str(REPO_ROOT)}
CONFIG = {
    "experiment_name": "stopped",
    "device": "cpu",
    "models": [
        "tests.fault_models:healthy",
        {"name": "tests.fault_models:hang", "options": {"on_rank": 0}},
    ],
    "batch_sizes": [4],
    "gpu_counts": [1],
    "measurement": {"warmup_steps": 1, "steps": 2, "repeats": 1},
    "launcher": {"env": FAULT_ENV, "cell_timeout_s": 600},
}

# ============================================================================ signals.py


def test_terminated_is_not_an_exception() -> None:
    """`except Exception` in library code must not swallow a request to stop."""
    stop_request = Terminated(signal.SIGTERM)
    assert not isinstance(stop_request, Exception)
    assert isinstance(stop_request, BaseException)
    assert stop_request.signum == signal.SIGTERM
    assert stop_request.name == "SIGTERM"
    assert stop_request.exit_code == 143
    assert Terminated(signal.SIGHUP).exit_code == 129
    assert str(stop_request) == "stopped by SIGTERM"
    assert signal_name(99) == "signal 99"


@pytest.fixture()
def default_dispositions() -> Iterator[None]:
    """SIGTERM and SIGHUP at their defaults for the test, whatever pytest inherited (nohup
    ignores SIGHUP); nothing is sent, so the defaults never act."""
    old = {s: signal.signal(s, signal.SIG_DFL) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for signum, handler in old.items():
            signal.signal(signum, handler)


@pytest.mark.usefixtures("default_dispositions")
def test_handlers_are_installed_and_restored() -> None:
    with terminate_on_signals():
        for signum in (signal.SIGTERM, signal.SIGHUP):
            assert callable(signal.getsignal(signum))
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL


def test_an_ignored_signal_stays_ignored() -> None:
    """nohup ignores SIGHUP: a sweep started under it must not die of a closed terminal."""
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with terminate_on_signals():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, old)


def test_outside_the_main_thread_nothing_is_installed() -> None:
    before = signal.getsignal(signal.SIGTERM)
    seen: list[object] = []

    def body() -> None:
        with terminate_on_signals():
            seen.append(signal.getsignal(signal.SIGTERM))

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert seen == [before]


RAISER = """\
import os, signal, sys, time
from torchscale.contracts.signals import Terminated, terminate_on_signals

signum = int(sys.argv[1])
try:
    with terminate_on_signals():
        try:
            os.kill(os.getpid(), signum)
            time.sleep(5)
            print("not raised")
        except Terminated as exc:
            os.kill(os.getpid(), signum)  # a repeat while unwinding is ignored
            time.sleep(0.2)
            print("raised", exc.signum, exc.exit_code)
except Terminated:
    print("raised twice")
print("restored", signal.getsignal(signum) == signal.SIG_DFL)
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.slow  # starts a child process
def test_a_terminating_signal_raises_once(signum: int) -> None:
    run = subprocess.run(
        [sys.executable, "-c", RAISER, str(int(signum))],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        preexec_fn=default_signals,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:2] == [f"raised {int(signum)} {128 + signum}", "restored True"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.usefixtures("default_dispositions")
def test_the_installed_handler_raises_once(signum: int) -> None:
    """The same without a signal sent: the handler terminate_on_signals installed, called as
    Python calls it, raises Terminated; called again while that unwinds, it returns; the
    default is back after the block."""
    repeated: list[object] = []
    with pytest.raises(Terminated) as raised, terminate_on_signals():
        handler = signal.getsignal(signum)
        assert callable(handler)
        try:
            handler(signum, None)
        finally:
            repeated.append(handler(signum, None))  # a repeat while unwinding: ignored
    assert (raised.value.signum, raised.value.exit_code) == (signum, 128 + signum)
    assert repeated == [None]
    assert signal.getsignal(signum) == signal.SIG_DFL


# =========================================================================== handle_errors


@pytest.mark.parametrize(
    ("raised", "code", "message"),
    [
        (Terminated(signal.SIGTERM), 143, "stopped by SIGTERM; finished results are kept"),
        (Terminated(signal.SIGHUP), 129, "stopped by SIGHUP; finished results are kept"),
        (KeyboardInterrupt(), EXIT_INTERRUPTED, "interrupted"),
    ],
)
def test_handle_errors_turns_a_stop_into_its_exit_code(
    raised: BaseException, code: int, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    @handle_errors
    def command() -> None:
        raise raised

    with pytest.raises(typer.Exit) as exit_info:
        command()
    assert exit_info.value.exit_code == code
    assert message in capsys.readouterr().err


def raise_terminated_then_eio() -> None:
    """A SIGHUP from a closed terminal, then clean-up writing to that terminal (rich's
    transient progress display leaving the screen) while the stop unwinds."""
    try:
        raise Terminated(signal.SIGHUP)
    finally:
        raise OSError(errno.EIO, "Input/output error")


def test_a_dead_terminal_during_clean_up_is_still_the_stop(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(typer.Exit) as exit_info:
        handle_errors(raise_terminated_then_eio)()
    assert exit_info.value.exit_code == 129
    assert "stopped by SIGHUP; finished results are kept" in capsys.readouterr().err


def test_the_stop_keeps_its_exit_code_when_its_message_cannot_be_printed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def dead_tty(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(common.stderr, "print", dead_tty)
    with pytest.raises(typer.Exit) as exit_info:
        handle_errors(raise_terminated_then_eio)()
    assert exit_info.value.exit_code == 129


def test_an_os_error_without_a_stop_keeps_its_traceback() -> None:
    def broken() -> None:
        try:
            raise ValueError("unrelated")
        except ValueError as exc:
            raise OSError(errno.EIO, "Input/output error") from exc

    with pytest.raises(OSError, match="Input/output error"):
        handle_errors(broken)()


def test_the_stop_is_found_however_deep_and_through_a_cause() -> None:
    stop = Terminated(signal.SIGTERM)
    middle = RuntimeError("clean-up failed")
    middle.__context__ = stop
    outer = OSError(errno.EIO, "Input/output error")
    outer.__cause__ = middle
    assert terminated_in_chain(outer) is stop
    looped = OSError("a cycle")
    looped.__context__ = looped
    assert terminated_in_chain(looped) is None


@pytest.mark.usefixtures("default_dispositions")
def test_handle_errors_installs_the_handlers_only_while_the_command_runs() -> None:
    during: list[object] = []

    @handle_errors
    def command() -> int:
        during.append(signal.getsignal(signal.SIGTERM))
        return 7

    assert command() == 7
    assert len(during) == 1
    assert callable(during[0])
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


# ==================================================================== parent-death signal

IMPORT_PROBE = """\
import sys
events = []
watched = {"subprocess.Popen", "os.posix_spawn", "os.fork", "os.exec", "ctypes.dlopen"}
sys.addaudithook(lambda event, args: events.append(event) if event in watched else None)
import torchscale.interfaces.cli.common
from torchscale.contracts import signals
print(events)
print(signals.parent_death_signal_supported())
loaded = list(events)
for _ in range(3):
    signals.set_parent_death_signal(0)
    signals.die_with_parent(signals.os.getppid(), 0)
print(loaded, events == loaded)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
@pytest.mark.slow  # starts a child process
def test_importing_the_cli_starts_no_process_and_prctl_is_resolved_once() -> None:
    """Every CLI start (even --help) and every rank imports torchscale.contracts.signals: it must
    not run `ldconfig -p` (ctypes.util.find_library) to find libc, nor load anything until
    asked; asked, it loads once, and later calls (a preexec_fn in a forked child) only call."""
    run = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        check=True,
    )
    imported, supported, resolved = run.stdout.splitlines()
    assert imported == "[]"  # no process, no library loaded
    assert supported == "True"
    assert "dlopen" in resolved  # ctypes itself loads the interpreter's symbols: one or two
    assert "Popen" not in resolved and "spawn" not in resolved and "fork" not in resolved
    assert resolved.endswith("] True")  # nothing more after the first use


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
def test_prctl_is_resolved_without_starting_a_process() -> None:
    """The same lookup in this process, from scratch: libc's prctl found without a process
    (ctypes.util.find_library would run `ldconfig -p`: this tier refuses it) and kept for
    the calls after."""
    from torchscale.contracts import signals

    signals._prctl.cache_clear()
    assert signals.parent_death_signal_supported()
    found = signals._prctl()
    assert callable(found) and signals._prctl() is found


SUPERVISOR = """\
import os, sys
from pathlib import Path
from torchscale.orchestration.launch.process import run_logged

marker = sys.argv[1]
child = [sys.executable, "-c", "import time; time.sleep(120)", marker + "-sleeping"]
run_logged(child, dict(os.environ), Path(marker + ".log"), 600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
@pytest.mark.slow  # starts a child process
def test_a_launched_command_dies_with_a_sigkilled_parent(tmp_path: Path) -> None:
    """run_logged's child is in its own session: only the parent-death signal can reach it
    when the parent is SIGKILLed and cleans up nothing."""
    marker = str(tmp_path / "child")
    parent = start([sys.executable, "-c", SUPERVISOR, marker], tmp_path / "parent.log")
    try:
        sleeping = marker + "-sleeping"  # only in the child's argv, once it has exec'd
        assert wait_for(lambda: len(scan_processes(sleeping)) == 1, 30), (
            tmp_path / "parent.log"
        ).read_text()
        ((child, _),) = scan_processes(sleeping)
        assert os.getsid(child) != os.getsid(parent.pid)  # out of reach of the parent's group
        parent.kill()
        parent.wait(timeout=10)
        assert processes_mentioning(marker) == []
    finally:
        stop(parent, marker)


@pytest.mark.slow  # starts a launched command
def test_run_logged_still_runs_commands(tmp_path: Path) -> None:
    """The preexec_fn must not get in the way of an ordinary run."""
    outcome = run_logged(
        [sys.executable, "-c", "import os; print(os.getsid(0) == os.getpid())"],
        dict(os.environ),
        tmp_path / "out.log",
        30,
    )
    assert outcome.returncode == 0
    assert outcome.log_path.read_text().strip() == "True"


# ========================================================================= stopping a sweep


@dataclass
class Stopped:
    returncode: int | None
    output: str
    exp_dir: Path
    running_before: list[str]  # the hanging cell's processes when the signal was sent
    leftovers: list[str]


def hang_started(exp_dir: Path) -> bool:
    """The hanging cell's rank registered: torchrun and the rank are up."""
    return any((exp_dir / "logs").glob("tests.fault_models_hang*/diagnostics/rank0.pid"))


def stop_sweep(tmp: Path, signum: int, *flags: str) -> Stopped:
    """Run the sweep in tmp/results (with `flags`), send `signum` once the hanging cell runs."""
    config = tmp / "stopped.yaml"
    config.write_text(json.dumps(CONFIG))
    exp_dir = tmp / "results" / "stopped"
    proc = start(cli("benchmark", "-c", config, "-o", tmp / "results", *flags), tmp / "out.log")
    try:
        started = wait_for(lambda: hang_started(exp_dir) or proc.poll() is not None, 180)
        assert started and proc.poll() is None, (tmp / "out.log").read_text()
        running = processes_mentioning(str(exp_dir), grace_s=0)
        if signum == signal.SIGKILL:
            proc.kill()  # the sweep only: what it started must go by itself
        else:
            os.killpg(proc.pid, signum)  # as a terminal sends SIGINT/SIGHUP to its job
        proc.wait(timeout=60)
        leftovers = processes_mentioning(str(exp_dir), grace_s=10)
    finally:
        stop(proc, str(exp_dir))
    output = (tmp / "out.log").read_text()
    return Stopped(proc.returncode, output, exp_dir, running, leftovers)


def resumed(first: Stopped, tmp: Path, signum: int) -> Stopped:
    """The first sweep's results copied (logs left out: a stale pid file would look like a
    started cell), run again with --resume: the healthy cell is reused, the hang relaunched."""
    shutil.copytree(
        first.exp_dir, tmp / "results" / "stopped", ignore=shutil.ignore_patterns("logs")
    )
    return stop_sweep(tmp, signum, "--resume")


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> Stopped:
    """Ctrl-C while the second (hanging) cell runs."""
    return stop_sweep(tmp_path_factory.mktemp("sigint"), signal.SIGINT)


def cell_statuses(exp_dir: Path) -> dict[str, str]:
    cells = {}
    for path in sorted((exp_dir / "cells").glob("*.json")):
        cells[path.stem] = json.loads(path.read_text())["status"]
    return cells


def assert_stopped_cleanly(stopped: Stopped, code: int, message: str) -> None:
    assert stopped.returncode == code, stopped.output
    assert message in stopped.output
    assert "Traceback" not in stopped.output
    assert stopped.running_before  # the check below is not vacuous
    assert stopped.leftovers == []
    statuses = cell_statuses(stopped.exp_dir)
    assert list(statuses.values()) == ["ok"], statuses  # the finished cell; none for the hang
    (healthy,) = statuses
    assert healthy.startswith("tests.fault_models_healthy")
    summary = pd.read_csv(stopped.exp_dir / "summary.csv")
    assert list(summary["status"]) == ["ok"]


@pytest.mark.slow  # a real sweep, stopped mid-cell
def test_ctrl_c_keeps_finished_results_and_exits_130(interrupted: Stopped) -> None:
    # the line names what the stop cut short: the hanging cell, second of two
    assert_stopped_cleanly(interrupted, 130, "interrupted during cell 2 of 2 (")


@pytest.mark.slow  # a real sweep, stopped mid-cell
@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)], ids=["term", "hup"]
)
def test_sigterm_and_sighup_stop_like_ctrl_c(
    interrupted: Stopped, tmp_path: Path, signum: int, code: int
) -> None:
    stopped = resumed(interrupted, tmp_path, signum)
    name = signal.Signals(signum).name
    assert_stopped_cleanly(stopped, code, f"stopped by {name} during cell 2 of 2 (")
    assert "; finished results are kept" in stopped.output


@pytest.mark.slow  # a real sweep, stopped mid-cell
def test_a_sigkilled_sweep_leaves_no_torchrun_or_rank(interrupted: Stopped, tmp_path: Path) -> None:
    stopped = resumed(interrupted, tmp_path, signal.SIGKILL)
    assert stopped.returncode == -signal.SIGKILL
    assert any("torch.distributed.run" in p for p in stopped.running_before)
    assert any("torchscale.rank.worker.main" in p for p in stopped.running_before)
    assert stopped.leftovers == []
