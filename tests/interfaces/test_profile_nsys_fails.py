"""A failing profiler fails the command: with an nsys that answers
`--version` but fails its capture ("Agent launcher failed.", exit 1, as nsys does without a
usable TMPDIR or on a kernel it cannot trace), `torchscale profile --tool nsys` exits non-zero
and says the profiler's own line, and keeps what was written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from torchscale.interfaces.cli.app import app

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
