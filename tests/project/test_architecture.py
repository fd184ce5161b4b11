"""The layers of docs/architecture.md, enforced: every import inside `torchscale/` (module level,
inside functions and under TYPE_CHECKING alike: a hidden import is still a dependency) points
down the layers or stays in its layer, and no packages or files import each other in a loop.
A module's layer is the first component of its path under `torchscale/`: the top level holds
only the layer packages and the entry points.

What does not hold yet is listed below with why. The lists must match
the code exactly: a new upward import or loop fails, and so does an entry that no longer exists
(the debt only shrinks: delete the entry with the import that paid it).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "torchscale"

# the top level of torchscale/ is the layers: a module's layer is its first path component
# (docs/architecture.md): a package per layer, and the entry points beside them
LAYERS: dict[str, int] = {
    # 1 contracts and utilities: what every process role shares
    "contracts": 1,
    # 2 rank side (inside every torchrun rank) and offline side (traces, analysis, results),
    # beside each other
    "rank": 2,
    "offline": 2,
    # 3 host orchestration: the parent process that plans, launches and collects
    "orchestration": 3,
    # 4 presentation and entry points: the CLI, the library API and the report; at the top
    # level `python -m torchscale` and the public imports `torchscale.api` and
    # `torchscale.results` (each only re-exports from the layer that holds the code)
    "interfaces": 4,
    "__main__": 4,
    "api": 4,
    "results": 4,
}
LAYER_NAMES = {
    1: "contracts",
    2: "rank side and offline",
    3: "orchestration",
    4: "presentation and entry points",
}

# (importing unit, imported unit) -> why it still runs upward
UPWARD_DEBT: dict[tuple[str, str], str] = {}
# package loops (sorted units or subunits) -> why
PACKAGE_LOOP_DEBT: dict[tuple[str, ...], str] = {}
# file loops (sorted modules) -> why
FILE_LOOP_DEBT: dict[tuple[str, ...], str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, module: str, known: set[str] | None = None) -> set[str]:
    """Every torchscale module `path` imports, wherever the import statement stands.
    `from pkg import name`: the module pkg.name where `known` has it (the arrow goes to the
    submodule, not through the package's __init__), else pkg."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if known is not None and submodule in known else target)
                if known is None:
                    found.add(submodule)
    return {name for name in found if name == "torchscale" or name.startswith("torchscale.")}


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph[name] = {t for t in _imports(path, name, set(modules)) if t in modules and t != name}
    return graph


def unit(module: str) -> str:
    """The layer package (or top-level entry point) `module` is in: its first path component."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "torchscale"


def subunit(module: str) -> str:
    """The package or module one level inside a layer package (`rank.worker`, `contracts.errors`),
    where packages must not import each other either; an entry point is its own."""
    parts = module.split(".")
    return ".".join(parts[1:3]) if len(parts) > 2 else unit(module)


def inner_unit(module: str) -> str:
    """The package or module two levels inside a layer package (`offline.analysis.trace`),
    where packages must not import each other either; above that depth, its subunit."""
    parts = module.split(".")
    return ".".join(parts[1:4]) if len(parts) > 3 else subunit(module)


def _loops(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


GRAPH = _graph()
UNITS = {unit(m) for m in GRAPH} - {"torchscale"}


def upward_imports() -> dict[tuple[str, str], list[str]]:
    """(importing unit, imported unit) -> 'file -> module' lines, for imports up the layers."""
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for module, targets in GRAPH.items():
        for target in targets:
            a, b = unit(module), unit(target)
            if a != b and a in LAYERS and b in LAYERS and LAYERS[b] > LAYERS[a]:
                found[(a, b)].append(f"{module} -> {target}")
    return dict(found)


def package_graph(level: Callable[[str], str] = unit) -> dict[str, set[str]]:
    units: dict[str, set[str]] = defaultdict(set)
    for module, targets in GRAPH.items():
        for target in targets:
            if level(module) != level(target):
                units[level(module)].add(level(target))
    return dict(units)


def test_every_unit_has_a_layer() -> None:
    assert sorted(UNITS - set(LAYERS)) == [], "give each new package a layer (and its docstring)"
    assert sorted(set(LAYERS) - UNITS) == [], "a layer entry for a unit that no longer exists"


def test_no_import_runs_up_the_layers() -> None:
    found = upward_imports()
    new = {k: v for k, v in found.items() if k not in UPWARD_DEBT}
    assert new == {}, "imports up the layers (docs/architecture.md says where things go)"
    paid = sorted(set(UPWARD_DEBT) - set(found))
    assert paid == [], "paid debt: remove these entries from UPWARD_DEBT"


def test_no_packages_import_each_other() -> None:
    # neither the layer packages nor the packages one or two levels inside one (rank.worker,
    # offline.analysis.trace, ...)
    loops = (
        _loops(package_graph(unit))
        + _loops(package_graph(subunit))
        + _loops(package_graph(inner_unit))
    )
    assert [loop for loop in loops if loop not in PACKAGE_LOOP_DEBT] == []
    assert [loop for loop in PACKAGE_LOOP_DEBT if loop not in loops] == [], "paid: remove them"


def test_no_files_import_each_other() -> None:
    loops = _loops(GRAPH)
    assert [loop for loop in loops if loop not in FILE_LOOP_DEBT] == []
    assert [loop for loop in FILE_LOOP_DEBT if loop not in loops] == [], "paid: remove them"


# inside interfaces/, lowest first: each imports only those below it (the shared formatting
# nothing of interfaces/; the report, its model and file renderers, never the console that
# prints it; api/ is the library's front door, cli/ its flags and exit codes)
INTERFACES_FLOORS = ("formatting", "report", "console", "api", "cli")


def test_the_interfaces_import_only_down_their_floors() -> None:
    floor = {f"interfaces.{name}": i for i, name in enumerate(INTERFACES_FLOORS)}
    inside = {subunit(m) for m in GRAPH if m.startswith("torchscale.interfaces.")}
    assert sorted(inside - set(floor)) == [], "give a new package of interfaces/ its floor"
    up = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if subunit(module) in floor
        for target in targets
        if floor[subunit(module)] < floor.get(subunit(target), -1)
    )
    assert up == [], "an import up the floors of interfaces/"


@pytest.mark.parametrize("name", sorted(UNITS - {"torchscale"}))
def test_each_layer_package_says_its_layer(name: str) -> None:
    # the layer packages and the top-level entry points; inside a layer the path says it
    path = PACKAGE.joinpath(*name.split("."), "__init__.py")
    if not path.exists():
        path = PACKAGE.joinpath(*name.split(".")).with_suffix(".py")
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    layer = LAYERS[name.split(".")[0]]
    said = re.search(r"Layer (\d)", doc)
    assert said is not None, (
        f"{path}: its docstring should say 'Layer {layer} ({LAYER_NAMES[layer]})'"
    )
    assert int(said.group(1)) == layer, f"{path} says layer {said.group(1)}, the map {layer}"


def test_the_checker_sees_hidden_imports(tmp_path: Path) -> None:
    # a function-level and a TYPE_CHECKING import count like any other
    source = tmp_path / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from torchscale.interfaces.report import model\n"
        "def f():\n    import torchscale.interfaces.cli.app\n    from . import sibling\n",
        encoding="utf-8",
    )
    found = _imports(source, "torchscale.rank.worker.mod")
    assert {
        "torchscale.interfaces.report.model",
        "torchscale.interfaces.cli.app",
        "torchscale.rank.worker.sibling",
    } <= found
    assert _loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]


def test_parallel_reads_models_only_through_their_plans() -> None:
    # parallel/ knows a model by the ParallelPlan it declares (and a plug-in's ModelBundle), never
    # by its class: whatever parallel/ reaches in models/, directly or through another module
    # there, is one of these interface modules (the models package itself imports every model)
    # (seeded_init builds any model, whatever its class, so a pipeline can build its stages)
    interface = {
        "torchscale.rank.models.bundle",
        "torchscale.rank.models.parallel_plan",
        "torchscale.rank.models.seeded_init",
    }
    reached: dict[str, str] = {}
    todo = [
        (t, m)
        for m in GRAPH
        if subunit(m) == "rank.parallel"
        for t in GRAPH[m]
        if subunit(t) == "rank.models"
    ]
    while todo:
        target, via = todo.pop()
        if target not in reached:
            reached[target] = via
            todo += [(t, target) for t in GRAPH[target] if subunit(t) == "rank.models"]
    concrete = sorted(f"{via} -> {t}" for t, via in reached.items() if t not in interface)
    assert concrete == [], "parallel/ imports model code: declare it in the model's ParallelPlan"
