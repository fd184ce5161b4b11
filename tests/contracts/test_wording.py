"""The one wording layer: every code is worded once, a template names each figure and how it is
spelled, a stored finding reads by today's phrase, a code from a newer version is shown by its
code and figures, never dropped, and docs/results.md's catalogue is the tables' own."""

from __future__ import annotations

import re
import string
import types
from pathlib import Path

from torchscale.contracts import wording
from torchscale.contracts.finding import Finding
from torchscale.contracts.wording import catalogue
from torchscale.contracts.wording.spell import SPECS

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


def test_the_docs_catalogue_is_made_from_the_phrase_tables() -> None:
    """docs/results.md's finding codes are the tables' own: every worded code, its module and
    its words, and no other (a reworded code needs the table written again, never by hand)."""
    text = DOCS.read_text(encoding="utf-8")
    start = text.index(catalogue.BEGIN)
    block = text[start : text.index(catalogue.END, start) + len(catalogue.END)]
    assert block == catalogue.markdown(), f"docs/results.md is stale: run `{catalogue.COMMAND}`"
    documented = set(re.findall(r"^\| `([a-z0-9_.]+)` \|", block, re.MULTILINE))
    assert documented == set(wording.PHRASES)


def test_a_template_names_its_figures_and_how_each_is_spelled() -> None:
    figures = {"share": 0.123, "gap": 0.0526, "ops": ["a", "b"], "why": {"code": "x.y"}}
    said = wording.render(
        "{share:share} ({gap:ms}; {ops:list}): {why:finding}, {share:.2f}", figures
    )
    assert said == "12.3 % (52.6 ms; a, b): x.y, 0.12"
    try:
        wording.render("{missing}", figures)
    except KeyError:
        pass
    else:
        raise AssertionError("a figure the finding lacks was rendered")


def test_every_template_spells_its_figures_by_a_known_spec() -> None:
    """A spec is a name of spell.SPECS, `finding`, or a Python format spec: a misspelt name
    (`{x:shares}`) would fail when shown, so it fails here."""
    unknown = []
    for code, phrase in wording.PHRASES.items():
        if not isinstance(phrase, str):
            continue
        for _, name, spec, _ in string.Formatter().parse(phrase):
            if name is None or not spec or spec in SPECS or spec == "finding":
                continue
            if not any(_formats(value, spec) for value in (1.5, 3, "x")):
                unknown.append(f"{code}: {{{name}:{spec}}}")
    assert unknown == []


def _formats(value: object, spec: str) -> bool:
    try:
        format(value, spec)
    except (TypeError, ValueError):
        return False
    return True


def test_a_note_of_one_rank_is_said_after_its_rank() -> None:
    note = Finding(code="trace.no_step_ranges", figures={"on_rank": 2})
    assert wording.say(note) == "rank 2: no ProfilerStep#N ranges in this trace"
