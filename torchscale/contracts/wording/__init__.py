"""Words made from findings at render time: the one place a stored finding (a code and its
figures, contracts/finding.py) becomes a sentence. The catalogue, `PHRASES` (code -> words),
is joined from this package's modules, one per document they word, on first use (a command
that words nothing, `--help`, imports none of them); an entry is a template
(`"{rank} arrives last at {share:share0} of its collectives"`: a figure by name, after its
colon a spell.SPECS name, `finding` (a finding stored in the figures, in its own words) or a
Python format spec), or a function of the figures where the words need logic. A code no
module words (a result from a newer torchscale) is shown by its code and figures, never
dropped.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.wording.spell import spelled

Figures = Mapping[str, Any]
Phrase = str | Callable[[Figures], str]
Phrases = dict[str, Phrase]

# a figure that, where a finding carries it, is said before its words: a note of one rank's
# trace, a warning of one run of an nccl-tests file with several
LEADS = {"on_rank": "rank {on_rank}: ", "run_line": "run at line {run_line}: "}


class _Words(string.Formatter):
    """A template's renderer: a figure by name (KeyError where the finding lacks it), spelled
    by its spec (spell.spelled) or, `finding`, said by its own code."""

    def get_value(self, key: int | str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if isinstance(key, int):
            raise KeyError(key)
        return kwargs[key]

    def format_field(self, value: Any, format_spec: str) -> str:
        if format_spec == "finding":
            return say(Finding.model_validate(value))
        return spelled(value, format_spec)


_WORDS = _Words()


def render(phrase: Phrase, figures: Figures) -> str:
    """A catalogue entry's words for these figures."""
    return _WORDS.vformat(phrase, (), figures) if isinstance(phrase, str) else phrase(figures)


def say(finding: Finding) -> str:
    """The finding in words, by today's phrase for its code."""
    phrase = _catalogue().get(finding.code)
    if phrase is None:
        figures = ", ".join(f"{k}={v}" for k, v in finding.figures.items())
        return f"{finding.code} ({figures})" if figures else finding.code
    said = render(phrase, finding.figures)
    for name, lead in LEADS.items():
        if finding.figures.get(name) is not None:
            said = render(lead, finding.figures) + said
    return said


def why(reason: Finding | None) -> str | None:
    """A null figure's reason in words, by its code."""
    if reason is None:
        return None
    from torchscale.contracts import wording

    return wording.say(reason)


def reason_of(stored: Any) -> Finding:
    """A reason stored inside a finding's figures, as the finding it is."""
    return Finding.model_validate(stored)


def _joined(*modules: Any) -> Phrases:
    phrases: Phrases = {}
    for module in modules:
        for code, phrase in module.PHRASES.items():
            if code in phrases:
                raise ValueError(f"finding code {code!r} is worded twice")
            phrases[code] = phrase
    return phrases


def _phrase_modules() -> list[Any]:
    """Every module of this package that words codes: a new document is a new module, found
    here, so adding one edits nothing shared."""
    found = pkgutil.iter_modules(__path__)
    names = [f"{__name__}.{info.name}" for info in found if info.name != "__main__"]
    modules = [importlib.import_module(name) for name in names]
    return [module for module in modules if hasattr(module, "PHRASES")]


@functools.cache
def _catalogue() -> Phrases:
    """`PHRASES`, joined once: the one dict every reader (and a test's patch) shares."""
    return _joined(*_phrase_modules())


PHRASES: Phrases  # not assigned here: `__getattr__` joins it on first use


def __getattr__(name: str) -> Any:
    if name == "PHRASES":
        return _catalogue()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
