"""The report sees one schema: `offline/results/versions.py` and `profile_versions.py` read
every old version into today's shape, so no module under torchscale/interfaces/ compares a
schema version or branches on an old result.

Two checks. No `schema_version` comparison anywhere under interfaces/ (Python's ast). And no
line that names an old schema or an older result (`OLD_SCHEMA`): such a line is a branch, or
the words of one, that belongs in the upgrades.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "torchscale" / "interfaces"

OLD_SCHEMA = re.compile(
    r"older (?:result|analys)|older than (?:schema|the (?:step model|diagnosis|caveat))"
    r"|before schema \d|schema \d+(?:-\d+)? or older|(?:results?|analys[ie]s) of schema \d"
    r"|schema \d+(?:-\d+)?'s|\bolder_|_older|_legacy|\(schema \d+[);]|schema \d+:",
    re.IGNORECASE,
)


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".j2"))


def _names_schema_version(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "schema_version") or (
        isinstance(node, ast.Name) and node.id == "schema_version"
    )


def test_no_module_under_interfaces_compares_a_schema_version() -> None:
    found = []
    for path in _sources():
        if path.suffix != ".py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and any(
                _names_schema_version(n) for n in [node.left, *node.comparators]
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, f"compares a schema version (versions.py upgrades instead): {found}"


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
    assert not counts, f"an old schema named outside versions.py's upgrades: {counts}"


def test_the_old_schema_words_are_found_where_they_are() -> None:
    """The pattern finds what it is for: a branch of the kind the upgrades replaced."""
    for line in (
        "# ------------------------------------------------- older results (before schema 10) only",
        'return "no_sync window (older result)"',
        "def _older_row(ctx, row):",
        "why = verdict.not_named or _legacy_why(verdict)",
        '"Results of schema 8-9: their step model read as the diagnosis"',
    ):
        assert OLD_SCHEMA.search(line), line
    assert not OLD_SCHEMA.search('"the run\'s diagnosis, decided by the phase timers"')
