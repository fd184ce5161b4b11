"""A fast test starts no process: the fast tier is what every contributor runs first, and a
process (torchrun, a Python child, a tool's binary) costs seconds a test in-process does not.

Whatever starts a process goes through one of a few calls: `_posixsubprocess.fork_exec`
(multiprocessing's spawn; subprocess holds it as `_fork_exec`), `os.posix_spawn` and
`posix_spawnp` (subprocess's fast path), `os.fork` and `forkpty` (multiprocessing's fork) and
`os.system`. While a test not marked
`slow` sets up, runs or tears down, each of them is refused: the call raises, and as product code
may catch that (a fail-open path), the test's report is failed too, naming what it started and
from where. Outside a test (pytest-xdist's workers, the stop guard) nothing is watched.
"""

from __future__ import annotations

import _posixsubprocess
import os
import subprocess
import traceback
from collections.abc import Callable, Generator
from typing import Any

import pytest

WATCHED: dict[object, tuple[str, ...]] = {
    _posixsubprocess: ("fork_exec",),
    subprocess: ("_fork_exec",),  # its own name for fork_exec, bound when it was imported
    os: ("posix_spawn", "posix_spawnp", "fork", "forkpty", "system"),
}


class StartedAProcess(RuntimeError):
    """What a fast test gets back from a call that would start a process."""


class ProcessGuard:
    """Refuses process starts inside fast tests; registered by tests/conftest.py."""

    def __init__(self) -> None:
        self.test: str | None = None
        self.started: list[str] = []
        self.originals: list[tuple[object, str, Callable[..., Any]]] = []

    def install(self) -> None:
        for module, names in WATCHED.items():
            for name in names:
                original = getattr(module, name, None)
                if original is None:
                    continue
                self.originals.append((module, name, original))
                setattr(module, name, self._refusing(name, original))

    def uninstall(self) -> None:
        for module, name, original in self.originals:
            setattr(module, name, original)
        self.originals.clear()

    def _refusing(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if self.test is None:
                return original(*args, **kwargs)
            what = _what(name, args)
            where = "".join(traceback.format_stack(limit=8)[:-1])
            self.started.append(f"{what}\n{where}")
            raise StartedAProcess(f"a fast test started a process ({what}): mark it slow")

        return call

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        outcome = yield
        report = outcome.get_result()
        if self.started:
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid} is not marked slow and started {len(self.started)} "
                "process(es) in its " + call.when + ":\n\n" + "\n".join(self.started)
            )
            self.started = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        yield from self._watching(item)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        yield from self._watching(item)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, None, None]:
        # before another file's test (or none), the module's and session's fixtures end too:
        # a slow test's (a Slurm cluster, a sweep) may stop its processes then
        yield from self._watching(item, own=nextitem is not None and nextitem.path == item.path)

    def _watching(self, item: pytest.Item, own: bool = True) -> Generator[None, None, None]:
        self.test = None if item.get_closest_marker("slow") or not own else item.nodeid
        try:
            yield
        finally:
            self.test = None


def _what(name: str, args: tuple[Any, ...]) -> str:
    """The program a call would start, as far as its arguments say."""
    if (
        name in ("fork_exec", "_fork_exec")
        and args
        and isinstance(args[0], (list, tuple))
        and args[0]
    ):
        return " ".join(os.fsdecode(a) for a in args[0][:6])
    if name in ("posix_spawn", "posix_spawnp") and len(args) > 1:
        return " ".join(os.fsdecode(a) for a in list(args[1])[:6])
    if name == "system" and args:
        return str(args[0])
    return f"os.{name}()"
