"""Words made from findings at render time: the one place a stored finding (a code and its
figures, contracts/finding.py) becomes a sentence. Each domain keeps its phrases in its
own module (`PHRASES`, code -> function of the figures); this package joins them once, and a
code no module words (a result from a newer torchscale) is shown by its code and figures, never
dropped.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from typing import Any

from torchscale.contracts.finding import Finding

Phrase = Callable[[Mapping[str, Any]], str]


def _joined(*modules: Any) -> dict[str, Phrase]:
    phrases: dict[str, Phrase] = {}
    for module in modules:
        for code, phrase in module.PHRASES.items():
            if code in phrases:
                raise ValueError(f"finding code {code!r} is worded twice")
            phrases[code] = phrase
    return phrases


def _phrase_modules() -> list[Any]:
    """Every module of this package that words codes: a new domain is a new module, found
    here, so adding one edits nothing shared."""
    names = [f"{__name__}.{info.name}" for info in pkgutil.iter_modules(__path__)]
    modules = [importlib.import_module(name) for name in names]
    return [module for module in modules if hasattr(module, "PHRASES")]


PHRASES: dict[str, Phrase] = _joined(*_phrase_modules())


def say(finding: Finding) -> str:
    """The finding in words, by today's phrase for its code."""
    phrase = PHRASES.get(finding.code)
    if phrase is None:
        figures = ", ".join(f"{k}={v}" for k, v in finding.figures.items())
        return f"{finding.code} ({figures})" if figures else finding.code
    return phrase(finding.figures)
