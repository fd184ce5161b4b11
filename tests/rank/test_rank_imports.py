"""What a rank and the sweep import before they measure (a cell's fixed cost). Every
rank of every cell imports the worker's entry point; scipy.stats and pandas cost it 0.7 s of CPU
and 90 MiB there (docs/methodology.md, "Fixed cost per cell") and are needed only by
rank 0's aggregation, after the windows. The sweep's own process writes summary.csv (pandas)
but needs scipy only once a cell has finished. Each import runs in a fresh interpreter: in this
one, other tests have imported everything already."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.processes import REPO_ROOT

_PROBE = """\
import sys
import {module}
print(",".join(m for m in {watch!r} if m in sys.modules) or "-")
"""


def loaded(module: str, watch: tuple[str, ...]) -> str:
    """The `watch` modules a fresh interpreter holds after `import module`, or '-'."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(module=module, watch=watch)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.slow  # starts a child process
def test_the_probe_sees_an_import() -> None:
    assert loaded("scipy.stats", ("scipy", "pandas")) == "scipy"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "unwanted"),
    [
        ("torchscale.rank.worker.main", ("scipy", "pandas")),  # every rank of every cell
        ("torchscale.orchestration.sweep", ("scipy",)),  # the sweep's own process
    ],
)
def test_no_scipy_or_pandas_before_the_windows(module: str, unwanted: tuple[str, ...]) -> None:
    assert loaded(module, unwanted) == "-"
