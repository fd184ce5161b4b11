"""What a rank and the sweep import before they measure (a cell's fixed cost). Every
rank of every cell imports the worker's entry point; scipy.stats and pandas cost it 0.7 s of CPU
and 90 MiB there (docs/methodology.md, "Fixed cost per cell") and are needed only by
rank 0's aggregation, after the windows. The sweep's own process writes summary.csv (pandas)
but needs scipy only once a cell has finished. Each import runs in a fresh interpreter: in this
one, other tests have imported everything already."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import REPO_ROOT
from tests.project.test_torch_free import import_chain, import_graph

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


def test_the_source_reading_sees_an_import(tmp_path: Path) -> None:
    """Read from the source instead (tests/project/test_torch_free.py): a module whose top
    imports scipy.stats reaches scipy and not pandas."""
    (tmp_path / "probe_stats.py").write_text("import scipy.stats\n", encoding="utf-8")
    graph = import_graph(["probe_stats"], roots=[tmp_path])
    assert import_chain(graph, "probe_stats", "scipy") == ["probe_stats", "scipy"]
    assert import_chain(graph, "probe_stats", "pandas") is None


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


@pytest.mark.parametrize(
    ("module", "unwanted"),
    [
        ("torchscale.rank.worker.main", ("scipy", "pandas")),
        ("torchscale.orchestration.sweep", ("scipy",)),
    ],
)
def test_no_scipy_or_pandas_before_the_windows_as_the_source_reads(
    module: str, unwanted: tuple[str, ...]
) -> None:
    """The same, read from the source (tests/project/test_torch_free.py): what the module runs
    when imported reaches none of them, directly or through another module."""
    graph = import_graph([module])
    assert {name: import_chain(graph, module, name) for name in unwanted} == dict.fromkeys(unwanted)
