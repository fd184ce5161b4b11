"""Nothing outside torchscale/rank/ loads torch when imported, directly or through another
module: a path says where code runs, and the host, the offline readers and the CLI must answer
without paying torch's seconds of import. Torch is imported inside the function that needs it.

One fresh interpreter checks every module: for each, a forked child imports it and reports
whether `torch` reached sys.modules and through which chain of imports; the parent then imports
the module itself (now known to be torch-free), so the next child starts warm."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "torchscale"
# module outside rank/ -> why it may load torch at import time (the goal: empty)
TORCH_AT_IMPORT: dict[str, str] = {}
# the rank/ modules that code outside rank/ imports (anywhere in a module) -> why; the list
# must match the code exactly: what is pure belongs in contracts/, offline/ or orchestration/
RANK_IMPORTED_BY_HOST: dict[str, str] = {
    "torchscale.rank.data.prepare": "the host makes the dataset once with the ranks' own shard"
    " writer and CIFAR reader (shards.py, cifar100.py), so the two cannot drift",
    "torchscale.rank.models": "auto_batch builds the model on the meta device (torch, in the"
    " function)",
    "torchscale.rank.models.activation_count": "auto_batch counts saved activations on the meta"
    " device (torch, in the function)",
    "torchscale.rank.strategy_layouts": "the plan judges a layout on the model built on the meta"
    " device (model_problem: torch, in the function)",
    "torchscale.rank.own_job": "`profile -- COMMAND` sets the probe's carrier and settings in the"
    " job's environment as the probe spells them, and reads its files with the probe's reader"
    " (nothing heavy at import: it runs in every process of the job)",
    "torchscale.rank.own_job.reading": "the same: its files' steps cut into the blocks the"
    " aggregation reads as repeats (in_blocks), a sweep's relaunches joined as repeats"
    " (relaunched; both in the function)",
    "torchscale.rank.worker.aggregate": "`profile -- COMMAND` combines a user's own job's ranks"
    " with the worker's own aggregation, so the judge cannot tell it from a cell (orchestration/"
    "own_job/run.py, in the function; CellFacts for its facts, in the function)",
    "torchscale.rank.worker.measure": "the same: RankMeasurement, the probe's files as read (type"
    " hints only)",
    "torchscale.rank.worker.fixed_costs": "the same: a user's job's start-up as a cell's fixed"
    " costs (RankFixedCosts, in the function)",
    "torchscale.rank.worker.markers": "nsys asks which NVTX backend a rank would use (torch, in"
    " the function)",
    "torchscale.rank.worker.run_environment": "a run's env.json records torch, CUDA and the GPUs"
    " as the ranks see them (torch, in the function)",
}

_PROBE = r"""
import importlib, inspect, json, os, sys

class _Watch:
    # meets the first import of torch and notes the modules that were executing at the time
    chain = None

    def find_spec(self, name, path=None, target=None):
        if _Watch.chain is None and (name == "torch" or name.startswith("torch.")):
            names = []
            for info in reversed(inspect.stack(0)):
                module = info.frame.f_globals.get("__name__", "")
                if module.startswith("importlib") or module in ("", "__main__"):
                    continue
                if not names or names[-1] != module:
                    names.append(module)
            _Watch.chain = [*names, name]
        return None

found = {}
for module in sys.argv[1:]:
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        sys.meta_path.insert(0, _Watch())
        try:
            importlib.import_module(module)
            answer = _Watch.chain if "torch" in sys.modules else None
        except BaseException as exc:
            answer = f"import failed: {exc!r}"
        os.write(write, json.dumps(answer).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        answer = json.loads(pipe.read() or b'"child died"')
    os.waitpid(child, 0)
    if answer is None:
        importlib.import_module(module)
    else:
        found[module] = answer
print(json.dumps(found))
"""


def _modules_outside_rank() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if parts[:2] != ["torchscale", "rank"]:
            names.append(".".join(parts))
    return names


def _torch_loaders() -> dict[str, list[str] | str]:
    """Module -> the import chain that loaded torch (or why the import failed)."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *_modules_outside_rank()],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow  # starts a child process
def test_nothing_outside_rank_loads_torch_at_import() -> None:
    found = _torch_loaders()
    new = [
        f"{module}: {chain if isinstance(chain, str) else ' -> '.join(chain)}"
        for module, chain in found.items()
        if module not in TORCH_AT_IMPORT
    ]
    assert new == [], "importing these loads torch (module: import chain):\n" + "\n".join(new)
    assert sorted(set(TORCH_AT_IMPORT) - set(found)) == [], "paid: remove these entries"


@pytest.mark.slow  # starts a child command
def test_the_probe_names_the_chain(tmp_path) -> None:
    # a module that imports torch through another one is caught, with both named
    (tmp_path / "probe_outer.py").write_text("import probe_inner\n", encoding="utf-8")
    (tmp_path / "probe_inner.py").write_text("import torch\n", encoding="utf-8")
    (tmp_path / "probe_clean.py").write_text("import json\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, "probe_clean", "probe_outer"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path)},
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert list(found) == ["probe_outer"]
    assert found["probe_outer"][:3] == ["probe_outer", "probe_inner", "torch"]


def _rank_imports(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        found.update(n for n in names if n.startswith("torchscale.rank"))
    return found


def test_host_code_imports_only_the_listed_rank_modules() -> None:
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "rank":
            continue
        for module in _rank_imports(ast.parse(path.read_text(encoding="utf-8"))):
            found.setdefault(module, []).append(str(path.relative_to(REPO_ROOT)))
    new = {m: where for m, where in found.items() if m not in RANK_IMPORTED_BY_HOST}
    assert new == {}, "host code imports rank/ (move what is pure below rank/, or list it)"
    assert sorted(set(RANK_IMPORTED_BY_HOST) - set(found)) == [], "paid: remove these entries"
