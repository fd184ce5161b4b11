"""Nothing outside torchscale/rank/ loads torch when imported, directly or through another
module: a path says where code runs, and the host, the offline readers and the CLI must answer
without paying torch's seconds of import. Torch is imported inside the function that needs it.

One fresh interpreter checks every module: for each, a forked child imports it and reports
whether `torch` reached sys.modules and through which chain of imports; the parent then imports
the module itself (now known to be torch-free), so the next child starts warm."""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

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


# ------------------------------------------------------------- the same, read from the source
# What `import module` runs is read from the code instead of a fresh interpreter: the statements
# at module level and in class bodies (with the if/try/with blocks around them), not function
# bodies, `if TYPE_CHECKING:` or `if __name__ == "__main__":`. A module outside the roots (the
# standard library, an installed package) is a leaf named by its top-level package: what it
# imports in turn is not read, which the interpreter-based tests above still see.


@functools.cache
def _file_of(module: str, roots: tuple[Path, ...]) -> Path | None:
    for root in roots:
        base = root.joinpath(*module.split("."))
        for path in (base / "__init__.py", base.with_suffix(".py")):
            if path.is_file():
                return path
    return None


def _skipped_when_imported(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`) and `if __name__ == "__main__":`."""
    if isinstance(test, ast.Name | ast.Attribute):
        return (test.id if isinstance(test, ast.Name) else test.attr) == "TYPE_CHECKING"
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


_TRY = (ast.Try, getattr(ast, "TryStar", ast.Try))  # try/except* from Python 3.11


def _run_statements(body: Iterable[ast.stmt]) -> Iterable[ast.Import | ast.ImportFrom]:
    """The import statements that run when `body` (a module's or a class's) runs."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _skipped_when_imported(node.test):
                yield from _run_statements(node.body)
            yield from _run_statements(node.orelse)
        elif isinstance(node, _TRY):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse):
                yield from _run_statements(block)
            yield from _run_statements(node.finalbody)
        elif isinstance(node, ast.With | ast.AsyncWith | ast.For | ast.AsyncFor | ast.While):
            yield from _run_statements(node.body)
            yield from _run_statements(getattr(node, "orelse", []))
        elif isinstance(node, ast.ClassDef):
            yield from _run_statements(node.body)


_DEFINITION = ("def ", "async def ", "@")


def _without_functions(source: str) -> str:
    """`source` less its module-level functions (a decorator or `def` at column 0 up to the
    next statement at column 0): what the reading needs, parsed in a fraction of the time."""
    kept, skipping = [], False
    for line in source.splitlines():
        if line[:1] not in ("", " ", "\t", "#", ")", "]", "}"):
            skipping = line.startswith(_DEFINITION)
        if not skipping:
            kept.append(line)
    return "\n".join(kept) + "\n"


@functools.cache
def _imported_names(path: Path, module: str) -> tuple[str, ...]:
    """The absolute names the statements that run import (`from pkg import name`: pkg and
    pkg.name, which is a module or an attribute)."""
    source = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(_without_functions(source), filename=str(path))
    except SyntaxError:  # a string at column 0 inside a function: the whole file, then
        tree = ast.parse(source, filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: list[str] = []
    for node in _run_statements(tree.body):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
            continue
        if node.level:
            parts = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join(parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        if base == "__future__":
            continue
        names += [base, *(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")]
    return tuple(names)


def import_graph(
    modules: Iterable[str], roots: Sequence[Path] = (REPO_ROOT,)
) -> dict[str, list[str]]:
    """module -> what running it imports first-hand, for `modules` and every module of the
    roots they reach: a module of the roots by its name (its packages too: `import a.b.c` runs
    a and a.b first), any other by its top-level package."""
    where = tuple(roots)
    graph: dict[str, list[str]] = {}
    todo = deque(modules)
    while todo:
        module = todo.popleft()
        if module in graph:
            continue
        path = _file_of(module, where)
        if path is None:  # outside the roots: a leaf
            graph[module] = []
            continue
        found: list[str] = []
        parts = module.split(".")
        for name in [".".join(parts[:i]) for i in range(1, len(parts))] + list(
            _imported_names(path, module)
        ):
            if _file_of(name, where) is not None:
                found.append(name)
            elif _file_of(name.partition(".")[0], where) is None:
                found.append(name.partition(".")[0])  # outside: its top-level package
            # else an attribute of a module of the roots (`from pkg import function`)
        graph[module] = list(dict.fromkeys(n for n in found if n != module))
        todo.extend(graph[module])
    return graph


def import_chain(graph: Mapping[str, Sequence[str]], start: str, target: str) -> list[str] | None:
    """The shortest chain of imports by which running `start` imports `target`, or None."""
    came_from: dict[str, str | None] = {start: None}
    todo = deque([start])
    while todo:
        module = todo.popleft()
        if module == target:
            chain = [module]
            while (before := came_from[chain[-1]]) is not None:
                chain.append(before)
            return chain[::-1]
        for name in graph.get(module, ()):
            if name not in came_from:
                came_from[name] = module
                todo.append(name)
    return None


def reaching(graph: Mapping[str, Sequence[str]], target: str) -> set[str]:
    """Every module of `graph` whose running imports `target`, directly or through others."""
    importers: dict[str, set[str]] = {}
    for module, names in graph.items():
        for name in names:
            importers.setdefault(name, set()).add(module)
    found: set[str] = set()
    todo = deque([target])
    while todo:
        for module in importers.get(todo.popleft(), ()):
            if module not in found:
                found.add(module)
                todo.append(module)
    return found


def test_no_module_outside_rank_imports_torch_as_its_source_reads() -> None:
    """The check above without an interpreter per module: what each module's top runs, read
    from the source, never reaches torch (modules listed in TORCH_AT_IMPORT excepted)."""
    outside = _modules_outside_rank()
    worker = "torchscale.rank.worker.main"  # imports torch at its top: the reading sees it
    graph = import_graph([*outside, worker])
    assert import_chain(graph, worker, "torch") is not None
    loaders = reaching(graph, "torch")
    new = [
        " -> ".join(import_chain(graph, module, "torch") or [module])
        for module in outside
        if module in loaders and module not in TORCH_AT_IMPORT
    ]
    assert new == [], "importing these loads torch (import chain):\n" + "\n".join(new)


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


def test_the_source_reading_names_the_chain_and_skips_what_does_not_run(tmp_path: Path) -> None:
    """What runs at import is followed (a class body, a try block, a relative import); a
    function body, `if TYPE_CHECKING:` and `if __name__ == "__main__":` are not."""
    package = tmp_path / "probe_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "outer.py").write_text("from . import inner\n", encoding="utf-8")
    (package / "inner.py").write_text(
        "class Holder:\n    try:\n        import torch\n    except ImportError:\n        pass\n",
        encoding="utf-8",
    )
    (package / "lazy.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import torch\n"
        "def f():\n    import torch\n"
        "if __name__ == '__main__':\n    import torch\n",
        encoding="utf-8",
    )
    modules = ["probe_pkg.outer", "probe_pkg.lazy"]
    graph = import_graph(modules, roots=[tmp_path])
    assert import_chain(graph, "probe_pkg.outer", "torch") == [
        "probe_pkg.outer",
        "probe_pkg.inner",
        "torch",
    ]
    assert import_chain(graph, "probe_pkg.lazy", "torch") is None
    assert reaching(graph, "torch") == {"probe_pkg.outer", "probe_pkg.inner"}


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
