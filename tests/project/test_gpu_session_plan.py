"""benchmarks/gpu_session.sh's dry run: the plan of the next lent GPU session, in the order it
runs, each step with its timeout, within the session's nine minutes; nothing run, nothing
written. What no GPU has run yet comes first: NVML's raw answers beside validate's verdict,
validate --level perf --json, the busy trace's sweep, ranks sharing the GPU with a straggler,
a user's script against itself bare, Nsight Systems."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.processes import REPO_ROOT

pytestmark = pytest.mark.slow  # it starts bash

SCRIPT = REPO_ROOT / "benchmarks" / "gpu_session.sh"
SESSION_S = 540  # the script's default: one call of the device tool, under its 10 minutes


def test_the_dry_run_prints_the_plan_of_the_untested_steps_first(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {"DRY_RUN": "1", "OUT": str(out), "PATH": "/usr/bin:/bin", "PYTHON": "python3"}
    done = subprocess.run(
        ["bash", str(SCRIPT)], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    plan = [
        re.match(r"^(\S+) \(timeout (\d+)s\): (.*)$", line) for line in done.stdout.splitlines()
    ]
    assert all(plan), done.stdout
    steps = [(m.group(1), int(m.group(2)), m.group(3)) for m in plan if m]
    assert [name for name, _, _ in steps] == [
        "nvml",
        "perf_json",
        "busy",
        "shared_ddp",
        "shared_fsdp",
        "shared_hybrid",
        "ownjob",
        "nsys",
    ]
    commands = {name: command for name, _, command in steps}
    assert "validate --level perf --json" in commands["perf_json"]
    assert "--ranks-per-gpu 2 --strategy fsdp" in commands["shared_fsdp"]
    assert "--inject-delay 1:backward:20" in commands["shared_hybrid"]
    assert "--tool nsys" in commands["nsys"]
    # every step at its timeout still ends inside the session's nine minutes
    assert sum(limit for _, limit, _ in steps) <= SESSION_S
    assert not out.exists() or not any(out.iterdir()), "a dry run writes nothing"
