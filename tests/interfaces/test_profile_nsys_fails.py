"""A failing profiler fails the command: with an nsys that answers
`--version` but fails its capture ("Agent launcher failed.", exit 1, as nsys does without a
usable TMPDIR or on a kernel it cannot trace), `torchscale profile --tool nsys` exits non-zero
and says the profiler's own line, and keeps what was written."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from torchscale.interfaces.cli.app import app
from torchscale.orchestration.launch import process
from torchscale.orchestration.launch.process import ProcessOutcome
from torchscale.orchestration.profiling import nsys

FAILING_NSYS = """#!/bin/sh
case "$1" in
  --version) echo 'NVIDIA Nsight Systems version 2022.4.2.1-df9881f' ;;
  *) echo 'Agent launcher failed.' >&2; exit 1 ;;
esac
"""


@pytest.mark.parametrize("found_by", ["TORCHSCALE_NSYS", "PATH"])
@pytest.mark.slow  # starts an nsys command
def test_a_failing_nsys_fails_the_profile_with_its_own_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found_by: str
) -> None:
    fake = tmp_path / "bin" / "nsys"
    fake.parent.mkdir()
    fake.write_text(FAILING_NSYS)
    fake.chmod(0o755)
    if found_by == "PATH":
        monkeypatch.delenv("TORCHSCALE_NSYS", raising=False)
        monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    else:
        monkeypatch.setenv("TORCHSCALE_NSYS", str(fake))
    argv = ["profile", "--tool", "nsys", "--gpus", "2", "--device", "cpu", "--steps", "4"]
    result = CliRunner().invoke(app, [*argv, "--profile-steps", "2", "-o", str(tmp_path / "r")])
    assert result.exit_code != 0, result.output
    assert "Agent launcher failed." in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("found_by", ["TORCHSCALE_NSYS", "PATH"])
def test_a_failing_nsys_capture_fails_the_profile_with_the_line_it_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found_by: str
) -> None:
    """The checks above, FAILING_NSYS answered in-process: its `--version` (nsys.py's
    subprocess.run) names a version, and its capture, the launch (launch.process.run_logged),
    logs its line and exits 1."""
    captures: list[list[str]] = []

    def version(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        assert argv[1:] == ["--version"], argv
        said = "NVIDIA Nsight Systems version 2022.4.2.1-df9881f\n"
        return subprocess.CompletedProcess(argv, 0, said, "")

    def capture(
        argv: Sequence[str], env: Mapping[str, str], log_path: Path, timeout_s: float, **_: Any
    ) -> ProcessOutcome:
        captures.append(list(argv))
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text("Agent launcher failed.\n", encoding="utf-8")
        return ProcessOutcome(1, False, 0.1, log_path)

    only_here = SimpleNamespace(run=version, TimeoutExpired=subprocess.TimeoutExpired)
    monkeypatch.setattr(nsys, "subprocess", only_here)
    monkeypatch.setattr(process, "run_logged", capture)
    test_a_failing_nsys_fails_the_profile_with_its_own_line(tmp_path, monkeypatch, found_by)
    assert [argv[:2] for argv in captures] == [[str(tmp_path / "bin" / "nsys"), "profile"]]
