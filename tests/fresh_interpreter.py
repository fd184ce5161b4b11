"""A probe script run in a fresh interpreter, its last printed line read as JSON: the tests that
add a model, a launcher or a report section by patching one registry line do it there, so the
patch cannot leak into the rest of the suite."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.conftest import REPO_ROOT

PROBE_TIMEOUT_S = 600  # generous: a probe builds models and reports, on a machine at load 16


def run_probe(script: str, *args: str) -> Any:
    """What `python -c script *args` printed last, decoded; the probe's stderr on a failure."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
        timeout=PROBE_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])
