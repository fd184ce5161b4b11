"""The report sees one schema: the package reads the current version of each stored kind and
no other (offline/results/documents.py), so no module under torchscale/interfaces/ compares a
schema version or branches on an old result.

The checks (Python's ast and a pattern): no `schema_version` compared, whether read as an
attribute, a subscript or `.get("schema_version")`; a result's version is read only to list the
sources (`build.py` and the tables that list them), never carried in the cell rows; no branch on
a figure's words (`TEXT_FIELDS` compared, tested with `in` or `startswith`/`endswith`: what a
result's text says is no flag; a field carries what the report needs), display stays free; and
no line names an old schema or an older result (`OLD_SCHEMA`): such a line is a branch, or the
words of one, that has no place where one version is read.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "torchscale" / "interfaces"
# where a version may be read: the report's sources, and the tables that list them with the
# versions they hold (the appendix's, the baseline's)
LISTS_SOURCES = {"report/build.py", "report/sections/appendix.py", "report/sections/baseline.py"}

OLD_SCHEMA = re.compile(
    r"older (?:result|analys)|older than (?:schema|the (?:step model|diagnosis|caveat))"
    r"|before schema \d|schema \d+(?:-\d+)? or older|(?:results?|analys[ie]s) of schema \d"
    r"|schema \d+(?:-\d+)?'s|\bolder_|_older|_legacy|\(schema \d+[);]|schema \d+:",
    re.IGNORECASE,
)


# the words of a figure: shown, never branched on
TEXT_FIELDS = {"basis", "method", "reason"}
TEXT_TESTS = {"startswith", "endswith", "find", "index", "count", "__contains__", "__eq__"}
# a comparison of words the module itself wrote, not a result's: sources.py's reasons for
# skipping a folder are its own constants
OWN_WORDS = {("report/sources.py", "s.reason != NOT_AN_EXPERIMENT")}


def _sources(root: Path = PACKAGE) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".py", ".j2"))


def _trees(root: Path) -> list[tuple[str, ast.AST]]:
    return [
        (path.relative_to(root).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
        for path in _sources(root)
        if path.suffix == ".py"
    ]


def _is_version_key(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "schema_version"


def _reads_schema_version(node: ast.AST) -> bool:
    """`x.schema_version`, `schema_version`, `x["schema_version"]`, `x.get("schema_version")`."""
    if isinstance(node, ast.Attribute):
        return node.attr == "schema_version"
    if isinstance(node, ast.Name):
        return node.id == "schema_version"
    if isinstance(node, ast.Subscript):
        return _is_version_key(node.slice)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr == "get" and bool(node.args) and _is_version_key(node.args[0])
    return False


def version_comparisons(root: Path = PACKAGE) -> list[str]:
    """'path:line' of each comparison of a schema version under `root`."""
    found = []
    for name, tree in _trees(root):
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and any(
                _reads_schema_version(n) for n in [node.left, *node.comparators]
            ):
                found.append(f"{name}:{node.lineno}")
    return found


def _reads_text_field(node: ast.AST) -> bool:
    """`x.basis`, `x["basis"]`, `x.get("basis")` (and method, reason)."""
    if isinstance(node, ast.Attribute):
        return node.attr in TEXT_FIELDS
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and key.value in TEXT_FIELDS
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
        key = node.args[0]
        return (
            node.func.attr == "get" and isinstance(key, ast.Constant) and key.value in TEXT_FIELDS
        )
    return False


def _is_none_test(node: ast.Compare) -> bool:
    """`x.basis is None` and the like: whether there are words, not what they say."""
    return all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops) and all(
        isinstance(n, ast.Constant) and n.value is None for n in node.comparators
    )


def text_branches(root: Path = PACKAGE) -> list[str]:
    """'path:line' of each test of a figure's words under `root`: a comparison (==, in, <...)
    with a `TEXT_FIELDS` read on either side, or a string test (`TEXT_TESTS`) called on one."""
    found = []
    for name, tree in _trees(root):
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                if (name, ast.unparse(node)) in OWN_WORDS or _is_none_test(node):
                    continue
                hit = any(_reads_text_field(n) for n in [node.left, *node.comparators])
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                hit = node.func.attr in TEXT_TESTS and _reads_text_field(node.func.value)
            else:
                continue
            if hit:
                found.append(f"{name}:{node.lineno}")
    return sorted(set(found), key=lambda s: (s.split(":")[0], int(s.split(":")[1])))


def version_reads(root: Path = PACKAGE) -> list[str]:
    """'path:line' of each read of a schema version, or of the key, outside `LISTS_SOURCES`."""
    found = []
    for name, tree in _trees(root):
        if name in LISTS_SOURCES:
            continue
        for node in ast.walk(tree):
            if _is_version_key(node) or (
                isinstance(node, ast.Attribute) and node.attr == "schema_version"
            ):
                found.append(f"{name}:{node.lineno}")
    return sorted(set(found))


def test_no_module_under_interfaces_compares_a_schema_version() -> None:
    found = version_comparisons()
    assert not found, f"compares a schema version (one version is read): {found}"


def test_no_module_under_interfaces_branches_on_a_figures_words() -> None:
    found = text_branches()
    assert not found, f"branches on a figure's basis, method or reason (shown only): {found}"


def test_a_version_is_read_only_to_list_the_sources() -> None:
    found = version_reads()
    assert not found, f"reads a schema version outside {sorted(LISTS_SOURCES)}: {found}"


def _counts() -> dict[str, int]:
    counts = {}
    for path in _sources():
        lines = path.read_text(encoding="utf-8").splitlines()
        hits = sum(1 for line in lines if OLD_SCHEMA.search(line))
        if hits:
            counts[path.relative_to(PACKAGE).as_posix()] = hits
    return counts


def test_no_module_under_interfaces_branches_on_an_old_schema() -> None:
    counts = _counts()
    assert not counts, f"an old schema named (one version is read): {counts}"


def test_the_checks_catch_the_branches_they_are_for(tmp_path: Path) -> None:
    """Each rule finds what it is for, in a module written for the purpose, and passes a
    module that reads today's shape."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from torchscale.offline.results.documents import read_cell\n"
        "def old(row, data, result):\n"
        '    a = row["schema_version"] < 8\n'
        '    b = data.get("schema_version") <= 7\n'
        "    c = 10 > result.schema_version\n"
        "    return a or b or c\n",
        encoding="utf-8",
    )
    assert version_comparisons(tmp_path) == ["bad.py:3", "bad.py:4", "bad.py:5"]
    assert version_reads(tmp_path) == ["bad.py:3", "bad.py:4", "bad.py:5"]
    bad.write_text(
        "from torchscale.offline.results.documents import read_cell\n"
        "def new(result):\n"
        "    return result.diagnosis is not None and result.diagnosis.basis\n",
        encoding="utf-8",
    )
    assert not version_comparisons(tmp_path)
    assert not version_reads(tmp_path)


