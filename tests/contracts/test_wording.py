"""The one wording layer: every code is worded once, a stored finding reads by today's phrase,
and a code from a newer version is shown by its code and figures, never dropped."""

from __future__ import annotations

import re
import types
from pathlib import Path

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding

DOCS = Path(__file__).resolve().parents[2] / "docs" / "results.md"


def test_an_unknown_code_is_shown_by_its_code_and_figures() -> None:
    text = wording.say(Finding(code="future.thing", figures={"share": 0.5}))
    assert text == "future.thing (share=0.5)"


def test_a_code_worded_twice_is_refused() -> None:
    module = types.SimpleNamespace(PHRASES={"a.b": lambda f: "x"})
    try:
        wording._joined(module, module)
    except ValueError as exc:
        assert "a.b" in str(exc)
    else:
        raise AssertionError("a code worded twice was joined")


def test_every_worded_code_is_in_the_catalogue_and_every_catalogued_code_is_worded() -> None:
    section = DOCS.read_text().split("## Finding codes", 1)[1]
    documented = set(re.findall(r"^\| `([a-z0-9_.]+)` \|", section, re.MULTILINE))
    assert documented == set(wording.PHRASES)
