"""The fast tier's rule, that a test not marked slow starts no process, holds because
tests/process_guard.py refuses the start and fails the test; here it is shown to."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from tests.process_guard import ProcessGuard, StartedAProcess


def test_a_process_a_fast_test_starts_is_refused_and_named() -> None:
    guard = ProcessGuard()
    guard.install()  # over the session's own guard, which it therefore never reaches
    try:
        guard.test = "tests/x.py::test_y"
        with pytest.raises(StartedAProcess, match="mark it slow"):
            subprocess.run([sys.executable, "-c", "pass"], check=False)
        with pytest.raises(StartedAProcess):
            os.system("true")
        assert len(guard.started) == 2
        assert guard.started[0].startswith(f"{sys.executable} -c pass")
        assert guard.started[1].startswith("true")
    finally:
        guard.uninstall()
    assert not guard.originals


def test_a_start_the_code_caught_still_fails_the_test() -> None:
    """Product code may swallow the refusal (a fail-open path): the report is failed anyway."""
    guard = ProcessGuard()
    guard.started = ["nsys --version\n  File ..."]
    report = SimpleNamespace(outcome="passed", longrepr=None)
    hook: Any = guard.pytest_runtest_makereport(
        SimpleNamespace(nodeid="tests/x.py::test_y"),  # type: ignore[arg-type]
        SimpleNamespace(when="call"),  # type: ignore[arg-type]
    )
    next(hook)
    with pytest.raises(StopIteration):
        hook.send(SimpleNamespace(get_result=lambda: report))
    assert report.outcome == "failed"
    assert "is not marked slow and started 1 process(es) in its call" in report.longrepr
    assert "nsys --version" in report.longrepr
    assert guard.started == []
