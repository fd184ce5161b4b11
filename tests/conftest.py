"""Shared test set-up: GPU tests skip where no CUDA GPU is visible; slow tests (marked `slow`
by test, parameter or module) run only with --runslow; the suite stops on Ctrl-C, SIGTERM or
SIGHUP and leaves no process running (tests/stop_guard.py); a test not marked slow starts no
process (tests/process_guard.py)."""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = REPO_ROOT.parent / "shared"
CACHE_HOME = pytest.StashKey[str]()  # the folder this process made, and removes at the end
CACHE_PREFIX = "torchscale-test-cache-"


def pytest_configure(config: pytest.Config) -> None:
    from tests.process_guard import ProcessGuard
    from tests.stop_guard import StopGuard

    # a terminal's size must not decide a test: pytest-xdist's workers set COLUMNS=80 and
    # LINES=24, a developer's shell may export them; a test that wants a width sets its own
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
    # what torchscale keeps between runs (the compile probe's PASS) stays inside the session:
    # a test starts from nothing the developer's own runs left, and leaves nothing behind.
    # pytest-xdist's workers inherit the controller's folder, as a user's runs share one: a
    # PASS one worker kept spares the other a cold compile (a test that needs one makes its own)
    inherited = Path(os.environ.get("XDG_CACHE_HOME", "")).name.startswith(CACHE_PREFIX)
    if not (os.environ.get("PYTEST_XDIST_WORKER") and inherited):
        config.stash[CACHE_HOME] = tempfile.mkdtemp(prefix=CACHE_PREFIX)
        os.environ["XDG_CACHE_HOME"] = config.stash[CACHE_HOME]

    if not config.pluginmanager.has_plugin("stop_guard"):
        config.pluginmanager.register(StopGuard(), "stop_guard")
    # platform.platform(), which a cell's environment records, runs `uname -p` the first time a
    # process asks: asked here, before any test, it is cached and no test starts it
    platform.platform()
    if not config.pluginmanager.has_plugin("process_guard"):
        guard = ProcessGuard()
        guard.install()
        config.pluginmanager.register(guard, "process_guard")


def pytest_unconfigure(config: pytest.Config) -> None:
    if CACHE_HOME in config.stash:
        shutil.rmtree(config.stash[CACHE_HOME], ignore_errors=True)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", help="also run tests marked slow")


def _cuda_gpus() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        return 0


def _run_slow(config: pytest.Config) -> bool:
    return bool(config.getoption("--runslow")) or os.environ.get("TORCHSCALE_RUN_SLOW") == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # slow tests are deselected, not skipped: a deselected test sets up none of its fixtures
    # (a module's real sweep included), and a hundred skip lines would bury the -ra summary
    if not _run_slow(config):
        # markers, not item.keywords: keywords also hold parameter ids such as "slow"
        slow = [item for item in items if item.get_closest_marker("slow")]
        if slow:
            items[:] = [item for item in items if not item.get_closest_marker("slow")]
            config.hook.pytest_deselected(items=slow)
    if any(item.nodeid.startswith("tests/rank/") for item in items):
        # torch's compiler takes 2-3 s to import, paid by whichever test first compiles or
        # builds an optimizer: paid here, once per worker, a test's time is its own
        import torch._dynamo  # noqa: F401
    gpus = None
    for item in items:
        if item.get_closest_marker("gpu"):
            if gpus is None:
                gpus = _cuda_gpus()
            if gpus == 0:
                item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # said on every run, as pytest-xdist's workers do not report what they deselected
    if not _run_slow(terminalreporter.config):
        terminalreporter.write_line(
            "slow tests (real torchrun runs, Slurm jobs, builds) were left out: "
            "--runslow runs them too, as CI does"
        )


@pytest.fixture()
def repo_root() -> Path:
    return REPO_ROOT
