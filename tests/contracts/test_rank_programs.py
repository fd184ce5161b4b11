"""The names the host starts rank programs by are the rank side's real modules."""

from __future__ import annotations

import importlib.util

import pytest

import torchscale.rank.programs
from torchscale.contracts.rank_programs import ENTRY, PROGRAMS, entry_args


def test_the_entry_and_every_program_exist() -> None:
    assert torchscale.rank.programs.__name__ == ENTRY
    assert importlib.util.find_spec(f"{ENTRY}.__main__") is not None
    for module in PROGRAMS.values():
        assert importlib.util.find_spec(module) is not None, module


def test_entry_args() -> None:
    assert entry_args("perf", ["--spec", "s.json"]) == ["perf", "--spec", "s.json"]
    with pytest.raises(ValueError, match="unknown rank program 'nope'"):
        entry_args("nope", [])
