"""The suite's run order names files that exist: a renamed long file would silently run in its
collected place again, and the two pytest-xdist workers would end apart."""

from __future__ import annotations

from pathlib import Path

from tests.run_order import LONGEST_FIRST


def test_every_long_file_named_first_exists(repo_root: Path) -> None:
    missing = [path for path in LONGEST_FIRST if not (repo_root / path).is_file()]
    assert not missing
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