def test_the_words_check_catches_branches_and_lets_display_be(tmp_path: Path) -> None:
    """`text_branches` finds each test of a figure's words, a constant's name or its value,
    directly or through a subscript, and passes the reads that only show them."""
    bad = tmp_path / "sneaky.py"
    bad.write_text(
        'POINT = "point figures"\n'
        "def old(diagnosis, est, row):\n"
        '    if diagnosis.basis.startswith("point figures"):\n'
        '        return "thresholds"\n'
        '    if POINT in diagnosis.basis or est.method.startswith("point figure"):\n'
        '        return "x"\n'
        '    if est.reason == "no interval" or diagnosis.source == "phase timers":\n'
        '        return "y"\n'
        '    return row["basis"] != POINT or row.get("reason") in ("a", "b")\n'
        "def shown(est):\n"
        "    return est.reason is not None and est.basis is not POINT\n",
        encoding="utf-8",
    )
    assert text_branches(tmp_path) == [
        "sneaky.py:3",
        "sneaky.py:5",
        "sneaky.py:7",
        "sneaky.py:9",
        "sneaky.py:11",
    ]
    bad.write_text(
        "def new(diagnosis, est):\n"
        '    text = f"{diagnosis.basis}: {est.reason or est.method}"\n'
        "    if diagnosis.busy:\n"
        '        text += f" ({diagnosis.busy})"\n'
        "    return text if est.reason else diagnosis.basis\n",
        encoding="utf-8",
    )
    assert not text_branches(tmp_path)


def test_the_old_schema_words_are_found_where_they_are() -> None:
    """The pattern finds what it is for: a branch of the kind one read version leaves no
    place for."""
    for line in (
        "# ------------------------------------------------- older results (before schema 10) only",
        'return "no_sync window (older result)"',
        "def _older_row(ctx, row):",
        "why = verdict_words.why_not(verdict) or _legacy_why(verdict)",
        '"Results of schema 8-9: their step model read as the diagnosis"',
    ):
        assert OLD_SCHEMA.search(line), line
    assert not OLD_SCHEMA.search('"the run\'s diagnosis, decided by the phase timers"')
