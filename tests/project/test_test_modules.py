"""Every test module has a basename of its own: the test folders are not packages, so pytest
imports each module by its basename, and a second file of the same name fails the whole
collection ("import file mismatch") in whichever worker meets both."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def test_no_two_test_modules_share_a_basename() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        if not (path.parent / "__init__.py").exists():
            by_name[path.name].append(str(path.relative_to(TESTS)))
    assert len(by_name) > 100  # the walk found the suite
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert shared == {}
